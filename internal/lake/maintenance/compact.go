package maintenance

import (
	"strconv"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/settings/quantity"
)

// TierBase is the upper bound of the smallest size tier.
const TierBase = 64 << 10

// The estimate of a rewrite's time (lake.CompactOptions.Deadline): a
// fixed cost per group (reading its files' footers, writing and uploading
// a file) and its rows at the table's measured rate, or at
// DefaultRewriteRate until one is measured (about half what a merge of
// well-compressed gateway files reaches on a busy 2-core machine,
// BenchmarkRewriteGroup in internal/lake). A group of fewer than
// RateSampleRows rows is too small to measure the rate by.
const (
	RewriteOverhead    = 200 * time.Millisecond
	DefaultRewriteRate = 250_000.0 // rows per second
	RateSampleRows     = 100_000
	RateFloorTime      = 20 * time.Millisecond
)

// RewriteEstimate is how long rewriting rows is expected to take at rate
// rows per second.
func RewriteEstimate(rows int64, rate float64) time.Duration {
	return RewriteOverhead + time.Duration(float64(rows)/rate*float64(time.Second))
}

// CompactSettings are the resolved compaction settings of a table.
type CompactSettings struct {
	Target    int64
	MinFiles  int
	ColdAfter time.Duration
	Dedupe    bool // timelake.read-dedup: one row per series key and time (internal/lake/dedupe.go)
	// FromProperties names the properties that gave a value.
	FromProperties []string
}

// CompactSettingsOf resolves the compaction settings: target, minFiles and
// coldAfter when set (the options of a compaction), else the table's
// properties, else the defaults.
func CompactSettingsOf(props iceberg.Properties, target int64, minFiles int, coldAfter time.Duration) CompactSettings {
	s := CompactSettings{Target: target, MinFiles: minFiles, ColdAfter: coldAfter}
	if s.Target <= 0 {
		s.Target = DefaultTargetFileSize
		if v, err := quantity.ParseSize(props[PropTargetFileSize]); err == nil && v > 0 {
			s.Target = v
			s.FromProperties = append(s.FromProperties, PropTargetFileSize)
		}
	}
	if s.MinFiles <= 1 {
		s.MinFiles = DefaultCompactMinFiles
		if v, err := strconv.Atoi(props[PropCompactMinFiles]); err == nil && v >= 2 {
			s.MinFiles = v
			s.FromProperties = append(s.FromProperties, PropCompactMinFiles)
		}
	}
	s.Dedupe, _ = strconv.ParseBool(props[PropReadDedup])
	if s.ColdAfter <= 0 {
		s.ColdAfter = DefaultCompactColdAfter
		if v, err := quantity.ParseAge(props[PropCompactColdAfter]); err == nil && v > 0 {
			s.ColdAfter = v
			s.FromProperties = append(s.FromProperties, PropCompactColdAfter)
		}
	}
	return s
}

// SizeTier is the tier of a file of n bytes: 0 below TierBase, then one
// more per factor of minFiles.
func SizeTier(n int64, minFiles int) int {
	t := 0
	for limit := int64(TierBase); n >= limit; limit *= int64(minFiles) {
		t++
	}
	return t
}

// ColdSlack is how early a partition is compacted as cold: up to a
// minute (a tenth of coldAfter when that is shorter) before its newest file
// passes coldAfter. Maintenance runs once a minute after ingest, so the
// round before the partition turns cold compacts it, and a reader never
// finds a partition past coldAfter with its small files still apart.
func ColdSlack(coldAfter time.Duration) time.Duration {
	return min(time.Minute, coldAfter/10)
}
