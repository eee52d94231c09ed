package datafile

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
)

// shapeRow gives row i of a shape: its time (minutes after the start),
// device, site and note (nil: null).
type shapeRow func(i int) (minutes int, device, site, note *string)

func str(s string) *string { return &s }

// shapeRows are n rows of shape in batches of 5,000.
func shapeRows(sc *arrow.Schema, n int, row shapeRow) []arrow.RecordBatch {
	t0 := time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	var recs []arrow.RecordBatch
	for i := range n {
		minutes, device, site, note := row(i)
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(minutes) * time.Minute).UnixMicro()))
		for c, v := range []*string{device, site, note} {
			if v == nil {
				b.Field(c + 1).AppendNull()
			} else {
				b.Field(c + 1).(*array.StringBuilder).Append(*v)
			}
		}
		b.Field(4).(*array.Float64Builder).Append(float64(i))
		if (i+1)%5000 == 0 || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	return recs
}

// writeShape sorts recs by order (newest: keeping the last row of a key),
// with dictionaries or not, and writes them; the files in order of path.
func writeShape(t *testing.T, l *Layout, sc *arrow.Schema, recs []arrow.RecordBatch, o Order, newest, dictionaries bool) ([][]byte, []iceberg.DataFile) {
	t.Helper()
	var opts []SortOption
	if dictionaries {
		opts = append(opts, WithDictionaries(l))
	}
	sorted := NewSortedRows
	if newest {
		sorted = NewNewestRows
	}
	rows, err := sorted(memory.DefaultAllocator, sc, recs, o, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	var m memoryFiles
	var dfs []iceberg.DataFile
	for df, err := range Write(context.Background(), l, nil, m.create, rows.Batches(context.Background(), 0, rows.Len(), 1000)) {
		if err != nil {
			t.Fatal(err)
		}
		dfs = append(dfs, df)
	}
	slices.SortFunc(dfs, func(a, b iceberg.DataFile) int { return cmpString(a.FilePath(), b.FilePath()) })
	var out [][]byte
	for _, df := range dfs {
		out = append(out, m.files[df.FilePath()].Bytes())
	}
	return out, dfs
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestDictionaryShapesWriteTheSameFiles: rows of the shapes a dictionary
// column can get wrong make the same files with dictionary arrays as with
// strings (values, statistics, manifest entries, footer metadata): rows
// dropped as duplicates (NewNewestRows), a partition whose column is all
// null, empty strings, a series key of two string columns, more distinct
// values than a dictionary takes, and a column of few values in one
// partition and many in another.
func TestDictionaryShapesWriteTheSameFiles(t *testing.T) {
	l, sc := dictionaryTestTable(t, nil)
	for _, c := range []struct {
		name   string
		n      int
		order  Order
		newest bool
		row    shapeRow
	}{
		{"duplicates dropped", 20_000, dailyOrder("device"), true, func(i int) (int, *string, *string, *string) {
			// Every row twice, the copy later in the input with another site.
			j := i % 10_000
			site := fmt.Sprintf("site-%d", j%3)
			if i >= 10_000 {
				site = fmt.Sprintf("other-%d", j%5)
			}
			return j / 20 * 4, str(fmt.Sprintf("dev-%02d", j%20)), str(site), str(fmt.Sprintf("n%d", j%7))
		}},
		{"partition of nulls", 12_000, dailyOrder("device"), false, func(i int) (int, *string, *string, *string) {
			minutes := i / 10 * 4
			var site *string
			if minutes >= 24*60 { // the first day has no site
				site = str(fmt.Sprintf("s%d", i%4))
			}
			var device *string
			if minutes < 2*24*60 || minutes >= 3*24*60 { // the third day has no device
				device = str(fmt.Sprintf("d%d", i%10))
			}
			return minutes, device, site, nil
		}},
		{"empty strings", 9_000, dailyOrder("device"), false, func(i int) (int, *string, *string, *string) {
			device := []*string{str(""), nil, str("a"), str("")}[i%4]
			return i / 4 * 2, device, str([]string{"", "x", "é"}[i%3]), str(fmt.Sprintf("%d", i%2))
		}},
		{"two string keys", 15_000, dailyOrder("device", "site"), false, func(i int) (int, *string, *string, *string) {
			site := str(fmt.Sprintf("site-%d", i%3))
			if i%11 == 0 {
				site = nil
			}
			return i / 12 * 3, str(fmt.Sprintf("dev-%d", i%4)), site, str(fmt.Sprintf("k%d", i%9))
		}},
		{"two string keys, newest", 15_000, dailyOrder("site", "device"), true, func(i int) (int, *string, *string, *string) {
			j := i % 7_500
			return j / 12 * 3, str(fmt.Sprintf("dev-%d", j%4)), str(fmt.Sprintf("site-%d", j%3)), str(fmt.Sprintf("k%d-%d", i/7_500, j%5))
		}},
		{"many distinct values", 140_000, dailyOrder("device"), false, func(i int) (int, *string, *string, *string) {
			// 70,000 distinct sites and devices, each twice in its day.
			j := i % 70_000
			return j / 100 * 8, str(fmt.Sprintf("dev-%06d", j)), str(fmt.Sprintf("s%06d", j)), str("constant")
		}},
		{"few values, then many", 40_000, dailyOrder("device"), false, func(i int) (int, *string, *string, *string) {
			minutes := i / 10
			note := str(fmt.Sprintf("n%d", i%3))
			if minutes >= 24*60 {
				note = str(fmt.Sprintf("distinct %d", i))
			}
			return minutes, str(fmt.Sprintf("d%d", i%10)), str("s"), note
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := shapeRows(sc, c.n, c.row)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			plain, plainDFs := writeShape(t, l, sc, recs, c.order, c.newest, false)
			dict, dictDFs := writeShape(t, l, sc, recs, c.order, c.newest, true)
			if len(plain) != len(dict) || len(plain) == 0 {
				t.Fatalf("%d and %d files", len(plain), len(dict))
			}
			for i := range plain {
				sameManifestEntries(t, i, plainDFs[i], dictDFs[i])
				sameDataFiles(t, plain[i], dict[i])
			}
		})
	}
}

// sameManifestEntries checks that the manifest entries of file i written
// with plain strings (a) and with dictionaries (b) agree.
func sameManifestEntries(t *testing.T, i int, a, b iceberg.DataFile) {
	t.Helper()
	if a.Count() != b.Count() || !maps.Equal(a.NullValueCounts(), b.NullValueCounts()) || !maps.Equal(a.ValueCounts(), b.ValueCounts()) ||
		!maps.EqualFunc(a.LowerBoundValues(), b.LowerBoundValues(), bytes.Equal) || !maps.EqualFunc(a.UpperBoundValues(), b.UpperBoundValues(), bytes.Equal) {
		t.Errorf("file %d: manifest entries differ:\nplain %d rows, nulls %v, lower %v, upper %v\ndict  %d rows, nulls %v, lower %v, upper %v", i,
			a.Count(), a.NullValueCounts(), a.LowerBoundValues(), a.UpperBoundValues(),
			b.Count(), b.NullValueCounts(), b.LowerBoundValues(), b.UpperBoundValues())
	}
}

// sameDataFiles checks that two Parquet files hold the same rows under
// the same schema, footer metadata, row groups and statistics; the
// dictColumns have a dictionary in every row group of dict, the other
// columns are encoded alike.
func sameDataFiles(t *testing.T, plain, dict []byte, dictColumns ...string) {
	t.Helper()
	open := func(b []byte) *file.Reader {
		r, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pr, dr := open(plain), open(dict)
	defer pr.Close()
	defer dr.Close()
	if !pr.MetaData().Schema.Equals(dr.MetaData().Schema) {
		t.Errorf("Parquet schemas differ:\n%s\n%s", pr.MetaData().Schema, dr.MetaData().Schema)
	}
	pkv, dkv := pr.MetaData().KeyValueMetadata(), dr.MetaData().KeyValueMetadata()
	if !slices.Equal(pkv.Keys(), dkv.Keys()) || !slices.Equal(pkv.Values(), dkv.Values()) {
		t.Errorf("footer metadata differs: keys %v and %v", pkv.Keys(), dkv.Keys())
	}
	if pr.NumRowGroups() != dr.NumRowGroups() || pr.NumRows() != dr.NumRows() {
		t.Fatalf("%d row groups, %d rows against %d, %d", pr.NumRowGroups(), pr.NumRows(), dr.NumRowGroups(), dr.NumRows())
	}
	for g := range pr.NumRowGroups() {
		pg, dg := pr.MetaData().RowGroup(g), dr.MetaData().RowGroup(g)
		if pg.NumRows() != dg.NumRows() {
			t.Errorf("row group %d: %d rows against %d", g, pg.NumRows(), dg.NumRows())
		}
		for c := range pg.NumColumns() {
			pc, _ := pg.ColumnChunk(c)
			dc, _ := dg.ColumnChunk(c)
			ps, err1 := pc.Statistics()
			ds, err2 := dc.Statistics()
			if err1 != nil || err2 != nil || ps == nil || ds == nil {
				t.Fatalf("row group %d column %d: statistics %v, %v", g, c, err1, err2)
			}
			if ps.NullCount() != ds.NullCount() || ps.NumValues() != ds.NumValues() || ps.HasMinMax() != ds.HasMinMax() ||
				!bytes.Equal(ps.EncodeMin(), ds.EncodeMin()) || !bytes.Equal(ps.EncodeMax(), ds.EncodeMax()) {
				t.Errorf("row group %d column %s: statistics differ: %v against %v", g, pc.PathInSchema(), ps, ds)
			}
			if len(dictColumns) == 0 {
				continue
			}
			name := pc.PathInSchema().String()
			encs := dc.Encodings()
			if slices.Contains(dictColumns, name) && !slices.Contains(encs, parquet.Encodings.RLEDict) {
				t.Errorf("row group %d column %s: encodings %v, want a dictionary", g, name, encs)
			}
			if !slices.Contains(dictColumns, name) && !slices.Equal(encs, pc.Encodings()) {
				t.Errorf("row group %d column %s: encodings %v, want %v as plain strings have", g, name, encs, pc.Encodings())
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
			t.Fatal(err)
		}
		return tbl
	}
	pt, dt := read(pr), read(dr)
	defer pt.Release()
	defer dt.Release()
	if !pt.Schema().Equal(dt.Schema()) || !array.TableEqual(pt, dt) {
		t.Errorf("the files read back differently:\n%s\n%s", pt.Schema(), dt.Schema())
	}
}

// TestDictionaryBatchesConcurrently: batches of the same sorted rows
// taken from several goroutines at once hold the rows taken alone (and
// with -race, nothing of the dictionary columns is written while taken).
func TestDictionaryBatchesConcurrently(t *testing.T) {
	l, sc := dictionaryTestTable(t, nil)
	recs := dictionaryTestRows(sc, 12_000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	rows, err := NewSortedRows(memory.DefaultAllocator, sc, recs, dailyOrder("device"), WithDictionaries(l))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	ctx := context.Background()
	var want []arrow.RecordBatch
	for rec, err := range rows.Batches(ctx, 0, rows.Len(), 700) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rec)
	}
	defer func() {
		for _, r := range want {
			r.Release()
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			i := 0
			for rec, err := range rows.Batches(ctx, 0, rows.Len(), 700) {
				if err != nil {
					errs <- err
					return
				}
				// want's dictionary arrays build their dictionary when first
				// asked for it: one comparison at a time.
				mu.Lock()
				same := array.RecordEqual(rec, want[i])
				mu.Unlock()
				rec.Release()
				if !same {
					errs <- fmt.Errorf("batch %d differs", i)
					return
				}
				i++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
