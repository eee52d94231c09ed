package decode

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/klauspost/compress/gzip"
)

// TestGzipCSVBlocks: gzipped CSV and TSV of a table parsed in blocks give
// the rows and the errors (word for word) of the sequential read of the
// same file, and the rows of its uncompressed twin; a quote in any block
// reads the file sequentially.
func TestGzipCSVBlocks(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	for i := range 3_000 {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,dev-%d,%d,%d.5\n", i/60%60, i%60, i%7, i, i%100)
	}
	body := b.String() // about 100 KB: 10 blocks of 10,000 bytes
	head := "time,device_id,n,v\n"
	good := head + body
	cases := map[string]string{
		"good":                   good,
		"CRLF":                   strings.ReplaceAll(good, "\n", "\r\n"),
		"a byte order mark":      string(utf8BOM) + good,
		"no line end at the end": strings.TrimSuffix(good, "\n"),
		"header only":            head,
		"a quote late":           good + "2026-01-05T11:00:00Z,\"dev,\n9\",1,2\n" + body,
		"a quote early":          head + "2026-01-05T11:00:00Z,\"dev\",1,2\n" + body,
		"a bad float late":       good + "2026-01-05T11:00:00Z,d,1,warm\n" + body,
		"a bad integer late":     good + "2026-01-05T11:00:00Z,d,1.5,2\n" + body,
		"too many fields late":   good + "2026-01-05T11:00:00Z,d,1,2,3\n" + body,
		"too few fields late":    good + "2026-01-05T11:00:00Z,d\n" + body,
		"a blank line late":      good + "\n" + body,
		"a bare CR late":         good + "2026-01-05T11:00:00Z,d\r,1,2\n" + body,
		"no time late":           good + ",d,1,2\n" + body,
		"spaces around a number": good + "2026-01-05T11:00:00Z,d, 7 ,2\n" + body,
		"a separator hint":       "sep=,\n" + good,
		"a line too long":        good + "2026-01-05T11:00:00Z," + strings.Repeat("x", 300_000) + ",1,2\n",
		"an empty first line":    "\n" + good,
	}
	// The good file is read in blocks, one with a quote late read again.
	for name, opens := range map[string]int{"good": 1, "a quote late": 2, "a quote early": 1} {
		n := 0
		decodeHook = func(string) { n++ }
		_, err := decode(t, "gw/a.csv.gz", gz(t, cases[name]), DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 2, ChunkBytes: 10_000})
		decodeHook = nil
		if err != nil || n != opens {
			t.Errorf("%s: %d reads, %v; want %d", name, n, err, opens)
		}
	}
	ro, err := resolveOptions("gw/a.csv.gz", DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 2, ChunkBytes: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	ro.textBlocks, ro.text = true, true
	zipped := gz(t, good)
	bs, err := openText(context.Background(), ro, Source{Key: "gw/a.csv.gz", R: bytes.NewReader(zipped), Size: int64(len(zipped))}, true)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := bs.(*gzipRanges); !ok || g.csv == nil {
		t.Errorf("a gzipped CSV file of a table opened as %T, not in blocks", bs)
	}
	bs.close()

	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			for _, tsv := range []bool{false, true} {
				key, text := "gw/a.csv", data
				if tsv {
					key, text = "gw/a.tsv", strings.ReplaceAll(data, ",", "\t")
				}
				render := func(key string, file []byte, par int, opts DecodeOptions) string {
					opts.Target, opts.TimeColumn, opts.Parallelism, opts.ChunkBytes, opts.BatchRows, opts.MaxRecordBytes =
						target, "time", par, 10_000, 500, 256<<10
					d, err := decode(t, key, file, opts)
					if err != nil {
						return "error: " + strings.ReplaceAll(err.Error(), key, "KEY")
					}
					out := fmt.Sprint(rows(t, d))
					for _, r := range d.Rejected {
						out += fmt.Sprintf(" rejected row %d line %d: %s", r.Row, r.Line, r.Reason)
					}
					return out
				}
				zipped := gz(t, text)
				for _, opts := range []DecodeOptions{{}, {OnError: OnErrorSkipRows}} {
					plain := render(key, []byte(text), 1, opts)
					seq := render(key+".gz", zipped, 1, opts)
					par := render(key+".gz", zipped, 3, opts)
					if seq != par {
						t.Errorf("tsv %v %s: in blocks: %.300s\nsequential: %.300s", tsv, opts.OnError, par, seq)
					}
					if !strings.HasPrefix(plain, "error") && plain != par {
						t.Errorf("tsv %v %s: in blocks: %.300s\nuncompressed: %.300s", tsv, opts.OnError, par, plain)
					}
					if (name == "good" || name == "CRLF") && strings.HasPrefix(par, "error") {
						t.Errorf("a good file refused: %s", par)
					}
				}
			}
		})
	}
}

// TestGzipCSVBlocksPieces: a gzipped CSV file read in blocks and handed
// over in pieces, with a quote in a late block, starts over sequentially
// from piece 0 and ends with the rows of the sequential read.
func TestGzipCSVBlocksPieces(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	b.WriteString("time,device_id,v\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,dev-%d,%d.5\n", i/60%60, i%60, i%7, i%100)
		if i == 15_000 {
			b.WriteString("2026-01-05T11:00:00Z,\"dev\n7\",1\n")
		}
	}
	data := gz(t, b.String())
	collect := func(par int) string {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var pieces []string
		starts := 0
		err := DecodeEach(context.Background(), Source{Key: "gw/a.csv.gz", R: bytes.NewReader(data), Size: int64(len(data))},
			DecodeOptions{Target: target, TimeColumn: "time", Parallelism: par, ChunkBytes: 20_000, PieceBytes: 64 << 10, Mem: mem},
			func(d *Decoded) error {
				defer d.Release()
				if d.Piece == 0 {
					pieces, starts = nil, starts+1
				}
				pieces = append(pieces, fmt.Sprint(rows(t, d)))
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if par > 1 && (starts != 2 || len(pieces) < 2) {
			t.Errorf("in blocks: %d starts, %d pieces; want a start over and several pieces", starts, len(pieces))
		}
		return strings.NewReplacer("] [", " ", "[", "", "]", "").Replace(strings.Join(pieces, " "))
	}
	if seq, par := collect(1), collect(2); seq != par {
		t.Errorf("rows in blocks differ from the sequential read's")
	}
}

// TestGzipLongHeaderName: a gzip file whose header stores an original file
// name longer than the gzip reader reads (511 bytes) is refused naming
// that, not as a broken header; a name of 511 bytes loads.
func TestGzipLongHeaderName(t *testing.T) {
	body := "time,device_id,v\n2026-01-05T10:00:00Z,a,1\n"
	for _, n := range []int{511, 512, 624, 5000} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Name = strings.Repeat("n", n)
		if _, err := zw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		_, err := Decode(context.Background(), Source{Key: "g.csv.gz", R: bytes.NewReader(b), Size: int64(len(b))}, DecodeOptions{})
		want := fmt.Sprintf("its gzip header stores a file name of %d bytes, longer than the 511 the gzip reader reads", n)
		if n == 5000 {
			want = "its gzip header stores a file name of more than 4086 bytes, longer than the 511"
		}
		switch {
		case n == 511 && err != nil:
			t.Errorf("a name of 511 bytes: %v", err)
		case n > 511 && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("a name of %d bytes: %v, want %q", n, err, want)
		}
	}
}
