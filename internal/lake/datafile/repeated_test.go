package datafile

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/testutil/corpus"
)

var repeatedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "dev", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "site", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// repeatedRow is one row of repeatedSchema; a nil pointer is a null.
type repeatedRow struct {
	time int64
	dev  *string
	site *int64
	n    *int32
	v    float64
}

// repeatedBatches builds rows of repeatedSchema in batches of the given
// sizes (cycled; the rest in a last batch).
func repeatedBatches(t testing.TB, rows []repeatedRow, sizes []int) []arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, repeatedSchema)
	defer b.Release()
	var out []arrow.RecordBatch
	t.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	size := 0
	for _, r := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.time))
		if r.dev == nil {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.dev)
		}
		if r.site == nil {
			b.Field(2).(*array.Int64Builder).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(*r.site)
		}
		if r.n == nil {
			b.Field(3).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(*r.n)
		}
		b.Field(4).(*array.Float64Builder).Append(r.v)
		size++
		if len(sizes) > 0 && size == sizes[len(out)%len(sizes)] {
			out = append(out, b.NewRecordBatch())
			size = 0
		}
	}
	if size > 0 {
		out = append(out, b.NewRecordBatch())
	}
	return out
}

// referenceRepeated counts the rows whose (series key, time) an earlier
// row has, with a map of the keys seen: 0 without a series key.
func referenceRepeated(rows []repeatedRow, seriesKey []string) int64 {
	if len(seriesKey) == 0 {
		return 0
	}
	seen := map[string]bool{}
	var n int64
	for _, r := range rows {
		var k strings.Builder
		fmt.Fprintf(&k, "%d", r.time)
		for _, c := range seriesKey {
			var v any
			switch c {
			case "dev":
				if r.dev != nil {
					v = *r.dev
				}
			case "site":
				if r.site != nil {
					v = *r.site
				}
			case "n":
				if r.n != nil {
					v = *r.n
				}
			case "v":
				v = r.v
			}
			fmt.Fprintf(&k, "|%#v", v) // nil for a null, a quoted string, a number
		}
		if seen[k.String()] {
			n++
		}
		seen[k.String()] = true
	}
	return n
}

// checkRepeated compares RepeatedRows of NewSortedRows and NewNewestRows
// with the reference; under NewNewestRows the rows left out are the
// repeated ones.
func checkRepeated(t *testing.T, rows []repeatedRow, sizes []int, o Order) {
	t.Helper()
	recs := repeatedBatches(t, rows, sizes)
	want := referenceRepeated(rows, o.SeriesKey)
	for _, newest := range []bool{false, true} {
		s, err := newSortedRows(memory.DefaultAllocator, repeatedSchema, recs, o, newest, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, kept := s.RepeatedRows(), s.Len()
		s.Release()
		if got != want {
			t.Fatalf("series key %q, newest %v, %d rows in batches of %v: %d repeated rows, want %d", o.SeriesKey, newest, len(rows), sizes, got, want)
		}
		if newest && len(o.SeriesKey) > 0 && int64(len(rows)-kept) != got {
			t.Fatalf("series key %q: newest kept %d of %d rows, but %d are repeated", o.SeriesKey, kept, len(rows), got)
		}
	}
}

// randomRepeatedRows builds n rows of few devices, sites and times over
// three days (out of order, so that rows of one key span partitions),
// with nulls in the keys and rows repeated as they are.
func randomRepeatedRows(rng *rand.Rand, n int) []repeatedRow {
	base := time.Date(2026, 1, 5, 22, 0, 0, 0, time.UTC)
	devs := []string{"b", "a", "", "aa", "c"}
	instants := 1 + rng.IntN(40)
	var rows []repeatedRow
	for len(rows) < n {
		if len(rows) > 0 && rng.IntN(6) == 0 {
			rows = append(rows, rows[rng.IntN(len(rows))]) // a row sent twice
			continue
		}
		r := repeatedRow{
			time: base.Add(time.Duration(rng.IntN(instants)) * 107 * time.Minute).UnixMicro(),
			v:    float64(rng.IntN(3)) - 1,
		}
		if rng.IntN(8) != 0 {
			r.dev = &devs[rng.IntN(len(devs))]
		}
		if rng.IntN(8) != 0 {
			s := int64(rng.IntN(3)) - 1
			r.site = &s
		}
		if rng.IntN(8) != 0 {
			i := int32(rng.IntN(4))
			r.n = &i
		}
		rows = append(rows, r)
	}
	return rows
}

var repeatedKeys = [][]string{nil, {"dev"}, {"site"}, {"n"}, {"v"}, {"dev", "site"}, {"site", "dev"}, {"n", "v"}, {"dev", "site", "n"}}

// TestRepeatedRowsMatchesReference: RepeatedRows counts what a map of the
// (series key, time) seen counts, on random rows in several batches, by
// string, integer and float keys of one to three columns (three take the
// comparators' sort), under hourly, daily and monthly partitions.
func TestRepeatedRowsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 60 {
		rows := randomRepeatedRows(rng, 1+rng.IntN(400))
		sizes := []int{1 + rng.IntN(50), 1 + rng.IntN(200)}
		g := chunks[iter%len(chunks)]
		for _, k := range repeatedKeys {
			checkRepeated(t, rows, sizes, Order{TimeColumn: "time", SeriesKey: k, Partition: g.partition})
		}
	}
	// Rows in table order already (no permutation): the same count.
	rows := []repeatedRow{{time: 1}, {time: 1}, {time: 2}, {time: 3}, {time: 3}, {time: 3}}
	checkRepeated(t, rows, []int{4}, dailyOrder("dev"))
}

// TestRepeatedRowsCases: one time of 100 rows of 40 devices (60 repeats),
// then three rows out of order of which the null device repeats once, in
// batches of 7. Also: a float key's -0 is 0; an unknown series key column
// is an error.
func TestRepeatedRowsCases(t *testing.T) {
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	var rows []repeatedRow
	devs := make([]string, 40)
	for i := range devs {
		devs[i] = fmt.Sprintf("d%d", i)
	}
	for i := range 100 {
		n := int32(i)
		rows = append(rows, repeatedRow{time: base.UnixMicro(), dev: &devs[i%40], n: &n})
	}
	one, two, three := int32(1), int32(2), int32(3)
	early := base.Add(-time.Hour).UnixMicro()
	rows = append(rows, repeatedRow{time: early, n: &one}, repeatedRow{time: early, n: &two}, repeatedRow{time: early, dev: &devs[1], n: &three})
	recs := repeatedBatches(t, rows, []int{7})
	for _, tc := range []struct {
		key  []string
		want int64
	}{{[]string{"dev"}, 61}, {[]string{"dev", "n"}, 0}, {nil, 0}} {
		s, err := NewSortedRows(memory.DefaultAllocator, repeatedSchema, recs, dailyOrder(tc.key...))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.RepeatedRows(); got != tc.want {
			t.Errorf("by %q: %d repeated rows, want %d", tc.key, got, tc.want)
		}
		s.Release()
	}
	if s, err := NewSortedRows(memory.DefaultAllocator, repeatedSchema, recs, dailyOrder("site2")); err == nil {
		s.Release()
		t.Error("an unknown series key column is no error")
	}

	// -0 and 0 are one key, as the sort orders them.
	zeros := repeatedBatches(t, []repeatedRow{{time: 1, v: 0}, {time: 1, v: -1}, {time: 1, v: negZero()}}, nil)
	s, err := NewSortedRows(memory.DefaultAllocator, repeatedSchema, zeros, dailyOrder("v"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if got := s.RepeatedRows(); got != 1 {
		t.Errorf("keys 0, -1, -0: %d repeated rows, want 1", got)
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

// FuzzRepeatedRows: RepeatedRows against the reference on rows drawn from
// the input, each byte a row: its low bits the time, then the device, the
// site and whether to repeat the row before it.
func FuzzRepeatedRows(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0x80, 2, 0x43, 0x43, 0xff})
	f.Add([]byte("timelake repeated rows"))
	devs := []string{"a", "b"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 2000 {
			return
		}
		var rows []repeatedRow
		for _, c := range data {
			if c&0x80 != 0 && len(rows) > 0 {
				rows = append(rows, rows[len(rows)-1])
				continue
			}
			r := repeatedRow{time: int64(c&0x7) * int64(9*time.Hour/time.Microsecond)}
			if d := int(c>>3) & 0x3; d < len(devs) {
				r.dev = &devs[d]
			}
			if c&0x20 != 0 {
				s := int64(c>>6) & 1
				r.site = &s
			}
			rows = append(rows, r)
		}
		for _, k := range [][]string{{"dev"}, {"dev", "site"}, {"site", "dev", "n"}} {
			checkRepeated(t, rows, []int{1 + len(data)%5}, dailyOrder(k...))
		}
	})
}

// TestCorpusRepeatedRows: the files of the regression corpus that have a
// series key, decoded as ingest decodes them into their table, repeat as
// many rows as the corpus says (duplicate_rows).
func TestCorpusRepeatedRows(t *testing.T) {
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range cases {
		if len(c.SeriesKey) == 0 || c.Refused != nil || c.Table == nil {
			continue
		}
		t.Run(c.File, func(t *testing.T) {
			data, err := os.ReadFile(c.Path())
			if err != nil {
				t.Fatal(err)
			}
			loc, err := c.Location()
			if err != nil {
				t.Fatal(err)
			}
			types, err := c.Types()
			if err != nil {
				t.Fatal(err)
			}
			sc, err := c.IcebergSchema()
			if err != nil {
				t.Fatal(err)
			}
			target, err := table.SchemaToArrowSchema(sc, nil, true, false)
			if err != nil {
				t.Fatal(err)
			}
			d, err := decode.Decode(context.Background(), decode.Source{Key: c.File, R: bytes.NewReader(data), Size: int64(len(data))},
				decode.DecodeOptions{Target: target, TimeColumn: c.Time(), TimeUnit: c.TimeUnit, AssumeLocation: loc, Columns: types,
					CSV: decode.CSV{Delimiter: c.Delimiter(), DecimalComma: c.CSVDecimalComma, Null: c.CSVNull}, BatchRows: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			s, err := NewSortedRows(memory.DefaultAllocator, d.Schema, d.Records, Order{TimeColumn: d.TimeColumn, SeriesKey: c.SeriesKey, Partition: byDay})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			if got := s.RepeatedRows(); got != c.DuplicateRows {
				t.Errorf("%d repeated rows, want %d", got, c.DuplicateRows)
			}
		})
		checked++
	}
	if checked == 0 {
		t.Fatal("no corpus case with a series key")
	}
}
