package maintenance

import (
	"time"

	"github.com/apache/iceberg-go"
)

// PartitionEnd is the end of a data file's time partition (the start of
// the next year, month, day or hour of the time column, the Iceberg
// spec's "Partition Transforms"); ok is false when its spec partitions by
// no such transform of the time column. Retention drops a file whose
// partition ended before its cutoff.
func PartitionEnd(spec iceberg.PartitionSpec, timeID int, partition map[int]any) (time.Time, bool) {
	if timeID < 0 {
		return time.Time{}, false
	}
	for i := range spec.NumFields() {
		pf := spec.Field(i)
		if pf.SourceID() != timeID {
			continue
		}
		raw, ok := partition[pf.FieldID]
		if !ok || raw == nil {
			return time.Time{}, false
		}
		var n int64
		switch v := raw.(type) {
		case int32:
			n = int64(v)
		case int64:
			n = v
		case iceberg.Date:
			n = int64(v)
		default:
			return time.Time{}, false
		}
		epoch := time.Unix(0, 0).UTC()
		switch pf.Transform.(type) {
		case iceberg.HourTransform:
			return epoch.Add(time.Duration(n+1) * time.Hour), true
		case iceberg.DayTransform:
			return epoch.AddDate(0, 0, int(n)+1), true
		case iceberg.MonthTransform:
			return epoch.AddDate(0, int(n)+1, 0), true
		case iceberg.YearTransform:
			return epoch.AddDate(int(n)+1, 0, 0), true
		}
	}
	return time.Time{}, false
}
