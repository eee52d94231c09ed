package decode

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// lines builds a CSV body of n rows from a row template: %d is the row
// index, used for the second and the value.
func genRows(n int, row func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(row(i))
	}
	return b.String()
}

func okRow(i int) string {
	return fmt.Sprintf("2026-01-05T10:%02d:%02dZ,d%d,%d.5,%d,true,%d\n", i/60%60, i%60, i%3, i, i, i%100)
}

const fullHeader = "time,device,temp,count,ok,level\n"

// TestChunkedDecodeMatchesSequential decodes each file sequentially and in
// chunks of several sizes on several goroutines: the rows, and for bad files
// the whole error (row, column, value, line in the message), must be equal.
func TestChunkedDecodeMatchesSequential(t *testing.T) {
	target := tableTarget(t)
	many := genRows(300, okRow)
	tests := []struct {
		name    string
		data    string
		infer   bool // decode without a target (schema inferred)
		split   bool // planTextChunks splits it (false: falls back to sequential)
		wantErr string
	}{
		{name: "plain", data: fullHeader + many, split: true},
		{name: "inferred schema", data: fullHeader + many, infer: true, split: true},
		{name: "crlf line ends", data: strings.ReplaceAll(fullHeader+many, "\n", "\r\n"), split: true},
		{name: "byte order mark", data: "\ufeff" + fullHeader + many, split: true},
		{name: "no final newline", data: fullHeader + strings.TrimSuffix(many, "\n"), split: true},
		{name: "blank lines", data: fullHeader + "\n" + genRows(200, func(i int) string {
			if i%7 == 0 {
				return "\n\r\n" + okRow(i)
			}
			return okRow(i)
		}), split: true},
		{name: "empty cells", data: fullHeader + genRows(200, func(i int) string {
			return fmt.Sprintf("2026-01-05T10:00:%02dZ,d1,,,,\n", i%60)
		}), split: true},
		{name: "tsv", data: strings.ReplaceAll(fullHeader+many, ",", "\t"), split: true},
		{
			name: "quoted newlines fall back", split: false,
			data: fullHeader + genRows(100, okRow) + "2026-01-05T11:00:00Z,\"d\n1\",1,1,true,1\n" + genRows(100, okRow),
		},
		{
			name: "quoted newlines with an error after them", split: false,
			data:    fullHeader + genRows(50, okRow) + "2026-01-05T11:00:00Z,\"d\n1\",1,1,true,1\n" + genRows(50, okRow) + "2026-01-05T11:00:00Z,d1,x,1,true,1\n",
			wantErr: `row 102 (line 104), column "temp": cannot parse "x" as double`,
		},
		{
			name: "bad value late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,1,1.5,true,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252), column "count": cannot parse "1.5" as long`,
		},
		{
			name: "ragged row late after blank lines", split: true,
			data:    fullHeader + "\n\n" + genRows(180, okRow) + "\n2026-01-05T11:00:00Z,d1\n" + genRows(40, okRow),
			wantErr: "gw/c.csv: row 181 (line 185): wrong number of fields: the line has 2, the header has 6",
		},
		{
			name: "ragged row first", split: true,
			data:    fullHeader + "2026-01-05T11:00:00Z,d1,1,1,true,1,extra\n" + many,
			wantErr: "gw/c.csv: row 1 (line 2): wrong number of fields: the line has 7, the header has 6",
		},
		{
			name: "two errors, the first in the file wins", split: true,
			data:    fullHeader + genRows(20, okRow) + ",d1,1,1,true,1\n" + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1\n",
			wantErr: `gw/c.csv: row 21 (line 22), column "time": null in required column`,
		},
		{
			name: "numbers with spaces", split: true,
			data: fullHeader + genRows(200, func(i int) string {
				if i%50 == 49 {
					return fmt.Sprintf("2026-01-05T10:00:%02dZ,d1, %d.25 , %d ,true, 7\n", i%60, i, i)
				}
				return okRow(i)
			}),
		},
		{
			name: "int overflow late", split: true,
			data:    fullHeader + genRows(260, okRow) + "2026-01-05T11:00:00Z,d1,1,1,true,3000000000\n" + genRows(10, okRow),
			wantErr: `gw/c.csv: row 261 (line 262), column "level": cannot parse "3000000000" as int (out of range)`,
		},
		{
			name: "number words", split: true,
			data: fullHeader + genRows(200, func(i int) string {
				return fmt.Sprintf("2026-01-05T10:00:%02dZ,d1,%s,%d,true,1\n", i%60, []string{"NaN", "inf", "-Infinity", " 1.5 ", ".5"}[i%5], i)
			}),
		},
		{
			name: "hexadecimal float late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,0x1p3,1,true,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252), column "temp": cannot parse "0x1p3" as double (hexadecimal notation`,
		},
		{
			name: "digit separator late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,1_000.5,1,true,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252), column "temp": cannot parse "1_000.5" as double (digit separators`,
		},
		{
			name: "underflow late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,1e-400,1,true,1\n" + genRows(40, okRow),
			wantErr: `column "temp": cannot parse "1e-400" as double (too small for double: it would be stored as 0)`,
		},
		{
			name: "inexact whole number late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,9007199254740993,1,true,1\n" + genRows(40, okRow),
			wantErr: `column "temp": cannot parse "9007199254740993" as double (it would be stored rounded`,
		},
		{
			name: "invalid UTF-8 late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,Z\xfcrich,1,1,true,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252), column "device": value "Z\xfcrich" is not valid UTF-8: the byte FC at byte offset 1 starts no UTF-8 character (in Latin-1 and Windows-1252 it is "ü"`,
		},
		{
			name: "unnamed empty trailing column", split: true,
			data: strings.ReplaceAll(fullHeader+many, "\n", ",\n"),
		},
		{
			name: "unnamed trailing column with a value late", split: true,
			data:    strings.ReplaceAll(fullHeader+genRows(250, okRow), "\n", ",\n") + "2026-01-05T11:00:00Z,d1,1,1,true,1,x\n",
			wantErr: `gw/c.csv: row 251 (line 252): column 7 has no name in the header but holds the value "x"`,
		},
		{
			name: "crlf line ends and blank lines", split: true,
			data: strings.ReplaceAll(fullHeader+genRows(150, okRow)+"\n\n"+genRows(150, okRow), "\n", "\r\n"),
		},
		{
			name: "bare carriage return late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d\r1,1,1,true,1\n" + genRows(40, okRow),
			wantErr: "carriage return",
		},
		{
			name: "CR CR LF late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,1,1,true,1\r\r\n" + genRows(40, okRow),
			wantErr: "CR CR LF",
		},
		{
			name: "NUL byte late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d\x001,1,1,true,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252), column "device": value "d\x001" holds a NUL byte`,
		},
		{
			name: "byte order mark late", split: true,
			data: fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,\ufeffd1,1,1,true,1\n" + genRows(40, okRow),
		},
		{
			name: "ragged rows short and long late", split: true,
			data:    fullHeader + genRows(250, okRow) + "2026-01-05T11:00:00Z,d1,1,1,true,1,1\n" + genRows(40, okRow),
			wantErr: `gw/c.csv: row 251 (line 252): wrong number of fields: the line has 7, the header has 6`,
		},
		{
			name: "bad time late", split: true,
			data:    fullHeader + genRows(290, okRow) + "yesterday,d1,1,1,true,1\n",
			wantErr: `gw/c.csv: row 291 (line 292), column "time"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			key := "gw/c.csv"
			if strings.Contains(tc.name, "tsv") {
				key = "gw/c.tsv"
			}
			opts := DecodeOptions{Target: target, TimeColumn: "time", BatchRows: 7}
			if tc.infer {
				opts.Target = nil
			}
			seqOpts := opts
			seqOpts.Parallelism = 1
			want, wantErr := decode(t, key, data, seqOpts)
			if tc.wantErr != "" {
				if wantErr == nil || !strings.Contains(wantErr.Error(), tc.wantErr) {
					t.Fatalf("sequential error = %v, want %q", wantErr, tc.wantErr)
				}
			} else if wantErr != nil {
				t.Fatalf("sequential decode: %v", wantErr)
			}
			for _, chunk := range []int64{1, 50, 333, 4096} {
				_, chunks, err := planTextChunks(bytes.NewReader(data), int64(len(data)), chunk, 2)
				if err != nil {
					t.Fatal(err)
				}
				if split := chunks != nil; split != tc.split && chunk < 4096 {
					t.Fatalf("chunk %d: split = %v, want %v", chunk, split, tc.split)
				}
				for _, workers := range []int{2, 5} {
					popts := opts
					popts.Parallelism, popts.ChunkBytes = workers, chunk
					got, gotErr := decode(t, key, data, popts)
					if wantErr != nil {
						if gotErr == nil || gotErr.Error() != wantErr.Error() || !reflect.DeepEqual(mustFileError(t, gotErr), mustFileError(t, wantErr)) {
							t.Fatalf("chunk %d, %d workers: error %v, want %v", chunk, workers, gotErr, wantErr)
						}
						continue
					}
					if gotErr != nil {
						t.Fatalf("chunk %d, %d workers: %v", chunk, workers, gotErr)
					}
					if !got.Schema.Equal(want.Schema) || got.TimeColumn != want.TimeColumn {
						t.Fatalf("chunk %d, %d workers: schema %s / %s, want %s / %s", chunk, workers, got.Schema, got.TimeColumn, want.Schema, want.TimeColumn)
					}
					if g, w := rows(t, got), rows(t, want); !reflect.DeepEqual(g, w) {
						t.Fatalf("chunk %d, %d workers: %d rows differ from the sequential %d", chunk, workers, len(g), len(w))
					}
					for _, r := range got.Records {
						if r.NumRows() > 7 {
							t.Fatalf("batch of %d rows, BatchRows is 7", r.NumRows())
						}
					}
				}
			}
		})
	}
}

// TestPlanTextChunks checks that every chunk starts right after a '\n' and
// knows how many lines come before it, and that the chunks cover the data.
func TestPlanTextChunks(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		chunkBytes int64
		wantHeader string // "" = not split
	}{
		{name: "split", data: fullHeader + genRows(100, okRow), chunkBytes: 100, wantHeader: fullHeader},
		{name: "every line", data: "a,b\r\n1,2\r\n\r\n3,4\r\n5,6", chunkBytes: 1, wantHeader: "a,b\r\n"},
		{name: "bom", data: "\ufeffa,b\n1,2\n3,4\n", chunkBytes: 1, wantHeader: "a,b\n"},
		{name: "one chunk", data: "a,b\n1,2\n3,4\n", chunkBytes: 1 << 20},
		{name: "quote", data: "a,b\n1,2\n3,\"4\"\n", chunkBytes: 1},
		{name: "empty first line", data: "\na,b\n1,2\n3,4\n", chunkBytes: 1},
		{name: "header only", data: "a,b\n", chunkBytes: 1},
		{name: "no newline", data: "a,b", chunkBytes: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			header, chunks, err := planTextChunks(bytes.NewReader(data), int64(len(data)), tc.chunkBytes, 3)
			if err != nil {
				t.Fatal(err)
			}
			if string(header) != tc.wantHeader {
				t.Fatalf("header %q, want %q", header, tc.wantHeader)
			}
			if tc.wantHeader == "" {
				if chunks != nil {
					t.Fatalf("split into %d chunks, want none", len(chunks))
				}
				return
			}
			if len(chunks) < 2 {
				t.Fatalf("%d chunks", len(chunks))
			}
			end := int64(bytes.IndexByte(data, '\n') + 1)
			for i, c := range chunks {
				if c.off != end || c.end <= c.off || data[c.off-1] != '\n' {
					t.Fatalf("chunk %d = %+v, previous ended at %d", i, c, end)
				}
				if want := int64(bytes.Count(data[:c.off], []byte{'\n'})); c.lines != want {
					t.Fatalf("chunk %d: %d lines before, want %d", i, c.lines, want)
				}
				end = c.end
			}
			if end != int64(len(data)) {
				t.Fatalf("chunks end at %d of %d", end, len(data))
			}
		})
	}
}

// TestCompact checks that only columns with much unused buffer capacity
// are copied, that values are kept, and that no memory leaks.
func TestCompact(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "tight", Type: arrow.PrimitiveTypes.Int64},
		{Name: "loose", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(1).(*array.StringBuilder).ReserveData(1 << 16)
	for i := range 64 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
		}
	}
	rec := b.NewRecordBatch()
	want := flatValues(rec)
	tight := rec.Column(0)
	out, err := compact(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.Column(0) != tight {
		t.Errorf("the tight column was copied")
	}
	for _, buf := range out.Column(1).Data().Buffers() {
		if buf != nil && cap(buf.Buf())-buf.Len() > 64 {
			t.Errorf("buffer keeps %d of %d bytes unused", cap(buf.Buf())-buf.Len(), cap(buf.Buf()))
		}
	}
	if got := flatValues(out); !reflect.DeepEqual(got, want) {
		t.Errorf("values %v, want %v", got, want)
	}
	again, err := compact(out, mem) // nothing to do: the same batch back
	if err != nil || again != out {
		t.Fatalf("compact of a compact batch: %v, same = %v", err, again == out)
	}
}

func flatValues(rec arrow.RecordBatch) []string {
	var out []string
	for _, c := range rec.Columns() {
		for i := range c.Len() {
			out = append(out, c.ValueStr(i))
		}
	}
	return out
}

// TestChunkedDecodeRandomFiles compares chunked and sequential decoding on
// random unquoted files with every kind of line end, blank lines, empty
// cells, spaces and bad values: the rows or the whole error must be equal.
func TestChunkedDecodeRandomFiles(t *testing.T) {
	target := tableTarget(t)
	rng := rand.New(rand.NewPCG(7, 8))
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	for n := range 150 {
		var b strings.Builder
		b.WriteString(fullHeader)
		lines := 20 + rng.IntN(120)
		for i := range lines {
			if rng.IntN(15) == 0 {
				b.WriteString(pick("\n", "\r\n"))
			}
			fields := []string{
				fmt.Sprintf("2026-01-05T10:%02d:%02dZ", i/60%60, i%60),
				pick("d1", "d2", "dev 3"),
				pick("1.5", "-2", "21.25", "", "1e3"),
				pick("1", "42", "-7", ""),
				pick("true", "false", "1", ""),
				pick("3", "0", "", "-100"),
			}
			if rng.IntN(40) == 0 { // a rare bad or unusual value
				fields[rng.IntN(len(fields))] = pick(" 2.5", "x", "3000000000", "yes", "1.5", "", " 7 ", "2026-13-01T00:00:00Z")
			}
			if rng.IntN(80) == 0 { // a rare ragged line
				fields = fields[:rng.IntN(len(fields))]
			}
			b.WriteString(strings.Join(fields, ","))
			if i < lines-1 || rng.IntN(2) == 0 {
				b.WriteString(pick("\n", "\n", "\r\n"))
			}
		}
		data := []byte(b.String())
		opts := DecodeOptions{Target: target, TimeColumn: "time", BatchRows: 1 + rng.IntN(40), Parallelism: 1}
		want, wantErr := decode(t, "gw/r.csv", data, opts)
		opts.Parallelism, opts.ChunkBytes = 2+rng.IntN(2), int64(1+rng.IntN(300))
		got, gotErr := decode(t, "gw/r.csv", data, opts)
		switch {
		case wantErr != nil || gotErr != nil:
			if wantErr == nil || gotErr == nil || gotErr.Error() != wantErr.Error() || !reflect.DeepEqual(mustFileError(t, gotErr), mustFileError(t, wantErr)) {
				t.Fatalf("file %d (chunk %d): error %v, sequential %v", n, opts.ChunkBytes, gotErr, wantErr)
			}
		case !reflect.DeepEqual(rows(t, got), rows(t, want)):
			t.Fatalf("file %d (chunk %d): rows differ from the sequential decode", n, opts.ChunkBytes)
		}
	}
}
