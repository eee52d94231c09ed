package decode

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestOpenEnd: the ends a writer that has not finished leaves (no line
// end, a gzip stream without its end, no Parquet footer, nothing yet) are
// open; complete files, corrupt ones and other types are not.
func TestOpenEnd(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	pq := writeParquet(t, rec)

	// A gzip writer that flushed but was not closed: the rows so far,
	// without the stream's end.
	var flushed bytes.Buffer
	zw := gzip.NewWriter(&flushed)
	if _, err := zw.Write([]byte("time,v\n2026-01-05T10:00:00Z,1\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Flush(); err != nil {
		t.Fatal(err)
	}
	whole := gz(t, "time,v\n2026-01-05T10:00:00Z,3.955\n")
	badSum := bytes.Clone(whole)
	badSum[len(badSum)-5] ^= 0xff // the CRC-32 of the trailer

	for _, tc := range []struct {
		name, key string
		data      []byte
		open      string
	}{
		{"complete csv", "gw/a.csv", []byte("time,v\n2026-01-05T10:00:00Z,3.955\n"), ""},
		{"csv cut in a value", "gw/a.csv", []byte("time,v\n2026-01-05T10:00:00Z,3.9"), "its last line has no line end"},
		{"csv cut in a line end", "gw/a.csv", []byte("time,v\r\n2026-01-05T10:00:00Z,3.955\r"), "its last line has no line end"},
		{"tsv cut", "gw/a.tsv", []byte("time\tv\n2026-01-05T10:00:00Z\t3"), "its last line has no line end"},
		{"csv paused in a quoted value", "gw/a.csv", []byte("time,id,note\n2026-01-05T10:01:00Z,q1,plain\n2026-01-05T10:02:00Z,q2,\"first line\n"),
			"it ends inside a quoted value (the quote opened on line 3 is not closed)"},
		{"csv with a complete quoted value of two lines", "gw/a.csv", []byte("time,id,note\n2026-01-05T10:02:00Z,q2,\"first line\nsecond line\"\n"), ""},
		{"csv with quotes in a quoted value", "gw/a.csv", []byte("time,note\n2026-01-05T10:02:00Z,\"a \"\"b\"\" c\"\n"), ""},
		{"csv paused after a quote in a quoted value", "gw/a.csv", []byte("time,note\n2026-01-05T10:02:00Z,\"a \"\"b\n"),
			"it ends inside a quoted value (the quote opened on line 2 is not closed)"},
		{"csv paused after a CRLF in a quoted value", "gw/a.csv", []byte("time,note\r\n2026-01-05T10:02:00Z,\"a\r\n"),
			"it ends inside a quoted value (the quote opened on line 2 is not closed)"},
		{"semicolons, paused in a quoted value", "gw/a.csv", []byte("sep=;\ntime;note\n2026-01-05T10:02:00Z;\"a\n"),
			"it ends inside a quoted value (the quote opened on line 3 is not closed)"},
		{"tsv paused in a quoted value", "gw/a.tsv", []byte("time\tnote\n2026-01-05T10:02:00Z\t\"a\n"),
			"it ends inside a quoted value (the quote opened on line 2 is not closed)"},
		{"quoted values across the read buffer, closed", "gw/a.csv", quotedLines(openEndBuffer/20, false), ""},
		{"quoted values across the read buffer, the last one open", "gw/a.csv", quotedLines(openEndBuffer/20, true),
			fmt.Sprintf("it ends inside a quoted value (the quote opened on line %d is not closed)", 2*(openEndBuffer/20)+2)},
		{"empty", "gw/a.csv", nil, "the file is empty"},
		{"complete gzip, last line without its end", "gw/a.csv.gz", gz(t, "time,v\n2026-01-05T10:00:00Z,3.955"),
			"its decompressed text's last line has no line end"},
		// A logger that appends a gzip member per chunk: a complete gzip
		// stream after every chunk, its text open or not.
		{"gzip members, paused mid-line", "gw/a.csv.gz", slices.Concat(gz(t, "time,v\n2026-01-05T10:00:00Z,1\n"), gz(t, "2026-01-05T10:01:00Z,103048.123456")),
			"its decompressed text's last line has no line end"},
		{"gzip members, complete", "gw/a.csv.gz", slices.Concat(gz(t, "time,v\n2026-01-05T10:00:00Z,1\n"), gz(t, "2026-01-05T10:01:00Z,103048.1234567\n")), ""},
		{"gzip members, paused in a quoted value", "gw/a.csv.gz", slices.Concat(gz(t, "time,note\n2026-01-05T10:00:00Z,x\n"), gz(t, "2026-01-05T10:01:00Z,\"a\n")),
			"it ends inside a quoted value (the quote opened on line 3 is not closed)"},
		{"gzip tsv paused mid-line", "gw/a.tsv.gz", gz(t, "time\tv\n2026-01-05T10:00:00Z\t1"), "its decompressed text's last line has no line end"},
		{"gzip of no text", "gw/a.csv.gz", gz(t, ""), "its decompressed text is empty"},
		{"gzip quoted values across the read buffer, the last one open", "gw/a.csv.gz", gz(t, string(quotedLines(openEndBuffer/20, true))),
			fmt.Sprintf("it ends inside a quoted value (the quote opened on line %d is not closed)", 2*(openEndBuffer/20)+2)},
		{"gzip flushed, not closed", "gw/a.csv.gz", flushed.Bytes(), "the gzip stream stops before its end"},
		{"gzip cut", "gw/a.csv.gz", whole[:len(whole)-6], "the gzip stream stops before its end"},
		{"gzip magic only", "gw/a.csv.gz", whole[:2], "the gzip stream stops before its end"},
		{"gzip with a wrong checksum", "gw/a.csv.gz", badSum, ""},
		{"gzip named .csv", "gw/a.csv", whole[:len(whole)-6], "the gzip stream stops before its end"},
		{"complete parquet", "gw/a.parquet", pq, ""},
		{"parquet without footer", "gw/a.parquet", pq[:len(pq)-8], "the Parquet footer is missing (the file does not end in PAR1)"},
		{"parquet magic only", "gw/a.parquet", pq[:4], "the Parquet footer is missing (the file does not end in PAR1)"},
		{"another type", "gw/a.dat", []byte(`{"v": 1`), ""},
		{"json lines, paused mid-line", "gw/a.jsonl", []byte("{\"v\": 1}\n{\"v\": 2"), "its last line has no line end"},
		{"json lines, complete", "gw/a.jsonl", []byte("{\"v\": 1}\n{\"v\": \"a\\\"b\"}\n"), ""},
		{"json array, open", "gw/a.json", []byte("[\n{\"v\": 1},\n{\"v\": 2}"), "its top-level array is not closed (no ] at its end)"},
		{"json array, complete", "gw/a.json", []byte("[\n{\"v\": 1}\n]"), ""},
		{"gzip json lines, paused", "gw/a.jsonl.gz", gz(t, "{\"v\": 1}\n")[:10], "the gzip stream stops before its end"},
		{"gzip json lines, a member paused mid-line", "gw/a.jsonl.gz", gz(t, "{\"v\": 1}\n{\"v\""), "its decompressed text's last line has no line end"},
		{"gzip json lines, complete", "gw/a.jsonl.gz", gz(t, "{\"v\": \"a\\\"\"}\n"), ""},
		{"gzip json array, complete", "gw/a.json.gz", gz(t, "[{\"v\": 1}]"), ""},
		{"no extension, paused mid-line", "gw/reading-0001", []byte("{\"v\": 1}\n{\"v\": 2"), "its last line has no line end"},
		{"no extension, complete", "gw/reading-0001", []byte("{\"v\": 1}\n"), ""},
		{"no extension, gzip paused", "gw/reading-0001", gz(t, "{\"v\": 1}\n")[:10], "the gzip stream stops before its end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenEnd(tc.key, bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil || got != tc.open {
				t.Fatalf("OpenEnd = %q, %v; want %q", got, err, tc.open)
			}
		})
	}
}

// quotedLines is a CSV file of n rows, each a quoted value spanning two
// lines, then, when open, a row whose quoted value is not closed yet.
func quotedLines(n int, open bool) []byte {
	var b bytes.Buffer
	b.WriteString("time,note\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "2026-01-05T10:00:00Z,\"n%d\n\"\"x\"\"\"\n", i)
	}
	if open {
		b.WriteString("2026-01-05T10:00:00Z,\"paused\n")
	}
	return b.Bytes()
}

// BenchmarkOpenEnd measures the open-end check of a complete 64 MiB CSV
// file (read from memory): without quotes (the search finds none), and
// with a quoted value in every row.
func BenchmarkOpenEnd(b *testing.B) {
	for _, quoted := range []bool{false, true} {
		var text bytes.Buffer
		text.WriteString("time,device_id,note,v\n")
		for i := 0; text.Len() < 64<<20; i++ {
			note := "ok"
			if quoted {
				note = `"ok, fine"`
			}
			fmt.Fprintf(&text, "2026-01-05T10:00:%02dZ,gw-%d,%s,%d.5\n", i%60, i%100, note, i)
		}
		data := text.Bytes()
		b.Run(fmt.Sprintf("quoted=%v", quoted), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if open, err := OpenEnd("gw/a.csv", bytes.NewReader(data), int64(len(data))); err != nil || open != "" {
					b.Fatalf("OpenEnd = %q, %v", open, err)
				}
			}
		})
	}
}

// TestOpenEndAtItsEdges: the edges alone find a last line without its end,
// not a quoted value left open (a full scan) nor a gzip stream's end.
func TestOpenEndAtItsEdges(t *testing.T) {
	quote := "time,note\n2026-01-05T10:00:00Z,\"left open\n"
	for _, tc := range []struct {
		key, body   string
		whole, edge bool // open by OpenEnd, by OpenEndAtItsEdges
	}{
		{"a.csv", "time,v\n2026-01-05T10:00:00Z,4", true, true},
		{"a.csv", quote, true, false},
		{"a.csv", "time,v\n2026-01-05T10:00:00Z,4\n", false, false},
	} {
		r := strings.NewReader(tc.body)
		whole, err := OpenEnd(tc.key, r, int64(len(tc.body)))
		if err != nil || (whole != "") != tc.whole {
			t.Errorf("%q: OpenEnd %q, %v", tc.body, whole, err)
		}
		edge, err := OpenEndAtItsEdges(tc.key, r, int64(len(tc.body)))
		if err != nil || (edge != "") != tc.edge {
			t.Errorf("%q: OpenEndAtItsEdges %q, %v", tc.body, edge, err)
		}
	}
}
