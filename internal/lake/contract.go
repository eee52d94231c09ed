package lake

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/tablename"
)

// Table properties of the Timelake table contract (docs/table-format.md,
// "Contract properties"). Unknown properties are kept untouched.
const (
	PropTimeColumn    = "timelake.time-column"
	PropSeriesKey     = "timelake.series-key"
	PropChunk         = "timelake.chunk"
	PropFormatVersion = "timelake.format-version"
	// PropEvolve is the schema changes a landing file may bring when ingest
	// (or serve) runs without --evolve: off, add-columns or widen
	// (docs/schema.md).
	PropEvolve = "timelake.evolve"
)

// Snapshot summary properties written by Append next to the standard Iceberg
// counters (added-records, added-data-files, added-files-size, total-*).
const (
	SummaryBatchID      = tablemeta.SummaryBatchID
	SummarySourceSize   = "timelake.source-size"
	SummarySourceSHA256 = tablemeta.SummarySourceSHA256
	SummarySourceETag   = "timelake.source-etag"
	// SummaryContentSHA256 is the hex SHA-256 of the landing file's
	// decompressed bytes, written when it was compressed (otherwise it
	// equals timelake.source-sha256): content dedupe compares it.
	SummaryContentSHA256 = tablemeta.SummaryContentSHA256
	// SummarySourceModified is the landing object's modification time
	// (RFC 3339, UTC): when it landed.
	SummarySourceModified = "timelake.source-modified"
	// SummaryLoadedBy says how the key reached the loader: poll (a cron
	// ingest's listing), notification or sweep (serve).
	SummaryLoadedBy = "timelake.loaded-by"
	// SummaryMaxRowTime is the newest value of the time column among the
	// batch's rows (RFC 3339, UTC, microseconds), from its data files'
	// upper bounds; written by Prepare.
	SummaryMaxRowTime = "timelake.max-row-time"
	// SummaryRejectedRows counts the rows of the landing file set aside
	// under --on-error skip-rows, SummaryRejectsFile names the rejects
	// file (in the landing bucket) that holds them.
	SummaryRejectedRows = "timelake.rejected-rows"
	SummaryRejectsFile  = "timelake.rejects-file"
)

// SupportedFormatMajor is the newest major version of the
// timelake.format-version property this writer understands. A table whose
// property has a higher major version is refused (docs/table-format.md,
// "Contract properties"); a table without the property is the oldest format.
// Tables created here do not set the property.
const SupportedFormatMajor = 1

// ErrUnsupportedFormat is returned for tables whose timelake.format-version is
// newer than SupportedFormatMajor.
var ErrUnsupportedFormat = errors.New("table format is newer than this timelake understands")

// Granularity is the time partition granularity: hour, day or month.
type Granularity string

// The partition granularities of timelake.chunk.
const (
	Hour  Granularity = "hour"
	Day   Granularity = "day"
	Month Granularity = "month"
)

// ParseGranularity accepts hour, day or month (case-insensitive); "" is day.
func ParseGranularity(s string) (Granularity, error) {
	switch g := Granularity(strings.ToLower(strings.TrimSpace(s))); g {
	case "":
		return Day, nil
	case Hour, Day, Month:
		return g, nil
	}
	return "", fmt.Errorf("invalid partition granularity %q (expected hour, day or month)", s)
}

func (g Granularity) transform() iceberg.Transform {
	switch g {
	case Hour:
		return iceberg.HourTransform{}
	case Month:
		return iceberg.MonthTransform{}
	}
	return iceberg.DayTransform{}
}

// bucket maps a timestamp to its partition ordinal, monotonic in time: the
// hour or the day since the epoch, rounded down (a time before 1970 is in
// the hour or day Iceberg's transform gives it), or the month's year*12 +
// month. It works on the integer value: the sort calls it for every row.
func (g Granularity) bucket(v arrow.Timestamp, unit arrow.TimeUnit) int64 {
	sec := floorDiv(int64(v), unitsPerSecond(unit))
	switch g {
	case Hour:
		return floorDiv(sec, 3600)
	case Month:
		t := time.Unix(sec, 0).UTC()
		return int64(t.Year())*12 + int64(t.Month())
	}
	return floorDiv(sec, 86400)
}

// unitsPerSecond is the number of ticks of unit in a second.
func unitsPerSecond(unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Millisecond:
		return 1e3
	case arrow.Microsecond:
		return 1e6
	case arrow.Nanosecond:
		return 1e9
	}
	return 1
}

// floorDiv is a / b rounded down (toward minus infinity), for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// Contract is a table's time-series contract, read from its properties.
type Contract struct {
	TimeColumn string      // timelake.time-column
	SeriesKey  []string    // timelake.series-key, comma-separated
	Chunk      Granularity // timelake.chunk, partition granularity
}

// ContractOf reads the contract of a table's metadata (pure: for fixtures
// and other readers as well as loaded tables).
func ContractOf(meta table.Metadata) (Contract, error) {
	return contractFromProps(meta.Properties(), meta.CurrentSchema())
}

func contractFromProps(props iceberg.Properties, sc *iceberg.Schema) (Contract, error) {
	c := Contract{TimeColumn: props[PropTimeColumn], Chunk: Day}
	if v := props[PropSeriesKey]; v != "" {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				c.SeriesKey = append(c.SeriesKey, k)
			}
		}
	}
	if v := props[PropChunk]; v != "" {
		g, err := ParseGranularity(v)
		if err != nil {
			return Contract{}, err
		}
		c.Chunk = g
	}
	if c.TimeColumn == "" {
		// A table written by another Iceberg writer: take its first
		// timestamptz column.
		for _, f := range sc.Fields() {
			if _, ok := f.Type.(iceberg.TimestampTzType); ok {
				c.TimeColumn = f.Name
				break
			}
		}
	}
	return c, nil
}

// checkFormatVersion refuses a timelake.format-version whose major part is
// newer than SupportedFormatMajor.
func checkFormatVersion(props iceberg.Properties) error {
	v := strings.TrimPrefix(strings.TrimSpace(props[PropFormatVersion]), "v")
	if v == "" {
		return nil
	}
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return fmt.Errorf("%w: cannot read %s=%q", ErrUnsupportedFormat, PropFormatVersion, props[PropFormatVersion])
	}
	if major > SupportedFormatMajor {
		return fmt.Errorf("%w: %s=%s, this version writes format %d.x", ErrUnsupportedFormat, PropFormatVersion, props[PropFormatVersion], SupportedFormatMajor)
	}
	return nil
}

// TableName is a namespace-qualified table name (internal/tablename).
type TableName = tablename.Name

// ParseTableName parses "ns.table" (tablename.Parse).
func ParseTableName(s string) (TableName, error) { return tablename.Parse(s) }

// BatchInfo says where a batch id was committed.
type BatchInfo struct {
	BatchID     string
	SnapshotID  int64
	CommittedAt time.Time // UTC, from the snapshot's timestamp-ms
	Rows        int64     // added-records
	DataFiles   int64     // added-data-files
	Bytes       int64     // added-files-size
	Summary     map[string]string
	// FromHistory is set when the batch is known from the load history:
	// its snapshot has expired (Rows and the source facts remain).
	FromHistory bool
}
