package lake

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake/datafile"
)

// layoutSeries are the series of the layout tests, in sort order, and
// their rows: nine short series, one longer than a row group, two short.
var layoutSeries = func() []seriesLength {
	var out []seriesLength
	for i := range 9 {
		out = append(out, seriesLength{fmt.Sprintf("a%d", i), 3000})
	}
	out = append(out, seriesLength{"b-long", 25000})
	for i := range 2 {
		out = append(out, seriesLength{fmt.Sprintf("c%d", i), 3000})
	}
	return out
}()

// seriesLength is a layout series: its device and its rows.
type seriesLength struct {
	device string
	rows   int
}

// layoutRows builds the rows of every layout series whose row index i
// has keep(i): one reading a second from base, values repeating every 50
// (a column whose dictionary pays), shuffled across series.
func layoutRows(t testing.TB, sc *arrow.Schema, base time.Time, keep func(i int) bool) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	longest := 0
	for _, s := range layoutSeries {
		longest = max(longest, s.rows)
	}
	for i := range longest {
		for _, s := range layoutSeries {
			if i >= s.rows || !keep(i) {
				continue
			}
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMicro()))
			b.Field(1).(*array.StringBuilder).Append(s.device)
			b.Field(2).(*array.Float64Builder).Append(float64(i%50) / 10)
		}
	}
	return b.NewRecordBatch()
}

// parquetMetadata reads the footer of a data file of tbl.
func parquetMetadata(t testing.TB, tbl *Table, path string) *metadata.FileMetaData {
	t.Helper()
	fs, err := tbl.lake.fsF(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	return r.MetaData()
}

// checkRowGroups checks the layout of data file df of tbl: row groups of
// wantRows rows, in which no series shorter than a row group is cut;
// statistics and a page index on every column chunk; dictionary pages
// for the device and value columns, plain pages for the time column (a
// row group holds three series, so each time repeats three times: fewer
// than timeRepeatsForDictionary).
func checkRowGroups(t *testing.T, tbl *Table, df iceberg.DataFile, wantRows []int64) {
	t.Helper()
	md := parquetMetadata(t, tbl, df.FilePath())
	var got []int64
	for i := range md.NumRowGroups() {
		got = append(got, md.RowGroup(i).NumRows())
	}
	if !slices.Equal(got, wantRows) {
		t.Fatalf("%s: row groups of %v rows, want %v", df.FilePath(), got, wantRows)
	}
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			name := cc.PathInSchema().String()
			if ok, err := cc.StatsSet(); !ok || err != nil {
				t.Errorf("row group %d, column %s: no statistics (%v)", i, name, err)
			} else if st, err := cc.Statistics(); err != nil || !st.HasMinMax() || !st.HasNullCount() {
				t.Errorf("row group %d, column %s: statistics without min, max or null count (%v)", i, name, err)
			}
			if cc.GetColumnIndexLocation() == nil || cc.GetOffsetIndexLocation() == nil {
				t.Errorf("row group %d, column %s: no page index", i, name)
			}
			dict := dictionaryEncoded(cc)
			if want := name != "time"; dict != want {
				t.Errorf("row group %d, column %s: dictionary-encoded %v, want %v (encodings %v)", i, name, dict, want, cc.Encodings())
			}
		}
	}
	// Each short series in one row group: its device is the minimum or the
	// maximum of at most two row groups, and of one unless it is long.
	for _, s := range layoutSeries {
		var in []int
		for i := range md.NumRowGroups() {
			cc, _ := md.RowGroup(i).ColumnChunk(1)
			st, _ := cc.Statistics()
			lo, hi := string(st.EncodeMin()), string(st.EncodeMax())
			if lo <= s.device && s.device <= hi {
				in = append(in, i)
			}
		}
		if limit := int(wantRows[0]); s.rows <= limit && len(in) != 1 {
			t.Errorf("series %s (%d rows) in row groups %v, want one", s.device, s.rows, in)
		}
	}
}

// TestDataFileLayout: appends and compaction write row groups that hold
// whole series, up to write.parquet.row-group-limit rows (a longer series
// fills row groups of its own), with statistics and a page index on every
// column and dictionaries where they pay; the rows are unchanged.
func TestDataFileLayout(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, clock := clockedTable(t, l)
	if got := tbl.Properties()[table.ParquetRowGroupLimitKey]; got != "122880" {
		t.Fatalf("new table: %s=%q, want 122880", table.ParquetRowGroupLimitKey, got)
	}
	if err := tbl.SetProperties(ctx, map[string]string{table.ParquetRowGroupLimitKey: "10000"}, nil); err != nil {
		t.Fatal(err)
	}
	// 9 series of 3,000 rows, one of 25,000, two of 3,000: three series to
	// a row group (a fourth would pass 10,000 rows), the long one in row
	// groups of its own, the last two together.
	want := []int64{9000, 9000, 9000, 10000, 10000, 5000, 6000}
	base := day0.Add(-20 * time.Hour)

	// One append of every row, in one batch.
	all := layoutRows(t, tbl.ArrowSchema(), base, func(int) bool { return true })
	defer all.Release()
	res, err := tbl.Append(ctx, "all", []arrow.RecordBatch{all}, AppendOptions{})
	if err != nil || res.DataFiles != 1 {
		t.Fatalf("append: %+v, %v", res, err)
	}
	files := liveInputs(t, tbl)
	checkRowGroups(t, tbl, files[0], want)
	expectDataFileLike(t, tbl, all, files[0])

	// The same rows in two files whose times interleave, merged by a cold
	// compaction (each file is streamed: 29,000 rows).
	for i := range 2 {
		rec := layoutRows(t, tbl.ArrowSchema(), base.Add(24*time.Hour), func(j int) bool { return j%2 == i })
		if _, err := tbl.Append(ctx, fmt.Sprintf("half-%d", i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	before := scanRows(t, tbl, 0)
	*clock = clock.Add(48 * time.Hour)
	cr, err := tbl.Compact(ctx, CompactOptions{})
	if err != nil || len(cr.Groups) != 1 || cr.Groups[0].FilesIn != 2 || cr.Groups[0].FilesOut != 1 {
		t.Fatalf("compaction: %+v, %v", cr, err)
	}
	if _, streamed := splitMergeInputs(cr.Groups[0].Inputs); len(streamed) != 2 {
		t.Fatalf("%d files streamed, want 2 (the merge)", len(streamed))
	}
	checkRowGroups(t, tbl, cr.Groups[0].Outputs[0], want)
	if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
		t.Fatalf("rows changed by the compaction: %d rows, want %d", len(got), len(before))
	}
	checkSortedFiles(t, tbl)
	requireConformantTable(t, l, tbl)

	// A table without the property (created before it was set) gets the
	// same row groups; one with a value that does not parse too.
	for _, set := range []map[string]string{nil, {table.ParquetRowGroupLimitKey: "many"}} {
		if err := tbl.SetProperties(ctx, set, []string{table.ParquetRowGroupLimitKey}); err != nil {
			t.Fatal(err)
		}
		if lay, err := newDataFileLayout(tbl.view()); err != nil || lay == nil || lay.RowGroupRows() != DefaultRowGroupRows {
			t.Fatalf("layout with %v: %+v, %v; want row groups of %d rows", set, lay, err, DefaultRowGroupRows)
		}
	}
}

// TestTimeDictionaryForShortSeries: a file of many short series sharing
// their times (a fleet's quarter of an hour, more rows than a small file
// holds) has a dictionary on its time column; one whose first row group
// holds a few long series does not (TestDataFileLayout). The rule itself
// is tested in internal/lake/datafile (TestTimeDictionaryPays).
func TestTimeDictionaryForShortSeries(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, _ := clockedTable(t, l)
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	base := day0.Add(-20 * time.Hour)
	for i := range 100 { // 100 series of 100 readings, 3 seconds apart
		for d := range 100 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(3*i) * time.Second).UnixMicro()))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-%03d", d))
			b.Field(2).(*array.Float64Builder).Append(float64((i+d)%50) / 10)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Append(ctx, "minute", []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	files := liveInputs(t, tbl)
	md := parquetMetadata(t, tbl, files[0].FilePath())
	for i := range md.NumRowGroups() {
		cc, err := md.RowGroup(i).ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if name := cc.PathInSchema().String(); name != "time" || !dictionaryEncoded(cc) {
			t.Errorf("row group %d, column %s: encodings %v, want the time column dictionary-encoded", i, name, cc.Encodings())
		}
	}
	expectDataFileLike(t, tbl, rec, files[0])

}

// dictionaryEncoded reports whether a column chunk's data pages are
// dictionary-encoded.
func dictionaryEncoded(cc *metadata.ColumnChunkMetaData) bool {
	for _, es := range cc.EncodingStats() {
		if strings.HasPrefix(es.PageType.String(), "DATA_PAGE") && es.Encoding == parquet.Encodings.RLEDict {
			return true
		}
	}
	return false
}

// expectDataFileLike: df, written by timelake's writer, has the manifest
// entry iceberg-go's writer gives the same rows (counts, bounds,
// partition), and its file the same Parquet schema.
func expectDataFileLike(t *testing.T, tbl *Table, rec arrow.RecordBatch, df iceberg.DataFile) {
	t.Helper()
	ctx := context.Background()
	v := tbl.view()
	sorted, err := datafile.NewSortedRows(memory.DefaultAllocator, v.arrowSc, []arrow.RecordBatch{rec}, v.contract.order())
	if err != nil {
		t.Fatal(err)
	}
	defer sorted.Release()
	var theirs []iceberg.DataFile
	for f, err := range table.WriteRecords(ctx, v.iceberg, v.arrowSc, sorted.Batches(ctx, 0, sorted.Len(), 0), table.WithClusteredWrite()) {
		if err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, f)
	}
	defer tbl.removeFiles(ctx, dataFilePaths(theirs))
	if len(theirs) != 1 {
		t.Fatalf("iceberg-go wrote %d files, want 1", len(theirs))
	}
	o := theirs[0]
	if df.Count() != o.Count() || !maps.Equal(df.ValueCounts(), o.ValueCounts()) || !maps.Equal(df.NullValueCounts(), o.NullValueCounts()) ||
		!maps.EqualFunc(df.LowerBoundValues(), o.LowerBoundValues(), slices.Equal) || !maps.EqualFunc(df.UpperBoundValues(), o.UpperBoundValues(), slices.Equal) ||
		!maps.Equal(df.Partition(), o.Partition()) || df.SpecID() != o.SpecID() || df.FileFormat() != o.FileFormat() || df.ContentType() != o.ContentType() {
		t.Errorf("data file %+v, iceberg-go's %+v", df, o)
	}
	if a, b := pathFolder(df.FilePath()), pathFolder(o.FilePath()); a != b {
		t.Errorf("data file in %s, iceberg-go's in %s", a, b)
	}
	ours, their := parquetMetadata(t, tbl, df.FilePath()), parquetMetadata(t, tbl, o.FilePath())
	if !ours.Schema.Equals(their.Schema) {
		t.Errorf("Parquet schema %s, iceberg-go's %s", ours.Schema, their.Schema)
	}
}

func pathFolder(p string) string { return p[:strings.LastIndex(p, "/")] }

// TestCompressionNoFileCanBeWrittenWith: a table whose Parquet level or
// codec another tool set to one no data file can be written with (a gzip
// level of 10 made arrow-go's writer panic on every file, which quarantined
// good landing files as broken) refuses appends and compaction with an
// error naming the property and the fix; nothing is written.
func TestCompressionNoFileCanBeWrittenWith(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "gw/a.csv", day0, 10)
	appendRows(t, tbl, "gw/b.csv", day0, 10)
	if err := tbl.SetProperties(ctx, map[string]string{table.ParquetCompressionKey: "gzip", table.ParquetCompressionLevelKey: "10"}, nil); err != nil {
		t.Fatal(err)
	}
	rec := rows(t, tbl.ArrowSchema(), day0, 10, false)
	defer rec.Release()
	_, err := tbl.Append(ctx, "gw/c.csv", []arrow.RecordBatch{rec}, AppendOptions{})
	const want = `write.parquet.compression-level="10": expected a gzip level from 1 to 9`
	if err == nil || decode.IsPanic(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("append: %v, want an error naming %s", err, want)
	}
	if _, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2}); err == nil || decode.IsPanic(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("compact: %v, want an error naming %s", err, want)
	}
	if got := scanCount(t, tbl); got != 20 {
		t.Fatalf("%d rows, want 20", got)
	}
}
