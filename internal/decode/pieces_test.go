package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// piecesCSV is a gateway file of n rows in tableTarget's columns.
func piecesCSV(n int, row func(i int) string) string {
	var b strings.Builder
	b.WriteString("time,device,temp,count,ok,level\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if row != nil {
			if s := row(i); s != "" {
				b.WriteString(s)
				continue
			}
		}
		fmt.Fprintf(&b, "%s,dev-%d,%d.5,%d,%t,%d\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%7, i%40, i, i%3 == 0, i%100)
	}
	return b.String()
}

// decodeInPieces runs DecodeEach with a checked allocator and returns the
// rows of the pieces of its last pass, the schema, how many pieces it
// handed over in all and whether it started over.
func decodeInPieces(t *testing.T, key string, data []byte, opts DecodeOptions) (got [][]string, sc *arrow.Schema, handed int, restarted bool, err error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Mem = mem
	next := 0
	err = DecodeEach(context.Background(), Source{Key: key, R: bytes.NewReader(data), Size: int64(len(data))}, opts, func(d *Decoded) error {
		defer d.Release()
		handed++
		if d.Piece == 0 && next > 0 {
			restarted, got = true, nil
		} else if d.Piece != next {
			t.Fatalf("piece %d after piece %d", d.Piece, next-1)
		}
		next = d.Piece + 1
		if sc != nil && !restarted && !d.Schema.Equal(sc) {
			t.Fatalf("piece %d has another schema", d.Piece)
		}
		sc = d.Schema
		got = append(got, rows(t, d)...)
		return nil
	})
	return got, sc, handed, restarted, err
}

func wholeRows(t *testing.T, key string, data []byte, opts DecodeOptions) ([][]string, *arrow.Schema) {
	t.Helper()
	d, err := decode(t, key, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rows(t, d), d.Schema
}

// oneRowGroup writes the decoded file as Parquet with all its rows in one
// row group, dictionaries off and small pages, as a large export would.
func oneRowGroup(t *testing.T, d *Decoded) []byte {
	t.Helper()
	tbl := array.NewTableFromRecords(d.Schema, d.Records)
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(16<<10))
	if err := pqarrow.WriteTable(tbl, &buf, tbl.NumRows(), props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeEachPiecesAreTheFile: a file decoded in pieces gives the rows,
// values and schema of the whole decode, in order, in more than one piece,
// for every kind of input, into a table's schema and inferring one.
func TestDecodeEachPiecesAreTheFile(t *testing.T) {
	text := piecesCSV(3000, nil)
	whole, err := decode(t, "a.csv", []byte(text), DecodeOptions{Target: tableTarget(t), TimeColumn: "time", BatchRows: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	pq := oneRowGroup(t, whole)
	inputs := []struct {
		name, key string
		data      []byte
		opts      DecodeOptions
	}{
		{"csv", "a.csv", []byte(text), DecodeOptions{Parallelism: 1}},
		{"csv in parallel ranges", "a.csv", []byte(text), DecodeOptions{Parallelism: 2, ChunkBytes: 4 << 10}},
		{"csv.gz", "a.csv.gz", gz(t, text), DecodeOptions{}},
		{"parquet of one row group", "a.parquet", pq, DecodeOptions{}},
	}
	for _, in := range inputs {
		for _, into := range []bool{true, false} {
			name := in.name + map[bool]string{true: " into the table", false: " inferring"}[into]
			t.Run(name, func(t *testing.T) {
				opts := in.opts
				opts.BatchRows = 100
				if into {
					opts.Target, opts.TimeColumn = tableTarget(t), "time"
				}
				want, wantSc := wholeRows(t, in.key, in.data, opts)
				opts.PieceBytes = 16 << 10
				got, sc, handed, restarted, err := decodeInPieces(t, in.key, in.data, opts)
				if err != nil {
					t.Fatal(err)
				}
				if restarted || handed < 4 {
					t.Fatalf("%d pieces (restarted %v), want several of one pass", handed, restarted)
				}
				if !sc.Equal(wantSc) {
					t.Fatalf("schema %s, want %s", sc, wantSc)
				}
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("pieces hold %d rows that differ from the %d of the whole file", len(got), len(want))
				}
			})
		}
	}
}

// TestDecodeEachInfersFromEveryRow: without a table, the schema comes from
// every row even when they do not fit one piece: a number column whose
// last value has a fraction is a double, and the time column is the first
// candidate whose every value is a time.
func TestDecodeEachInfersFromEveryRow(t *testing.T) {
	const n = 2000
	var b strings.Builder
	b.WriteString("time,timestamp,v\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range n {
		ts := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		tm, v := ts, fmt.Sprint(i)
		if i == n-1 {
			tm, v = "later", "1.5"
		}
		fmt.Fprintf(&b, "%s,%s,%s\n", tm, ts, v)
	}
	data := []byte(b.String())
	want, wantSc := wholeRows(t, "a.csv", data, DecodeOptions{})
	got, sc, handed, _, err := decodeInPieces(t, "a.csv", data, DecodeOptions{PieceBytes: 8 << 10, BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if handed < 2 {
		t.Fatalf("%d pieces, want several", handed)
	}
	if f, _ := sc.FieldsByName("v"); f[0].Type.ID() != arrow.FLOAT64 {
		t.Errorf("v is %s, want double (its last value is 1.5)", f[0].Type)
	}
	if f := sc.Field(1); f.Name != "timestamp" || f.Nullable {
		t.Errorf("time column %+v, want timestamp (the values of time end with a word)", f)
	}
	if !sc.Equal(wantSc) || !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pieces (%s) differ from the whole file (%s)", sc, wantSc)
	}
}

// TestDecodeEachStartsOverForALateWidening: a value too large for an int
// column in the last piece widens it (Evolve widen): the decode starts
// over, handing piece 0 again, and the pieces of that pass are the whole
// decode.
func TestDecodeEachStartsOverForALateWidening(t *testing.T) {
	text := piecesCSV(2000, func(i int) string {
		if i == 1990 {
			return "2026-01-05T01:00:00Z,dev-1,1.5,1,true,3000000000\n"
		}
		return ""
	})
	opts := DecodeOptions{Target: tableTarget(t), TimeColumn: "time", Evolve: EvolveWiden, BatchRows: 100}
	want, wantSc := wholeRows(t, "a.csv", []byte(text), opts)
	if f, _ := wantSc.FieldsByName("level"); f[0].Type.ID() != arrow.INT64 {
		t.Fatalf("whole decode: level is %s, want long", f[0].Type)
	}
	opts.PieceBytes = 16 << 10
	got, sc, _, restarted, err := decodeInPieces(t, "a.csv", []byte(text), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !restarted {
		t.Fatal("the decode did not start over")
	}
	if !sc.Equal(wantSc) || !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("pieces (%s) differ from the whole file (%s)", sc, wantSc)
	}
}

// TestDecodeEachErrorsNameTheFileRow: an error in a later piece names the
// row and line of the file, as the whole decode does.
func TestDecodeEachErrorsNameTheFileRow(t *testing.T) {
	text := piecesCSV(3000, func(i int) string {
		if i == 2500 {
			return "2026-01-05T01:00:00Z,dev-1,warm,1,true,1\n"
		}
		return ""
	})
	for _, in := range []struct{ key string }{{"a.csv"}, {"a.csv.gz"}} {
		t.Run(in.key, func(t *testing.T) {
			data := []byte(text)
			if strings.HasSuffix(in.key, ".gz") {
				data = gz(t, text)
			}
			opts := DecodeOptions{Target: tableTarget(t), TimeColumn: "time", BatchRows: 100, Parallelism: 2, ChunkBytes: 4 << 10}
			_, werr := decode(t, in.key, data, opts)
			want := mustFileError(t, werr)
			opts.PieceBytes = 16 << 10
			_, _, handed, _, err := decodeInPieces(t, in.key, data, opts)
			fe := mustFileError(t, err)
			if handed == 0 || fe.Row != 2501 || fe.Row != want.Row || fe.Line != want.Line || fe.Error() != want.Error() {
				t.Fatalf("after %d pieces: %v (row %d, line %d), want %v", handed, fe, fe.Row, fe.Line, want)
			}
		})
	}
}

// TestDecodeEachStopsAtTheCallersError: an error of fn stops the decode
// and comes back as it is.
func TestDecodeEachStopsAtTheCallersError(t *testing.T) {
	stop := errors.New("stop here")
	data := []byte(piecesCSV(3000, nil))
	calls := 0
	err := DecodeEach(context.Background(), Source{Key: "a.csv", R: bytes.NewReader(data), Size: int64(len(data))},
		DecodeOptions{Target: tableTarget(t), TimeColumn: "time", BatchRows: 100, PieceBytes: 16 << 10},
		func(d *Decoded) error {
			d.Release()
			calls++
			if d.Piece == 1 {
				return stop
			}
			return nil
		})
	if err != stop || calls != 2 {
		t.Fatalf("err %v after %d pieces, want the caller's error after 2", err, calls)
	}
}

// readSizes records the largest read of a file.
type readSizes struct {
	r   io.ReaderAt
	mu  sync.Mutex
	max int
}

func (s *readSizes) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	s.max = max(s.max, len(p))
	s.mu.Unlock()
	return s.r.ReadAt(p, off)
}

// TestParquetColumnChunksAreReadThroughABuffer: a Parquet file of one row
// group is read a buffer at a time, not a whole column chunk (here about
// 700 KB) at once.
func TestParquetColumnChunksAreReadThroughABuffer(t *testing.T) {
	whole, err := decode(t, "a.csv", []byte(piecesCSV(100_000, nil)), DecodeOptions{Target: tableTarget(t), TimeColumn: "time", BatchRows: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	pq := oneRowGroup(t, whole)
	rs := &readSizes{r: bytes.NewReader(pq)}
	err = DecodeEach(context.Background(), Source{Key: "a.parquet", R: rs, Size: int64(len(pq))},
		DecodeOptions{Target: tableTarget(t), TimeColumn: "time", PieceBytes: 1 << 20},
		func(d *Decoded) error { d.Release(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	const readBuffer = 256 << 10 // decode/arrowpq's readBuffer
	if rs.max > readBuffer {
		t.Fatalf("largest read %d bytes, want at most the %d of the read buffer", rs.max, readBuffer)
	}
}

// TestParallelRangesParseAhead: the ranges of a parallel decode are parsed
// at most chunksAhead past the one being taken, not the whole file ahead
// of its consumer.
func TestParallelRangesParseAhead(t *testing.T) {
	text := piecesCSV(5000, nil)
	ro, err := resolveOptions("a.csv", DecodeOptions{Parallelism: 2, ChunkBytes: 2 << 10, BatchRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	ro.text = true
	bs, err := openText(context.Background(), ro, Source{Key: "a.csv", R: strings.NewReader(text), Size: int64(len(text))}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.close()
	ct, ok := bs.(*chunkedText)
	if !ok || len(ct.chunks) < 20 {
		t.Fatalf("source %T, want parallel ranges", bs)
	}
	rec, err := bs.next() // chunk 0 taken: chunks up to chunksAhead may be parsed
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	last := chunksAhead(ct.workers)
	<-ct.done[last]
	select {
	case <-ct.done[last+1]:
		t.Fatalf("chunk %d parsed while chunk 0 is being taken (at most %d ahead)", last+1, last)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestDecodedSize: text is charged its decompressed bytes as counted by
// the caller; Parquet the Arrow size of its values, estimated from the
// footer close to (and not below) what it decodes to.
func TestDecodedSize(t *testing.T) {
	text := piecesCSV(20_000, nil)
	z := gz(t, text)
	if got := DecodedSize(Source{Key: "a.csv.gz", R: bytes.NewReader(z), Size: int64(len(z))}, int64(len(text))); got != int64(len(text)) {
		t.Errorf("csv.gz: %d, want its %d decompressed bytes", got, len(text))
	}
	for _, dict := range []bool{true, false} {
		whole, err := decode(t, "a.csv", []byte(text), DecodeOptions{Target: tableTarget(t), TimeColumn: "time", BatchRows: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		tbl := array.NewTableFromRecords(whole.Schema, whole.Records)
		var buf bytes.Buffer
		props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(dict))
		if err := pqarrow.WriteTable(tbl, &buf, 4096, props, pqarrow.DefaultWriterProps()); err != nil {
			t.Fatal(err)
		}
		tbl.Release()
		src := Source{Key: "a.parquet", R: bytes.NewReader(buf.Bytes()), Size: int64(buf.Len())}
		d, err := decode(t, "a.parquet", buf.Bytes(), DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var values int64
		for _, r := range d.Records {
			values += recordBytes(r)
		}
		got := DecodedSize(src, 0)
		if got < values || got > values*5/4 {
			t.Errorf("parquet (dictionaries %v, %d bytes): %d, want from %d to 1.25 times that", dict, buf.Len(), got, values)
		}
	}
}

// TestTextBatchesAreCutByBytes: a gzipped CSV whose rows grow 400 times
// longer than its first lines is read in batches of about a quarter of a
// piece, not in a count of rows estimated from the first lines; its rows
// stay exact, and a bad line past the first batches is named by its line.
func TestTextBatchesAreCutByBytes(t *testing.T) {
	const pieceBytes = 256 << 10
	long := strings.Repeat("x", 20_000)
	text := piecesCSV(400, func(i int) string {
		if i < 50 {
			return ""
		}
		return fmt.Sprintf("2026-01-05T00:%02d:%02dZ,dev-%d,%s,%d,true,1\n", i/60, i%60, i%7, `"`+long+`"`, i)
	})
	target := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "device", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.BinaryTypes.String},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "level", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	opts := DecodeOptions{Target: target, TimeColumn: "time", PieceBytes: pieceBytes}
	src := Source{Key: "a.csv.gz", R: bytes.NewReader(gz(t, text)), Size: int64(len(gz(t, text)))}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Mem = mem
	var largest, rows int64
	err := DecodeEach(context.Background(), src, opts, func(d *Decoded) error {
		defer d.Release()
		for _, r := range d.Records {
			largest = max(largest, recordBytes(r))
			rows += r.NumRows()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows != 400 {
		t.Fatalf("%d rows, want 400", rows)
	}
	if largest > pieceBytes/2 {
		t.Fatalf("largest batch %d bytes, want at most half the piece of %d (a quarter and a read ahead)", largest, pieceBytes)
	}

	bad := strings.Replace(text, `"`+long+`",300,`, `x"`+long+`",300,`, 1) // a bare quote: row 301, line 302
	src = Source{Key: "a.csv.gz", R: bytes.NewReader(gz(t, bad)), Size: int64(len(gz(t, bad)))}
	opts.Mem = nil
	err = DecodeEach(context.Background(), src, opts, func(d *Decoded) error { d.Release(); return nil })
	var fe *FileError
	if !errors.As(err, &fe) || fe.Row != 301 || fe.Line != 302 {
		t.Fatalf("err = %v, want row 301, line 302", err)
	}
}
