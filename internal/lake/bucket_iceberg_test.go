package lake

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// TestBucketAgreesWithIceberg: the hour and day of a time are those of
// iceberg-go's hour and day transforms, on random and extreme microsecond
// and nanosecond values, and a time in seconds or milliseconds is in the
// hour and day of the same instant in microseconds; no unit's extreme value
// panics.
func TestBucketAgreesWithIceberg(t *testing.T) {
	day := func(typ iceberg.Type) func(any) iceberg.Optional[int32] {
		f, err := iceberg.DayTransform{}.Transformer(typ)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	hour := func(typ iceberg.Type) func(any) iceberg.Optional[int32] {
		f, err := iceberg.HourTransform{}.Transformer(typ)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	dayUs, hourUs := day(iceberg.PrimitiveTypes.TimestampTz), hour(iceberg.PrimitiveTypes.TimestampTz)
	dayNs, hourNs := day(iceberg.PrimitiveTypes.TimestampTzNs), hour(iceberg.PrimitiveTypes.TimestampTzNs)
	rng := rand.New(rand.NewPCG(3, 9))
	// Hours that fit an int32, as Iceberg's transforms return them.
	const maxMicros = int64(math.MaxInt32) * 3600e6
	vals := []int64{0, -1, 1, -3600e6, -3600e6 - 1, -86400e6, -86400e6 + 1, -86400e6 - 1, maxMicros, -maxMicros}
	for range 100_000 {
		switch rng.IntN(3) {
		case 0:
			vals = append(vals, rng.Int64N(maxMicros)-rng.Int64N(maxMicros))
		case 1:
			vals = append(vals, rng.Int64N(2e17)-1e17)
		default:
			vals = append(vals, rng.Int64N(4e12)-2e12)
		}
	}
	for _, v := range vals {
		if got, want := Day.bucket(arrow.Timestamp(v), arrow.Microsecond), int64(dayUs(iceberg.Timestamp(v)).Val); got != want {
			t.Fatalf("%d µs: day %d, Iceberg %d", v, got, want)
		}
		if got, want := Hour.bucket(arrow.Timestamp(v), arrow.Microsecond), int64(hourUs(iceberg.Timestamp(v)).Val); got != want {
			t.Fatalf("%d µs: hour %d, Iceberg %d", v, got, want)
		}
		if got, want := Day.bucket(arrow.Timestamp(v), arrow.Nanosecond), int64(dayNs(iceberg.TimestampNano(v)).Val); got != want {
			t.Fatalf("%d ns: day %d, Iceberg %d", v, got, want)
		}
		if got, want := Hour.bucket(arrow.Timestamp(v), arrow.Nanosecond), int64(hourNs(iceberg.TimestampNano(v)).Val); got != want {
			t.Fatalf("%d ns: hour %d, Iceberg %d", v, got, want)
		}
		for unit, per := range map[arrow.TimeUnit]int64{arrow.Second: 1e6, arrow.Millisecond: 1e3} {
			w := v / per
			if w > math.MaxInt64/per || w < math.MinInt64/per {
				continue
			}
			for _, g := range []Granularity{Day, Hour, Month} {
				if got, want := g.bucket(arrow.Timestamp(w), unit), g.bucket(arrow.Timestamp(w*per), arrow.Microsecond); got != want {
					t.Fatalf("%s: %d %s: %d, %d in µs", g, w, unit, got, want)
				}
			}
		}
	}
	units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
	for _, unit := range units {
		for _, g := range []Granularity{Day, Hour, Month} {
			lo, hi := g.bucket(math.MinInt64, unit), g.bucket(math.MaxInt64, unit)
			if unit != arrow.Second && lo > hi { // seconds overflow time.Time's year
				t.Errorf("%s in %s: the first time's bucket %d is after the last's %d", g, unit, lo, hi)
			}
		}
	}
}
