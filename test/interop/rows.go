package interop

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// Column is one column of a table schema, as the Iceberg metadata declares it.
type Column struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"` // Iceberg primitive type name: timestamptz, string, double, long, int, boolean, date
	Required bool   `json:"required"`
}

// ColumnsOf returns the columns of an Iceberg schema (primitive types only).
func ColumnsOf(sc *iceberg.Schema) []Column {
	out := make([]Column, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		out = append(out, Column{ID: f.ID, Name: f.Name, Type: f.Type.String(), Required: f.Required})
	}
	return out
}

// Row is one table row in schema order. Values are canonical: nil for null,
// int64 for timestamps (microseconds since the epoch, UTC), longs, ints and
// dates (days), float64 for doubles and floats, string, bool, or []byte.
type Row []any

// Key renders the row as one comparable string. Timestamps are divided by
// tsDiv first (1 keeps microseconds; 1000 compares at milliseconds, the
// precision of readers that return JavaScript Dates), rounding down.
func (r Row) Key(cols []Column, tsDiv int64) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case nil:
			parts[i] = "∅"
		case int64:
			if tsDiv > 1 && i < len(cols) && isTimestamp(cols[i].Type) {
				x = floorDiv(x, tsDiv)
			}
			parts[i] = strconv.FormatInt(x, 10)
		case float64:
			parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
		case string:
			parts[i] = strconv.Quote(x)
		case bool:
			parts[i] = strconv.FormatBool(x)
		case []byte:
			parts[i] = "0x" + hex.EncodeToString(x)
		default:
			parts[i] = fmt.Sprintf("?%T(%v)", v, v)
		}
	}
	return strings.Join(parts, "|")
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func isTimestamp(typ string) bool { return typ == "timestamptz" || typ == "timestamp" }

// CompareRows compares two multisets of rows (order ignored) and returns an
// error listing the first differences.
func CompareRows(cols []Column, got, want []Row, tsDiv int64) error {
	count := map[string]int{}
	for _, r := range want {
		count[r.Key(cols, tsDiv)]++
	}
	for _, r := range got {
		count[r.Key(cols, tsDiv)]--
	}
	var missing, extra []string
	for k, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return nil
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Errorf("rows differ: got %d rows, want %d; %d missing (first: %v), %d unexpected (first: %v)",
		len(got), len(want), len(missing), head(missing, 3), len(extra), head(extra, 3))
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// SourceFile reads one landing file (CSV, JSON Lines, either optionally
// gzipped, or Parquet) into rows of the table's columns, independently of
// timelake's decoder: CSV with encoding/csv (times as RFC 3339, UTC when no
// offset), JSON Lines with encoding/json (flat objects, one a line; numbers
// by their text, like CSV's), Parquet with DuckDB. Columns are matched by
// name; a column missing from the file is null.
func SourceFile(ctx context.Context, db *sql.DB, path string, cols []Column) ([]Row, error) {
	switch {
	case strings.HasSuffix(path, ".parquet"):
		return sourceParquet(ctx, db, path, cols)
	case strings.HasSuffix(path, ".csv"), strings.HasSuffix(path, ".csv.gz"):
		return sourceCSV(path, cols)
	case strings.HasSuffix(path, ".jsonl"), strings.HasSuffix(path, ".jsonl.gz"),
		strings.HasSuffix(path, ".ndjson"), strings.HasSuffix(path, ".ndjson.gz"):
		return sourceJSONLines(path, cols)
	}
	return nil, fmt.Errorf("source %s: unknown format", path)
}

// SourceDir reads every file under dir (see SourceFile) and returns all rows.
func SourceDir(ctx context.Context, db *sql.DB, dir string, cols []Column) ([]Row, error) {
	var out []Row
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rows, err := SourceFile(ctx, db, p, cols)
		if err != nil {
			return err
		}
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// openSource opens a landing file, through gzip when its name ends in .gz.
func openSource(path string) (io.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, func() { f.Close() }, nil
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("source %s: %w", path, err)
	}
	return gz, func() { gz.Close(); f.Close() }, nil
}

func sourceCSV(path string, cols []Column) ([]Row, error) {
	r, closeSource, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer closeSource()
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("source %s: header: %w", path, err)
	}
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = slices.Index(header, c.Name)
	}
	var out []Row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", path, err)
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			if idx[i] < 0 || rec[idx[i]] == "" {
				continue
			}
			if row[i], err = parseText(rec[idx[i]], c.Type); err != nil {
				return nil, fmt.Errorf("source %s line %d column %s: %w", path, line, c.Name, err)
			}
		}
		out = append(out, row)
	}
}

func sourceJSONLines(path string, cols []Column) ([]Row, error) {
	r, closeSource, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer closeSource()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var out []Row
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("source %s line %d: %w", path, line, err)
		}
		if obj == nil {
			return nil, fmt.Errorf("source %s line %d: not an object", path, line)
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			var text string
			switch v := obj[c.Name].(type) {
			case nil:
				continue
			case string:
				text = v
			case json.Number:
				text = v.String()
			case bool:
				text = strconv.FormatBool(v)
			default:
				return nil, fmt.Errorf("source %s line %d column %s: %T is not a flat value", path, line, c.Name, v)
			}
			if row[i], err = parseText(text, c.Type); err != nil {
				return nil, fmt.Errorf("source %s line %d column %s: %w", path, line, c.Name, err)
			}
		}
		out = append(out, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("source %s: %w", path, err)
	}
	return out, nil
}

// parseText parses the text of a value of an Iceberg type into its
// canonical Row value: times in RFC 3339 (UTC when without an offset).
func parseText(s, typ string) (any, error) {
	switch typ {
	case "timestamptz", "timestamp":
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UnixMicro(), nil
			}
		}
		return nil, fmt.Errorf("time %q is not RFC 3339", s)
	case "double":
		return strconv.ParseFloat(s, 64)
	case "float": // the nearest float32, as the column stores it
		f, err := strconv.ParseFloat(s, 32)
		return float64(float32(f)), err
	case "long", "int":
		return strconv.ParseInt(s, 10, 64)
	case "boolean":
		return strconv.ParseBool(s)
	case "string":
		return s, nil
	case "date":
		t, err := time.Parse(time.DateOnly, s)
		return t.Unix() / 86400, err
	}
	return nil, fmt.Errorf("unsupported column type %s", typ)
}

// duckExpr is the DuckDB expression that turns a column of type typ into the
// canonical Go value of a Row.
func duckExpr(name, typ string) (string, error) {
	q := quoteIdent(name)
	switch typ {
	case "timestamptz", "timestamp":
		return "epoch_us(" + q + ")", nil
	case "double", "float":
		return q + "::DOUBLE", nil
	case "long", "int":
		return q + "::BIGINT", nil
	case "date":
		return "(" + q + " - DATE '1970-01-01')::BIGINT", nil
	case "string":
		return q + "::VARCHAR", nil
	case "boolean":
		return q + "::BOOLEAN", nil
	}
	return "", fmt.Errorf("unsupported column type %s", typ)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func sourceParquet(ctx context.Context, db *sql.DB, path string, cols []Column) ([]Row, error) {
	present, err := parquetColumns(ctx, db, path)
	if err != nil {
		return nil, err
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		if !present[c.Name] {
			exprs[i] = "NULL"
			continue
		}
		if exprs[i], err = duckExpr(c.Name, c.Type); err != nil {
			return nil, fmt.Errorf("source %s: %w", path, err)
		}
	}
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM read_parquet(" + quoteString(path) + ", hive_partitioning=false)"
	return queryRows(ctx, db, q, len(cols))
}

// parquetColumns returns the top-level column names of a Parquet file.
func parquetColumns(ctx context.Context, db *sql.DB, path string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet("+quoteString(path)+", hive_partitioning=false))")
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

func queryRows(ctx context.Context, db *sql.DB, q string, n int) ([]Row, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		vals := make([]any, n)
		ptrs := make([]any, n)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(Row, n)
		for i, v := range vals {
			switch x := v.(type) {
			case int32:
				row[i] = int64(x)
			case float32:
				row[i] = float64(x)
			default:
				row[i] = x
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// ArrowRows converts an Arrow table (an iceberg-go scan) to rows of cols,
// matching columns by name.
func ArrowRows(tbl arrow.Table, cols []Column) ([]Row, error) {
	idx := make([]int, len(cols))
	for i, c := range cols {
		f := tbl.Schema().FieldIndices(c.Name)
		if len(f) != 1 {
			return nil, fmt.Errorf("column %s not in the scan", c.Name)
		}
		idx[i] = f[0]
	}
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	var out []Row
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make(Row, len(cols))
			for i := range cols {
				v, err := arrowValue(rec.Column(idx[i]), r)
				if err != nil {
					return nil, fmt.Errorf("column %s: %w", cols[i].Name, err)
				}
				row[i] = v
			}
			out = append(out, row)
		}
	}
	return out, tr.Err()
}

func arrowValue(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch c := a.(type) {
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(i).ToTime(unit).UnixMicro(), nil
	case *array.String:
		return c.Value(i), nil
	case *array.LargeString:
		return c.Value(i), nil
	case *array.Float64:
		return c.Value(i), nil
	case *array.Float32:
		return float64(c.Value(i)), nil
	case *array.Int64:
		return c.Value(i), nil
	case *array.Int32:
		return int64(c.Value(i)), nil
	case *array.Date32:
		return int64(c.Value(i)), nil
	case *array.Boolean:
		return c.Value(i), nil
	case *array.Binary:
		return slices.Clone(c.Value(i)), nil
	}
	return nil, fmt.Errorf("unsupported Arrow type %s", a.DataType())
}

// DecodeBound decodes an Iceberg single-value binary serialisation (manifest
// lower/upper bounds) of a column of type typ into a canonical value.
func DecodeBound(b []byte, typ string) (any, error) {
	le := func(n int) (uint64, error) {
		if len(b) != n {
			return 0, fmt.Errorf("%s bound has %d bytes, want %d", typ, len(b), n)
		}
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v, nil
	}
	switch typ {
	case "timestamptz", "timestamp", "long":
		v, err := le(8)
		return int64(v), err
	case "int", "date":
		v, err := le(4)
		return int64(int32(uint32(v))), err
	case "double":
		v, err := le(8)
		return math.Float64frombits(v), err
	case "float":
		v, err := le(4)
		return float64(math.Float32frombits(uint32(v))), err
	case "string":
		return string(b), nil
	case "boolean":
		if len(b) != 1 {
			return nil, fmt.Errorf("boolean bound has %d bytes", len(b))
		}
		return b[0] != 0, nil
	}
	return slices.Clone(b), nil
}
