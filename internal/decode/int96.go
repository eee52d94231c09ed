package decode

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// int96NanosOfDay is the number of nanoseconds in a day: an INT96 time of
// day must be less.
const int96NanosOfDay = 86_400_000_000_000

// julianUnixEpoch is the Julian day number of 1970-01-01, the day INT96
// timestamps count from.
const julianUnixEpoch = 2_440_588

// Int96Problem words an INT96 value pqarrow cannot read: its value as text
// (the instant, or its day and time of day) and the reason.
func Int96Problem(v [12]byte) (value, reason string) {
	nanos := binary.LittleEndian.Uint64(v[:8])
	day := binary.LittleEndian.Uint32(v[8:])
	if nanos >= int96NanosOfDay {
		value = fmt.Sprintf("Julian day %d, %d ns into the day", day, nanos)
		return value, fmt.Sprintf("INT96 timestamp %s has a time of day of %d ns, not less than the %d ns of a day: not a valid INT96 timestamp (its writer is broken)",
			quoteValue(value), nanos, int64(int96NanosOfDay))
	}
	t := time.Unix((int64(day)-julianUnixEpoch)*86400, int64(nanos)).UTC()
	value = t.Format(time.RFC3339Nano)
	return value, fmt.Sprintf("INT96 timestamp %s is outside the range INT96 timestamps are read in, that of a nanosecond timestamp (%s to %s): write the column as TIMESTAMP(MICROS) instead (in Spark, spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS)",
		value, time.Unix(0, math.MinInt64).UTC().Format(time.RFC3339Nano), time.Unix(0, math.MaxInt64).UTC().Format(time.RFC3339Nano))
}
