package datafile

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSortPermutationMatchesComparators checks the flat-key sort against
// the generic comparators (partition, series key with nulls first, time,
// then row order) on random rows with string, float and int keys.
func TestSortPermutationMatchesComparators(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "dev", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 1, 5, 20, 0, 0, 0, time.UTC)
	for range 2000 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(rng.IntN(10*3600)) * time.Second).UnixMicro()))
		if rng.IntN(10) == 0 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append([]string{"b", "a", "c", "aa", ""}[rng.IntN(5)])
		}
		if rng.IntN(10) == 0 {
			b.Field(2).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append([]float64{-1.5, 0, 2, -0.25, 1e9}[rng.IntN(5)])
		}
		if rng.IntN(10) == 0 {
			b.Field(3).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(7) - 3))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	cols := rec.Columns()
	times := cols[0].(*array.Timestamp)
	for _, tc := range []struct {
		name string
		keys []string
	}{{"none", nil}, {"string", []string{"dev"}}, {"string and float", []string{"dev", "f"}}, {"int and string", []string{"i", "dev"}}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, g := range chunks {
				cmps := []func(i, j int) int{func(i, j int) int {
					return cmpInt(g.partition(times.Value(i), arrow.Microsecond), g.partition(times.Value(j), arrow.Microsecond))
				}}
				for _, k := range tc.keys {
					c, err := columnComparator(cols[sc.FieldIndices(k)[0]])
					if err != nil {
						t.Fatal(err)
					}
					cmps = append(cmps, c)
				}
				cmps = append(cmps, func(i, j int) int { return cmpInt(int64(times.Value(i)), int64(times.Value(j))) })
				want := make([]int64, times.Len())
				for i := range want {
					want[i] = int64(i)
				}
				sort.SliceStable(want, func(a, b int) bool { return less(cmps, int(want[a]), int(want[b])) })
				got, _, err := sortPermutation(cols, sc, times, partitionOrdinals(times, arrow.Microsecond, g.partition), tc.keys, cmps, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: flat-key order differs from the comparators", g.name)
				}
			}
		})
	}
}

// chunks are the partitions of timelake.chunk (hour, day, month), as
// internal/lake's Granularity numbers them (hours and days rounded down).
var chunks = []struct {
	name      string
	partition func(arrow.Timestamp, arrow.TimeUnit) int64
}{
	{"hour", func(v arrow.Timestamp, unit arrow.TimeUnit) int64 {
		return v.ToTime(unit).Truncate(time.Hour).Unix() / 3600
	}},
	{"day", byDay},
	{"month", func(v arrow.Timestamp, unit arrow.TimeUnit) int64 {
		t := v.ToTime(unit)
		return int64(t.Year())*12 + int64(t.Month())
	}},
}

// byDay is the partition ordinal of a daily table.
func byDay(v arrow.Timestamp, unit arrow.TimeUnit) int64 {
	return v.ToTime(unit).Truncate(24*time.Hour).Unix() / 86400
}

// dailyOrder is the order of a daily table of the given series key.
func dailyOrder(seriesKey ...string) Order {
	return Order{TimeColumn: "time", SeriesKey: seriesKey, Partition: byDay}
}
