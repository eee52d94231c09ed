package interop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" database/sql driver
)

// OpenDuckDB opens an in-memory DuckDB. Only the extensions built into the
// static library are used (parquet, icu, json): nothing is downloaded.
func OpenDuckDB(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("open duckdb: %w", err)
	}
	// Never reach out for extensions (the machine has no internet anyway).
	if _, err := db.ExecContext(ctx, "SET autoinstall_known_extensions=false; SET autoload_known_extensions=false"); err != nil {
		db.Close()
		return nil, fmt.Errorf("configure duckdb: %w", err)
	}
	return db, nil
}

// FileFacts is what DuckDB reads from one Parquet data file.
type FileFacts struct {
	Path         string
	Rows         int64
	Compressions []string          // distinct codecs of the column chunks
	DuckTypes    map[string]string // DuckDB column type (DESCRIBE)
	LogicalTypes map[string]string // parquet_schema logical_type
	FieldIDs     map[string]int64  // parquet_schema field_id
	Min, Max     map[string]any    // canonical values (see Row) of non-null values
	Nulls        map[string]int64
	// SortViolations counts rows whose position differs from their position
	// in (sortKeys..., ascending, nulls first) order, ties kept stable.
	SortViolations int64
}

// ReadFileFacts reads a local Parquet file with DuckDB: read_parquet for
// rows, min/max and order, parquet_metadata for codecs, parquet_schema for
// logical types and field ids. sortKeys are the columns the rows must be
// sorted by (series key columns, then the time column).
func ReadFileFacts(ctx context.Context, db *sql.DB, file string, cols []Column, sortKeys []string) (*FileFacts, error) {
	f := &FileFacts{Path: file, DuckTypes: map[string]string{}, LogicalTypes: map[string]string{},
		FieldIDs: map[string]int64{}, Min: map[string]any{}, Max: map[string]any{}, Nulls: map[string]int64{}}
	src := "read_parquet(" + quoteString(file) + ", hive_partitioning=false, file_row_number=true)"

	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+src).Scan(&f.Rows); err != nil {
		return nil, fmt.Errorf("count %s: %w", file, err)
	}

	rows, err := db.QueryContext(ctx, "SELECT DISTINCT compression FROM parquet_metadata("+quoteString(file)+") ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("parquet_metadata %s: %w", file, err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		f.Compressions = append(f.Compressions, c)
	}
	rows.Close()

	rows, err = db.QueryContext(ctx, "SELECT name, logical_type, field_id FROM parquet_schema("+quoteString(file)+") WHERE num_children IS NULL OR num_children = 0")
	if err != nil {
		return nil, fmt.Errorf("parquet_schema %s: %w", file, err)
	}
	for rows.Next() {
		var name string
		var logical sql.NullString
		var id sql.NullInt64
		if err := rows.Scan(&name, &logical, &id); err != nil {
			rows.Close()
			return nil, err
		}
		f.LogicalTypes[name] = logical.String
		if id.Valid {
			f.FieldIDs[name] = id.Int64
		}
	}
	rows.Close()

	rows, err = db.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet("+quoteString(file)+", hive_partitioning=false))")
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", file, err)
	}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			rows.Close()
			return nil, err
		}
		f.DuckTypes[n] = t
	}
	rows.Close()

	for _, c := range cols {
		if _, ok := f.DuckTypes[c.Name]; !ok {
			continue
		}
		expr, err := duckExpr(c.Name, c.Type)
		if err != nil {
			return nil, err
		}
		q := fmt.Sprintf("SELECT min(%s), max(%s), count(*) - count(%s) FROM %s", expr, expr, quoteIdent(c.Name), src)
		vals, err := queryRows(ctx, db, q, 3)
		if err != nil {
			return nil, err
		}
		f.Min[c.Name], f.Max[c.Name] = vals[0][0], vals[0][1]
		f.Nulls[c.Name], _ = vals[0][2].(int64)
	}

	if len(sortKeys) > 0 {
		order := make([]string, 0, len(sortKeys)+1)
		for _, k := range sortKeys {
			order = append(order, quoteIdent(k)+" ASC NULLS FIRST")
		}
		order = append(order, "file_row_number")
		q := "SELECT count(*) FROM (SELECT file_row_number AS pos, row_number() OVER (ORDER BY " +
			strings.Join(order, ", ") + ") - 1 AS want FROM " + src + ") WHERE pos <> want"
		if err := db.QueryRowContext(ctx, q).Scan(&f.SortViolations); err != nil {
			return nil, fmt.Errorf("sort check %s: %w", file, err)
		}
	}
	return f, nil
}

// ManifestEntry is what a manifest claims about one data file.
type ManifestEntry struct {
	Path        string
	RecordCount int64
	ValueCounts map[int]int64
	NullCounts  map[int]int64
	// Lower and Upper are decoded bounds (canonical values), by field id.
	Lower, Upper map[int]any
}

// MetricsTruncate is the length timelake truncates string bounds to
// (write.metadata.metrics.default=truncate(16)).
const MetricsTruncate = 16

// Rules is what CheckFile requires of a data file.
type Rules struct {
	TimeColumn    string   // must be a UTC microsecond timestamp
	Codec         string   // every column chunk's codec, as DuckDB names it (ZSTD)
	RequireBounds []string // columns whose manifest bounds must be present
}

// CheckFile compares DuckDB's view of a data file with the rules and with
// what the manifest claims: row count, compression, the time column as a
// UTC microsecond timestamp (timestamptz), Parquet field ids equal to the
// Iceberg ids, sort order (FileFacts.SortViolations), value and null counts,
// and each column's lower/upper bounds equal to DuckDB's min/max (strings
// longer than 16 characters: truncated lower bound, upper bound at least the
// max's prefix).
func CheckFile(f *FileFacts, m ManifestEntry, cols []Column, rules Rules) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	timeCol, requireBounds := rules.TimeColumn, rules.RequireBounds
	if f.Rows != m.RecordCount {
		fail("DuckDB counts %d rows, the manifest claims %d", f.Rows, m.RecordCount)
	}
	if !slices.Equal(f.Compressions, []string{rules.Codec}) {
		fail("column chunk codecs %v, want [%s]", f.Compressions, rules.Codec)
	}
	if t := f.DuckTypes[timeCol]; t != "TIMESTAMP WITH TIME ZONE" {
		fail("time column %s is %q in DuckDB, want TIMESTAMP WITH TIME ZONE", timeCol, t)
	}
	if lt := f.LogicalTypes[timeCol]; !strings.Contains(lt, "isAdjustedToUTC=1") || !strings.Contains(lt, "MICROS=MicroSeconds()") {
		fail("time column %s has Parquet logical type %q, want a UTC (isAdjustedToUTC) MICROS timestamp", timeCol, lt)
	}
	if f.SortViolations != 0 {
		fail("%d of %d rows are out of order", f.SortViolations, f.Rows)
	}
	for _, c := range cols {
		if _, ok := f.DuckTypes[c.Name]; !ok {
			fail("column %s is not in the file", c.Name)
			continue
		}
		if id, ok := f.FieldIDs[c.Name]; !ok || id != int64(c.ID) {
			fail("column %s has Parquet field_id %d (present %v), want Iceberg id %d", c.Name, id, ok, c.ID)
		}
		if n, ok := m.ValueCounts[c.ID]; ok && n != f.Rows {
			fail("column %s: manifest value count %d, DuckDB rows %d", c.Name, n, f.Rows)
		}
		if n, ok := m.NullCounts[c.ID]; ok && n != f.Nulls[c.Name] {
			fail("column %s: manifest null count %d, DuckDB counts %d", c.Name, n, f.Nulls[c.Name])
		}
		lo, okLo := m.Lower[c.ID]
		hi, okHi := m.Upper[c.ID]
		if !okLo || !okHi {
			if slices.Contains(requireBounds, c.Name) && f.Nulls[c.Name] < f.Rows {
				fail("column %s: the manifest has no lower/upper bounds", c.Name)
			}
			continue
		}
		if err := checkBounds(c, lo, hi, f.Min[c.Name], f.Max[c.Name]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", path.Base(f.Path), errors.Join(errs...))
	}
	return nil
}

func checkBounds(c Column, lo, hi, min, max any) error {
	if ls, ok := lo.(string); ok && c.Type == "string" {
		mins, _ := min.(string)
		maxs, _ := max.(string)
		if utf8.RuneCountInString(mins) <= MetricsTruncate && ls != mins {
			return fmt.Errorf("column %s: manifest lower bound %q, DuckDB min %q", c.Name, ls, mins)
		}
		if !strings.HasPrefix(mins, ls) {
			return fmt.Errorf("column %s: manifest lower bound %q is not a prefix of DuckDB min %q", c.Name, ls, mins)
		}
		hs, _ := hi.(string)
		if utf8.RuneCountInString(maxs) <= MetricsTruncate && hs != maxs {
			return fmt.Errorf("column %s: manifest upper bound %q, DuckDB max %q", c.Name, hs, maxs)
		}
		if hs < truncateRunes(maxs, MetricsTruncate) {
			return fmt.Errorf("column %s: manifest upper bound %q is below DuckDB max %q", c.Name, hs, maxs)
		}
		return nil
	}
	// Floats compare numerically: Parquet writers record a zero minimum as
	// -0.0 (parquet-format, statistics of floating point columns).
	lf, ok1 := lo.(float64)
	hf, ok2 := hi.(float64)
	mf, ok3 := min.(float64)
	xf, ok4 := max.(float64)
	if ok1 && ok2 && ok3 && ok4 {
		if lf != mf || hf != xf {
			return fmt.Errorf("column %s: manifest bounds [%v, %v], DuckDB min/max [%v, %v]", c.Name, lf, hf, mf, xf)
		}
		return nil
	}
	if Row([]any{lo}).Key(nil, 1) != Row([]any{min}).Key(nil, 1) {
		return fmt.Errorf("column %s: manifest lower bound %v (%T), DuckDB min %v (%T)", c.Name, lo, lo, min, min)
	}
	if Row([]any{hi}).Key(nil, 1) != Row([]any{max}).Key(nil, 1) {
		return fmt.Errorf("column %s: manifest upper bound %v (%T), DuckDB max %v (%T)", c.Name, hi, hi, max, max)
	}
	return nil
}

func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// LocalFile returns a local path for a data file URI: the path itself for
// file:// URIs; for s3:// URIs the object is downloaded into dir first
// (DuckDB's httpfs extension would need a download, so it is not used).
func LocalFile(ctx context.Context, client *s3.Client, uri, dir string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", uri, err)
	}
	switch u.Scheme {
	case "file", "":
		return u.Path, nil
	case "s3", "s3a":
		if client == nil {
			return "", fmt.Errorf("%s: no S3 client", uri)
		}
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(u.Host), Key: aws.String(strings.TrimPrefix(u.Path, "/"))})
		if err != nil {
			return "", fmt.Errorf("get %s: %w", uri, err)
		}
		defer out.Body.Close()
		dst := filepath.Join(dir, filepath.FromSlash(u.Host+u.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		f, err := os.Create(dst)
		if err != nil {
			return "", err
		}
		if _, err := io.Copy(f, out.Body); err != nil {
			f.Close()
			return "", fmt.Errorf("download %s: %w", uri, err)
		}
		return dst, f.Close()
	}
	return "", fmt.Errorf("%s: unsupported scheme", uri)
}
