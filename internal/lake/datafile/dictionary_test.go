package datafile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// memoryFiles keeps the data files a test writes, by path.
type memoryFiles struct {
	mu    sync.Mutex
	files map[string]*bytes.Buffer
}

type memoryFile struct {
	bytes.Buffer
	done func(*bytes.Buffer)
}

func (f *memoryFile) Close() error { f.done(&f.Buffer); return nil }

func (m *memoryFiles) create(_ context.Context, path string) (io.WriteCloser, error) {
	return &memoryFile{done: func(b *bytes.Buffer) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.files == nil {
			m.files = map[string]*bytes.Buffer{}
		}
		m.files[path] = b
	}}, nil
}

// dictionaryTestTable is a day-partitioned table of a time, a series key
// (device, with nulls), a constant site, a note of a distinct value per
// row, and a reading.
func dictionaryTestTable(t testing.TB, props iceberg.Properties) (*Layout, *arrow.Schema) {
	t.Helper()
	props = maps.Clone(props)
	if props == nil {
		props = iceberg.Properties{}
	}
	props[table.ParquetRowGroupLimitKey] = "3000"
	return testLayout(t, props,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "site", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "value", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// testLayout is the layout of a new format version 2 table of fields
// (the first the time column, partitioned by day; series key "device")
// with properties props.
func testLayout(t testing.TB, props iceberg.Properties, fields ...iceberg.NestedField) (*Layout, *arrow.Schema) {
	t.Helper()
	sch := iceberg.NewSchema(0, fields...)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "time_day", Transform: iceberg.DayTransform{}})
	props = maps.Clone(props)
	if props == nil {
		props = iceberg.Properties{}
	}
	props["format-version"] = "2"
	meta, err := table.NewMetadata(sch, &spec, table.UnsortedSortOrder, "file:///warehouse/ns/t", props)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(meta.CurrentSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(meta, sc, dailyOrder("device"), iceberg.DayTransform{})
	if err != nil || l == nil {
		t.Fatalf("layout: %v, %v", l, err)
	}
	return l, sc
}

// dictionaryTestRows are n rows of 40 devices every 4 minutes (36,000:
// 4 days), in batches of 5,000 rows in time order; every 97th device is
// null, and the site, one value, is null now and then on the first day.
func dictionaryTestRows(sc *arrow.Schema, n int) []arrow.RecordBatch {
	t0 := time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	var recs []arrow.RecordBatch
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(i/40) * 4 * time.Minute).UnixMicro()))
		if i%97 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-%02d", i%40))
		}
		if i%89 == 0 && i < 1200 { // nulls on the first day only
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append("north-field-station")
		}
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("note %d", i))
		b.Field(4).(*array.Float64Builder).Append(float64(i%400) / 10)
		if (i+1)%5000 == 0 || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	return recs
}

// writeTestFiles sorts recs, with dictionaries or not, and writes them as
// data files; it returns the files by path and their data files.
func writeTestFiles(t testing.TB, l *Layout, sc *arrow.Schema, recs []arrow.RecordBatch, dictionaries bool) (map[string]*bytes.Buffer, []iceberg.DataFile) {
	t.Helper()
	var opts []SortOption
	if dictionaries {
		opts = append(opts, WithDictionaries(l))
	}
	rows, err := NewSortedRows(memory.DefaultAllocator, sc, recs, dailyOrder("device"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	if dictionaries {
		// The series key and the site as dictionaries; the note, one
		// value a row, as strings (its dictionary would not pay).
		rec, err := rows.Take(context.Background(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []arrow.Type{arrow.TIMESTAMP, arrow.DICTIONARY, arrow.DICTIONARY, arrow.STRING, arrow.FLOAT64} {
			if got := rec.Column(i).DataType().ID(); got != want {
				t.Errorf("column %s taken as %s, want %s", sc.Field(i).Name, got, want)
			}
		}
		rec.Release()
	}
	var m memoryFiles
	var dfs []iceberg.DataFile
	for df, err := range Write(context.Background(), l, nil, m.create, rows.Batches(context.Background(), 0, rows.Len(), 1000)) {
		if err != nil {
			t.Fatal(err)
		}
		dfs = append(dfs, df)
	}
	return m.files, dfs
}

// TestDictionaryColumnsWriteTheSameFile: a table's rows written with its
// string columns as dictionary arrays (WithDictionaries) make files
// that read back as the same rows and carry the same Parquet schema,
// footer metadata (ARROW:schema), row groups and statistics as the files
// of plain strings; the series key and the constant column are
// dictionary-encoded, and the note of distinct values is written as
// arrow-go writes it.
func TestDictionaryColumnsWriteTheSameFile(t *testing.T) {
	l, sc := dictionaryTestTable(t, nil)
	l.small = nil // pqarrow's files, whatever their rows (the first day's are few)
	if got := l.DictionaryColumns(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("dictionary columns %v, want the three string columns", got)
	}
	recs := dictionaryTestRows(sc, 36_000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	plain, plainFiles := writeTestFiles(t, l, sc, recs, false)
	dict, dictFiles := writeTestFiles(t, l, sc, recs, true)
	if len(plain) != 4 || len(dict) != 4 {
		t.Fatalf("%d and %d files, want one a day", len(plain), len(dict))
	}
	pathOf := func(dfs []iceberg.DataFile) []string {
		var out []string
		for _, df := range dfs {
			out = append(out, df.FilePath())
		}
		return out
	}
	pp, dp := pathOf(plainFiles), pathOf(dictFiles)
	for i := range plainFiles {
		sameManifestEntries(t, i, plainFiles[i], dictFiles[i])
		// Plain strings lose their dictionary in a row group whose first
		// write is a few rows (arrow-go applies the cost rule to them);
		// dictionary arrays keep it.
		sameDataFiles(t, plain[pp[i]].Bytes(), dict[dp[i]].Bytes(), "device", "site")
	}
}

// TestDictionaryColumnsFollowTheTable: a table that turns dictionaries
// off, for all columns or one, sets a bloom filter on a column, or
// chooses smaller data pages keeps arrow-go's own encoding there.
func TestDictionaryColumnsFollowTheTable(t *testing.T) {
	for _, c := range []struct {
		props iceberg.Properties
		want  []int
	}{
		{iceberg.Properties{propDictEnabled: "false"}, nil},
		{iceberg.Properties{propDictColumnPrefix + "site": "false"}, []int{1, 3}},
		{iceberg.Properties{propBloomColumnPrefix + "device": "true"}, []int{2, 3}},
		{iceberg.Properties{table.ParquetPageSizeBytesKey: "65536"}, nil},
	} {
		l, _ := dictionaryTestTable(t, c.props)
		if got := l.DictionaryColumns(); !slices.Equal(got, c.want) {
			t.Errorf("%v: dictionary columns %v, want %v", c.props, got, c.want)
		}
	}
}

// BenchmarkWrite sorts and writes 200,000 rows of 40 devices over 14 days
// as data files (into memory), the string columns as plain strings and as
// dictionaries (WithDictionaries): the sort and the Parquet writer of an
// append, without decoding or I/O.
func BenchmarkWrite(b *testing.B) {
	l, sc := dictionaryTestTable(b, nil)
	recs := dictionaryTestRows(sc, 200_000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, dictionaries := range []bool{false, true} {
		b.Run(fmt.Sprintf("dictionaries=%v", dictionaries), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				writeTestFiles(b, l, sc, recs, dictionaries)
			}
		})
	}
}
