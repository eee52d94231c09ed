package lake

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// TestBucketRoundsDown: a time's partition ordinal is the hour or day
// Iceberg's transform gives it, before 1970 too (rounded down, not toward
// zero), in every unit, and a month is its year and month.
func TestBucketRoundsDown(t *testing.T) {
	times := []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 30, 12, 30, 0, 0, time.UTC),
		time.Date(1900, 2, 28, 1, 0, 0, 1_000, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 59, 59, 0, time.UTC),
		time.Date(2026, 12, 6, 19, 30, 0, 500_000, time.UTC),
	}
	units := map[arrow.TimeUnit]time.Duration{arrow.Second: time.Second, arrow.Millisecond: time.Millisecond,
		arrow.Microsecond: time.Microsecond, arrow.Nanosecond: time.Nanosecond}
	for _, tm := range times {
		for unit, d := range units {
			tm := tm.Truncate(d)
			v := arrow.Timestamp(tm.Sub(time.Unix(0, 0)) / d)
			if tm.Year() < 1678 && unit == arrow.Nanosecond {
				continue // not representable
			}
			wantDay := tm.Truncate(24*time.Hour).Unix() / 86400
			wantHour := tm.Truncate(time.Hour).Unix() / 3600
			wantMonth := int64(tm.Year())*12 + int64(tm.Month())
			if got := Day.bucket(v, unit); got != wantDay {
				t.Errorf("%s in %s: day %d, want %d", tm, unit, got, wantDay)
			}
			if got := Hour.bucket(v, unit); got != wantHour {
				t.Errorf("%s in %s: hour %d, want %d", tm, unit, got, wantHour)
			}
			if got := Month.bucket(v, unit); got != wantMonth {
				t.Errorf("%s in %s: month %d, want %d", tm, unit, got, wantMonth)
			}
		}
	}
}

// TestAppendAcrossTheEpoch: a file whose rows span midnight of 1970-01-01
// (and days before it) loads, each data file in the day of its rows (the
// order's partitions used to round toward zero and put 1969-12-31 and
// 1970-01-01 in one, which failed the append).
func TestAppendAcrossTheEpoch(t *testing.T) {
	for _, g := range []Granularity{Day, Hour} {
		l := newLocalLake(t)
		tbl, err := l.CreateTable(context.Background(), testName, testSchema,
			CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}, Partition: g})
		if err != nil {
			t.Fatal(err)
		}
		// 3,000 minutes from 1969-12-30T00:00 on.
		appendRows(t, tbl, "b", time.Date(1969, 12, 30, 0, 0, 0, 0, time.UTC), 3000)
		tasks, err := tbl.Iceberg().Scan().PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var rows int64
		for _, task := range tasks {
			f := task.File
			rows += f.Count()
			lo, hi := f.LowerBoundValues()[1], f.UpperBoundValues()[1]
			if len(lo) != 8 || len(hi) != 8 {
				t.Fatalf("%s: %s: time bounds %v and %v", g, f.FilePath(), lo, hi)
			}
			first, last := littleEndianMicros(lo), littleEndianMicros(hi)
			var part int64
			for _, v := range f.Partition() {
				switch v := v.(type) {
				case iceberg.Date:
					part = int64(v)
				case int32:
					part = int64(v)
				default:
					t.Fatalf("%s: partition value %v (%T)", g, v, v)
				}
			}
			if a, b := g.bucket(arrow.Timestamp(first), arrow.Microsecond), g.bucket(arrow.Timestamp(last), arrow.Microsecond); a != part || b != part {
				t.Errorf("%s: %s in partition %d holds rows of %d to %d", g, f.FilePath(), part, a, b)
			}
		}
		if rows != 3000 {
			t.Errorf("%s: %d rows in the data files, want 3000", g, rows)
		}
	}
}

func littleEndianMicros(b []byte) int64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return int64(v)
}
