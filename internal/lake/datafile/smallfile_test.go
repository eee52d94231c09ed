package datafile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/decode"
)

// smallTestTable is a day-partitioned table of every column type small
// files cover, required and optional.
func smallTestTable(t testing.TB, props iceberg.Properties) (*Layout, *arrow.Schema) {
	t.Helper()
	return testLayout(t, props,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "site", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 5, Name: "count", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 6, Name: "total", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 7, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 8, Name: "value", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 9, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 10, Name: "clock", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 11, Name: "local", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 12, Name: "raw", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 13, Name: "note", Type: iceberg.PrimitiveTypes.String},
	)
}

// smallTestRows are n random rows over days days, in batches of 700:
// nulls in every optional column (all of one now and then), NaN, both
// zeros, infinities and extremes, empty, long and non-ASCII strings.
func smallTestRows(rng *rand.Rand, sc *arrow.Schema, n, days int) []arrow.RecordBatch {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	allNull := map[int]bool{}
	for c := 1; c < sc.NumFields(); c++ {
		allNull[c] = sc.Field(c).Nullable && rng.IntN(6) == 0
	}
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.SmallestNonzeroFloat64, 1.5, -2.25}
	strs := []string{"", "a", "dev-01", "dev-02", "é", "日本", "zz", strings.Repeat("x", 5000), "\x00", "\xff"}
	allNaN := rng.IntN(5) == 0
	var recs []arrow.RecordBatch
	for i := range n {
		ts := t0.Add(time.Duration(rng.Int64N(int64(days) * int64(24*time.Hour))))
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
		for c := 1; c < sc.NumFields(); c++ {
			f := b.Field(c)
			if allNull[c] || sc.Field(c).Nullable && rng.IntN(4) == 0 {
				f.AppendNull()
				continue
			}
			switch f := f.(type) {
			case *array.StringBuilder:
				f.Append(strs[rng.IntN(len(strs))])
			case *array.BinaryBuilder:
				f.Append([]byte(strs[rng.IntN(len(strs))]))
			case *array.BooleanBuilder:
				f.Append(rng.IntN(2) == 0)
			case *array.Int32Builder:
				f.Append([]int32{math.MinInt32, -1, 0, 7, math.MaxInt32}[rng.IntN(5)])
			case *array.Int64Builder:
				f.Append([]int64{math.MinInt64, -1, 0, 7, math.MaxInt64}[rng.IntN(5)])
			case *array.Float32Builder:
				v := float32(floats[rng.IntN(len(floats))])
				if allNaN {
					v = float32(math.NaN())
				}
				f.Append(v)
			case *array.Float64Builder:
				v := floats[rng.IntN(len(floats))]
				if allNaN {
					v = math.NaN()
				}
				f.Append(v)
			case *array.Date32Builder:
				f.Append(arrow.Date32(rng.IntN(40000) - 20000))
			case *array.Time64Builder:
				f.Append(arrow.Time64(rng.Int64N(86_400_000_000)))
			case *array.TimestampBuilder:
				f.Append(arrow.Timestamp(rng.Int64N(1<<50) - 1<<49))
			default:
				panic(fmt.Sprintf("no value for %T", f))
			}
		}
		if (i+1)%700 == 0 || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	return recs
}

// TestSmallFileAgrees: rows of every type small files cover, written as
// small files (from plain and from dictionary arrays) and by pqarrow,
// read back as the same values (floats to the bit) under the same
// schema and footer metadata, with the same statistics and the same
// manifest entries; files of more rows, or of more bytes, than a small
// file holds are pqarrow's, whole. Small files are one plain page per
// column.
func TestSmallFileAgrees(t *testing.T) {
	// Every seed with the table's zstd, some with brotli, whose pages of
	// only nulls arrow-go's codec could not read back (decode/pagecodec).
	brotli := iceberg.Properties{"write.parquet.compression-codec": "brotli"}
	for seed := range uint64(30) {
		name, props := fmt.Sprint(seed), iceberg.Properties(nil)
		if seed >= 24 {
			name, props = fmt.Sprintf("%d brotli", seed-24), brotli
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed%24, 7))
			l, sc := smallTestTable(t, props)
			if l.small == nil {
				t.Fatal("no small file format for the table")
			}
			n := []int{1, 5, 300, 2000, 12_000}[seed%5]
			recs := smallTestRows(rng, sc, n, 1+rng.IntN(4))
			defer decode.ReleaseAll(recs)
			small, smallDF := writeShape(t, l, sc, recs, dailyOrder("device"), false, seed%2 == 0)
			big := *l
			big.small = nil
			pq, pqDF := writeShape(t, &big, sc, recs, dailyOrder("device"), false, false)
			if len(small) != len(pq) {
				t.Fatalf("%d files against pqarrow's %d", len(small), len(pq))
			}
			smallFiles := 0
			for i := range small {
				sameManifestEntries(t, i, smallDF[i], pqDF[i])
				if smallDF[i].FileSizeBytes() != int64(len(small[i])) {
					t.Errorf("file %d: size %d in its entry, %d written", i, smallDF[i].FileSizeBytes(), len(small[i]))
				}
				sameFooterAndValues(t, i, small[i], pq[i])
				if bytes.Equal(small[i], pq[i]) { // pqarrow's file
					continue
				}
				if smallDF[i].Count() > l.small.limit {
					t.Errorf("file %d of %d rows: not pqarrow's file", i, smallDF[i].Count())
				}
				smallFiles++
				onePlainPage(t, i, small[i])
			}
			if smallFiles == 0 && n <= 2000 {
				t.Errorf("no small file among %d", len(small))
			}
		})
	}
}

// sameFooterAndValues checks that two Parquet files have the same schema,
// footer metadata, row group rows and column statistics, and read back
// as the same values, floats compared by their bits.
func sameFooterAndValues(t *testing.T, i int, a, b []byte) {
	t.Helper()
	ra, err := file.NewParquetReader(bytes.NewReader(a))
	if err != nil {
		t.Fatalf("file %d: %v", i, err)
	}
	defer ra.Close()
	rb, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ma, mb := ra.MetaData(), rb.MetaData()
	if !ma.Schema.Equals(mb.Schema) {
		t.Errorf("file %d: Parquet schemas differ:\n%s\n%s", i, ma.Schema, mb.Schema)
	}
	ka, kb := ma.KeyValueMetadata(), mb.KeyValueMetadata()
	if !slices.Equal(ka.Keys(), kb.Keys()) || !slices.Equal(ka.Values(), kb.Values()) {
		t.Errorf("file %d: footer metadata differs: %v and %v", i, ka.Keys(), kb.Keys())
	}
	if ra.NumRowGroups() != rb.NumRowGroups() || ra.NumRows() != rb.NumRows() {
		t.Fatalf("file %d: %d row groups, %d rows against %d, %d", i, ra.NumRowGroups(), ra.NumRows(), rb.NumRowGroups(), rb.NumRows())
	}
	for g := range ra.NumRowGroups() {
		ga, gb := ma.RowGroup(g), mb.RowGroup(g)
		for c := range ga.NumColumns() {
			ca, _ := ga.ColumnChunk(c)
			cb, _ := gb.ColumnChunk(c)
			sa, err1 := ca.Statistics()
			sb, err2 := cb.Statistics()
			if err1 != nil || err2 != nil || (sa == nil) != (sb == nil) {
				t.Fatalf("file %d column %s: statistics %v (%v), %v (%v)", i, ca.PathInSchema(), sa, err1, sb, err2)
			}
			if sa != nil && (sa.NullCount() != sb.NullCount() || sa.NumValues() != sb.NumValues() || sa.HasMinMax() != sb.HasMinMax() ||
				!bytes.Equal(sa.EncodeMin(), sb.EncodeMin()) || !bytes.Equal(sa.EncodeMax(), sb.EncodeMax())) {
				t.Errorf("file %d column %s: statistics differ: min %x max %x nulls %d, against min %x max %x nulls %d", i, ca.PathInSchema(),
					sa.EncodeMin(), sa.EncodeMax(), sa.NullCount(), sb.EncodeMin(), sb.EncodeMax(), sb.NullCount())
			}
		}
	}
	read := func(r *file.Reader) arrow.Table {
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		return tbl
	}
	ta, tb := read(ra), read(rb)
	defer ta.Release()
	defer tb.Release()
	if !ta.Schema().Equal(tb.Schema()) {
		t.Fatalf("file %d: read back as\n%s\n%s", i, ta.Schema(), tb.Schema())
	}
	for c := range int(ta.NumCols()) {
		ca, err := array.Concatenate(ta.Column(c).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := array.Concatenate(tb.Column(c).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(ca, cb) {
			t.Errorf("file %d column %s: values differ", i, ta.Schema().Field(c).Name)
		}
		ca.Release()
		cb.Release()
	}
}

// sameBits reports whether a and b hold the same values, floats (NaN and
// the sign of zero) by their bits.
func sameBits(a, b arrow.Array) bool {
	switch a := a.(type) {
	case *array.Float64:
		b, ok := b.(*array.Float64)
		if !ok || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if a.IsNull(i) != b.IsNull(i) || a.IsValid(i) && math.Float64bits(a.Value(i)) != math.Float64bits(b.Value(i)) {
				return false
			}
		}
		return true
	case *array.Float32:
		b, ok := b.(*array.Float32)
		if !ok || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if a.IsNull(i) != b.IsNull(i) || a.IsValid(i) && math.Float32bits(a.Value(i)) != math.Float32bits(b.Value(i)) {
				return false
			}
		}
		return true
	}
	return array.Equal(a, b)
}

// onePlainPage checks that every column chunk of a small file is one
// PLAIN data page v2.
func onePlainPage(t *testing.T, i int, data []byte) {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRowGroups() != 1 {
		t.Fatalf("file %d: %d row groups", i, r.NumRowGroups())
	}
	rg := r.RowGroup(0)
	for c := range rg.NumColumns() {
		pr, err := rg.GetColumnPageReader(c)
		if err != nil {
			t.Fatal(err)
		}
		var pages []file.Page
		for pr.Next() {
			pages = append(pages, pr.Page())
		}
		if err := pr.Err(); err != nil {
			t.Fatalf("file %d column %d: %v", i, c, err)
		}
		if len(pages) != 1 {
			t.Fatalf("file %d column %d: %d pages, want one", i, c, len(pages))
		}
		dp, ok := pages[0].(*file.DataPageV2)
		if !ok || parquet.Encoding(pages[0].Encoding()) != parquet.Encodings.Plain {
			t.Errorf("file %d column %d: a %T of encoding %v, want a PLAIN data page v2", i, c, pages[0], pages[0].Encoding())
			continue
		}
		// No values (only nulls): none compressed either.
		if dp.NumNulls() == dp.NumValues() && dp.IsCompressed() {
			t.Errorf("file %d column %d: a page of only nulls whose values are compressed", i, c)
		}
	}
}

// TestSmallFileOfSlices: batches that are slices of larger arrays (an
// offset into their buffers and validity bitmaps, not a multiple of 8)
// and several batches to a file are written as pqarrow writes the same
// rows.
func TestSmallFileOfSlices(t *testing.T) {
	l, sc := smallTestTable(t, nil)
	rng := rand.New(rand.NewPCG(3, 9))
	recs := smallTestRows(rng, sc, 1400, 1)
	defer decode.ReleaseAll(recs)
	for k, cut := range [][2]int64{{3, 650}, {0, 700}, {13, 14}, {5, 5 + 64}, {3, 650}, {13, 14}, {5, 5 + 64}} {
		var parts []arrow.RecordBatch
		for j, r := range recs {
			if k < 4 || j == 0 { // several batches, then one alone
				parts = append(parts, r.NewSlice(cut[0], cut[1]))
			}
		}
		var small bytes.Buffer
		if _, _, err := writeSmallFile(&small, l.small, parts, nil); err != nil {
			t.Fatal(err)
		}
		var pq bytes.Buffer
		pw, err := pqarrow.NewFileWriter(sc, &pq, l.plainTime, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if err := pw.WriteBuffered(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		decode.ReleaseAll(parts)
		sameFooterAndValues(t, k, small.Bytes(), pq.Bytes())
		onePlainPage(t, k, small.Bytes())
	}
}

// BenchmarkSmallFiles writes 9,000 rows of 100 series spread over 90
// days (bench case c4's shape: data files of 100 rows) as small files and
// by pqarrow; ns/op and allocations are per data file.
func BenchmarkSmallFiles(b *testing.B) {
	l, sc := dictionaryTestTable(b, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for i := range 9000 {
		bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(i%90)*24*time.Hour + time.Duration(i)*time.Second).UnixMicro()))
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-%02d", i%100))
		bld.Field(2).(*array.StringBuilder).Append("north-field-station")
		bld.Field(3).(*array.StringBuilder).Append("ok")
		bld.Field(4).(*array.Float64Builder).Append(float64(i%400) / 10)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	rows, err := NewSortedRows(memory.DefaultAllocator, sc, []arrow.RecordBatch{rec}, dailyOrder("device"), WithDictionaries(l))
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Release()
	var batches []arrow.RecordBatch
	for r, err := range rows.Batches(context.Background(), 0, rows.Len(), 0) {
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, r)
	}
	defer decode.ReleaseAll(batches)
	big := *l
	big.small = nil
	for _, c := range []struct {
		name string
		l    *Layout
	}{{"small", l}, {"pqarrow", &big}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			files := 0
			for b.Loop() {
				var m memoryFiles
				recs := func(yield func(arrow.RecordBatch, error) bool) {
					for _, r := range batches {
						r.Retain()
						if !yield(r, nil) {
							return
						}
					}
				}
				for _, err := range Write(context.Background(), c.l, nil, m.create, recs) {
					if err != nil {
						b.Fatal(err)
					}
					files++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(files), "ns/file")
		})
	}
}

// TestFinishChunkIsClose: a small file whose column chunks are finished
// by finishChunk is, byte for byte, the file of the same rows whose
// chunks the page writer's Close finishes.
func TestFinishChunkIsClose(t *testing.T) {
	l, sc := smallTestTable(t, nil)
	recs := smallTestRows(rand.New(rand.NewPCG(5, 5)), sc, 1000, 1)
	defer decode.ReleaseAll(recs)
	write := func(byClose bool) []byte {
		closeChunks = byClose
		defer func() { closeChunks = false }()
		var b bytes.Buffer
		if _, _, err := writeSmallFile(&b, l.small, recs, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	finished, closed := write(false), write(true)
	if !bytes.Equal(finished, closed) {
		t.Fatalf("%d bytes, %d with Close", len(finished), len(closed))
	}
	// Not Close twice: the page writers tell their totals.
	var enc columnEncoder
	rgb := metadata.NewFileMetadataBuilder(l.small.schema, l.small.props, nil).AppendRowGroup()
	pager, _, err := enc.column(&countingWriter{w: io.Discard}, l.small, rgb.NextColumnChunk(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pager.(pageTotals); !ok {
		t.Fatalf("a %T does not tell its totals", pager)
	}
}

// TestEmptyStringBound: a file whose batches hold "" only in a batch of
// its own (a batch taken by a permutation: its value bytes are an empty
// buffer) has "" as its lower bound, written as a small file and by
// pqarrow: arrow-go's statistics take the values of such a buffer for no
// values at all (a nil minimum is no minimum), and the file's lower
// bound, and its manifest entry's, would pass over "" (readers of
// site = ” would skip it).
func TestEmptyStringBound(t *testing.T) {
	for _, small := range []bool{true, false} {
		t.Run(fmt.Sprintf("small=%v", small), func(t *testing.T) {
			emptyStringBound(t, small)
		})
	}
}

func emptyStringBound(t *testing.T, small bool) {
	l, sc := smallTestTable(t, nil)
	if !small {
		l.small = nil
	}
	rng := rand.New(rand.NewPCG(5, 99))
	recs := smallTestRows(rng, sc, 3, 1+rng.IntN(3))
	defer decode.ReleaseAll(recs)
	rows, err := NewNewestRows(memory.DefaultAllocator, sc, recs, dailyOrder("device"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	var m memoryFiles
	for df, err := range Write(context.Background(), l, nil, m.create, rows.Batches(context.Background(), 0, rows.Len(), 1)) {
		if err != nil {
			t.Fatal(err)
		}
		r, err := file.NewParquetReader(bytes.NewReader(m.files[df.FilePath()].Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for c := range int(tbl.NumCols()) {
			col, err := array.Concatenate(tbl.Column(c).Data().Chunks(), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := col.(*array.String); ok {
				cc, _ := r.MetaData().RowGroup(0).ColumnChunk(c)
				stats, err := cc.Statistics()
				if err != nil {
					t.Fatal(err)
				}
				name := tbl.Schema().Field(c).Name
				f, _ := l.schema.FindFieldByName(name)
				lower, bounded := df.LowerBoundValues()[f.ID]
				for i := range s.Len() {
					if s.IsValid(i) && stats != nil && stats.HasMinMax() && s.Value(i) < string(stats.EncodeMin()) {
						t.Errorf("%s column %s: %q below its lower bound %q", df.FilePath(), name, s.Value(i), stats.EncodeMin())
					}
					if s.IsValid(i) && bounded && s.Value(i) < string(lower) {
						t.Errorf("%s column %s: %q below its manifest entry's lower bound %q", df.FilePath(), name, s.Value(i), lower)
					}
				}
			}
			col.Release()
		}
		tbl.Release()
		r.Close()
	}
}
