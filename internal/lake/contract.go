package lake

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Table properties of the Timelake table contract (timelake-format.md,
// "Table contract"). Unknown properties are kept untouched.
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
	SummaryBatchID      = "timelake.batch-id"
	SummarySourceSize   = "timelake.source-size"
	SummarySourceSHA256 = "timelake.source-sha256"
	SummarySourceETag   = "timelake.source-etag"
	// SummaryContentSHA256 is the hex SHA-256 of the landing file's
	// decompressed bytes, written when it was compressed (otherwise it
	// equals timelake.source-sha256): content dedupe compares it.
	SummaryContentSHA256 = "timelake.content-sha256"
	// SummaryRejectedRows counts the rows of the landing file set aside
	// under --on-error skip-rows, SummaryRejectsFile names the rejects
	// file (in the landing bucket) that holds them.
	SummaryRejectedRows = "timelake.rejected-rows"
	SummaryRejectsFile  = "timelake.rejects-file"
)

// SupportedFormatMajor is the newest major version of the
// timelake.format-version property this writer understands. A table whose
// property has a higher major version is refused (timelake-format.md, commit
// protocol point 5); a table without the property is the oldest format.
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

// bucket maps a timestamp to its partition ordinal, monotonic in time.
func (g Granularity) bucket(v arrow.Timestamp, unit arrow.TimeUnit) int64 {
	t := v.ToTime(unit)
	switch g {
	case Hour:
		return t.Unix() / 3600
	case Month:
		return int64(t.Year())*12 + int64(t.Month())
	}
	return t.Unix() / 86400
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

// namePart is the rule for each part of a table name: names become path
// segments (timelake-format.md, "Layout").
var namePart = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// TableName is a namespace-qualified table name.
type TableName struct {
	Namespace string
	Name      string
}

// String renders ns.table.
func (n TableName) String() string { return n.Namespace + "." + n.Name }

// ParseTableName parses "ns.table"; a bare "table" is in namespace "default".
// Each part must match [A-Za-z0-9_-]+.
func ParseTableName(s string) (TableName, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	var n TableName
	switch len(parts) {
	case 1:
		n = TableName{Namespace: "default", Name: parts[0]}
	case 2:
		n = TableName{Namespace: parts[0], Name: parts[1]}
	default:
		return TableName{}, fmt.Errorf("invalid table name %q: expected namespace.table", s)
	}
	for _, p := range []string{n.Namespace, n.Name} {
		if !namePart.MatchString(p) {
			return TableName{}, fmt.Errorf("invalid table name %q: each part must match [A-Za-z0-9_-]+", s)
		}
	}
	return n, nil
}

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

// ParseColumnType reads an Iceberg primitive type name (Iceberg spec,
// "Primitive Types", as table metadata writes them: boolean, int, long,
// float, double, decimal(P,S), date, time, timestamp, timestamptz, string,
// binary; any case, spaces allowed in decimal(P, S)) and returns the Arrow
// type of such a column (table.TypeToArrowType), the type decode produces
// and Prepare writes. Errors name the accepted names.
func ParseColumnType(name string) (arrow.DataType, error) {
	n := strings.ToLower(strings.Join(strings.Fields(name), ""))
	var f iceberg.NestedField
	err := json.Unmarshal([]byte(`{"id":1,"name":"c","required":false,"type":`+strconv.Quote(n)+`}`), &f)
	ok := err == nil
	if ok {
		switch f.Type.(type) {
		case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
			iceberg.DecimalType, iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
			iceberg.StringType, iceberg.BinaryType:
		default:
			ok = false
		}
	}
	if !ok {
		return nil, fmt.Errorf("unknown column type %q (expected boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz, string or binary)", name)
	}
	dt, err := table.TypeToArrowType(f.Type, false, false)
	if err != nil {
		return nil, fmt.Errorf("column type %s: %w", name, err)
	}
	return dt, nil
}

// ParseColumnTypes reads a list of NAME:TYPE items (ParseColumnType's
// types), separated by commas outside parentheses so that decimal(9,2)
// stays one type: --column and a source profile's columns. A name given
// twice is an error.
func ParseColumnTypes(s string) (map[string]arrow.DataType, error) {
	out := map[string]arrow.DataType{}
	for _, item := range splitOutsideParens(s) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, typ, ok := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("expected NAME:TYPE such as temperature:double, got %q", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("column %q is given twice", name)
		}
		dt, err := ParseColumnType(typ)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", item, err)
		}
		out[name] = dt
	}
	return out, nil
}

// splitOutsideParens splits s at the commas that are not inside
// parentheses.
func splitOutsideParens(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
