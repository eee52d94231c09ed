package decode

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// timeColumnNames are the column names (compared case-insensitively, in
// this order of preference) that inference tries as the time column when
// none is given and the file has no timestamp-typed column.
var timeColumnNames = [...]string{"time", "timestamp", "ts", "datetime", "event_time"}

// inferredTimeType is the type of the time column in every inferred schema:
// Iceberg timestamptz in microseconds (docs/table-format.md, "Schema, partitioning, sort order").
var inferredTimeType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// inferSchema derives a schema for a new table from all rows of the file.
// src is the file schema (all text for CSV/TSV, when fromText is true).
// The time column is non-nullable timestamp[us, tz=UTC]; every other column
// is nullable, keeps file order, and has the type ro.columns gives it, else
// the one its values suggest. It returns the schema and the name of the
// time column as spelled in the file.
func inferSchema(ro *resolved, src *arrow.Schema, batches []arrow.RecordBatch, fromText bool, timeCol string) (*arrow.Schema, string, error) {
	timeIdx, err := pickTimeColumn(ro, src, batches, timeCol)
	if err != nil {
		return nil, "", err
	}
	fields := make([]arrow.Field, src.NumFields())
	for i, f := range src.Fields() {
		given, isGiven := ro.columns[f.Name]
		switch {
		case i == timeIdx:
			if err := CheckTimeColumnType(f.Name, ro.columns); err != nil {
				return nil, "", &FileError{Key: ro.key, Column: f.Name, Reason: err.Error(), columnsSetting: true}
			}
			fields[i] = arrow.Field{Name: f.Name, Type: inferredTimeType, Nullable: false}
		case isGiven:
			fields[i] = arrow.Field{Name: f.Name, Type: given, Nullable: true}
		case fromText:
			fields[i] = arrow.Field{Name: f.Name, Type: sniffText(ro, batches, i), Nullable: true}
		default:
			dt, err := normaliseType(f.Type)
			if err != nil {
				return nil, "", &FileError{Key: ro.key, Column: f.Name, Reason: err.Error()}
			}
			fields[i] = arrow.Field{Name: f.Name, Type: dt, Nullable: true}
		}
	}
	return arrow.NewSchema(fields, nil), src.Field(timeIdx).Name, nil
}

// CheckTimeColumnType returns an error when columns (DecodeOptions.Columns,
// the --column setting) gives the time column timeCol a type other than
// timestamptz, the only type of a time column (docs/table-format.md,
// "Schema, partitioning, sort order"); nil when it gives it none or that one. The message names the
// setting's value and what is expected.
func CheckTimeColumnType(timeCol string, columns map[string]arrow.DataType) error {
	given, ok := columns[timeCol]
	if !ok || arrow.TypeEqual(given, inferredTimeType) {
		return nil
	}
	return fmt.Errorf("--column %s:%s: %q is the time column, which is always timestamptz (leave it out of --column, or give %s:timestamptz)",
		timeCol, typeName(given), timeCol, timeCol)
}

// pickTimeColumn applies the inference rules for the time column: the
// explicit name when given; else the first timestamp-typed column; else the
// first column named like timeColumnNames whose values all convert to the
// time column's type (text, or numbers when a time unit is set; nulls and
// times outside the accepted years do not). When a column has such a name
// but no column qualifies, the error is the first such column's conversion
// error, the same an existing table's time column gives for that value.
func pickTimeColumn(ro *resolved, src *arrow.Schema, batches []arrow.RecordBatch, timeCol string) (int, error) {
	if timeCol != "" {
		idx := src.FieldIndices(timeCol)
		if len(idx) == 0 {
			return -1, &FileError{Key: ro.key, Column: timeCol,
				Reason: "time column is not in the file (columns: " + listColumns(src) + ")"}
		}
		return idx[0], nil
	}
	for i, f := range src.Fields() {
		if valueType(f.Type).ID() == arrow.TIMESTAMP {
			return i, nil
		}
	}
	var firstErr error
	for _, name := range timeColumnNames {
		for i, f := range src.Fields() {
			if !strings.EqualFold(f.Name, name) {
				continue
			}
			err := convertsToTime(ro, f, batches, i)
			if err == nil {
				return i, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return -1, firstErr
	}
	return -1, &FileError{Key: ro.key,
		Reason: "no time column found (columns: " + listColumns(src) + "); pass --time-column"}
}

// convertsToTime converts column i of batches to the inferred time column
// type and returns the first error, as the conformer would report it.
func convertsToTime(ro *resolved, f arrow.Field, batches []arrow.RecordBatch, i int) error {
	conv, err := makeConverter(ro, f.Name, f.Type, arrow.Field{Name: f.Name, Type: inferredTimeType}, true)
	if err != nil {
		return err
	}
	var rowBase int64
	for _, rec := range batches {
		out, err := conv(rec.Column(i), rowBase)
		if err != nil {
			return err
		}
		out.Release()
		rowBase += rec.NumRows()
	}
	return nil
}

// sniffText infers the type of a CSV/TSV text column from all its non-null
// values: int64 when all parse as base-10 integers, else float64 when all
// are numbers a double holds under the text number rules (numbers.go; the
// NaN/Inf words allowed, but at least one value must contain a digit; with
// a decimal comma, ro.decimalComma), else bool when all are true/false
// (case-insensitive), else string. A value those rules refuse (0x1p3,
// 1_000, 1e-400) makes the column a string, which keeps it exactly as
// written.
// A value other tools write for a missing one (NA, NULL, -: nullTokens)
// does not make a column a string: the column gets the type of its other
// values, and loading it then refuses the token, with a reason that names
// the setting that reads it as null (CSV.Null), unless the file is loaded
// with it. A column of nulls and such tokens only is a string, as is an
// all-null column. A number with a leading zero (leadingZero: 007, -01,
// 00.5) makes the column a string: it is an identifier (a zip code, a
// device id) whose zeros a number would drop. Surrounding spaces are
// ignored, as in the conversion that follows.
func sniffText(ro *resolved, batches []arrow.RecordBatch, i int) arrow.DataType {
	canInt, canFloat, canBool := true, true, true
	seen, floatDigit := false, false
	for _, rec := range batches {
		arr := rec.Column(i)
		get := textValues(arr)
		for j := 0; j < arr.Len(); j++ {
			if arr.IsNull(j) {
				continue
			}
			s := strings.TrimSpace(get(j))
			if isNullToken(s) {
				if _, problem := parseFloatText(s, 64); problem != "" {
					continue // NA, NULL, -; but NaN is a number
				}
			}
			seen = true
			if leadingZero(s) {
				return arrow.BinaryTypes.String
			}
			num, numProblem := s, ""
			if ro.decimalComma {
				num, numProblem = decimalPoint(s)
			}
			isInt := false
			if canInt {
				if v, problem := parseIntText(s, 64); problem == "" {
					isInt, floatDigit = true, true
					// Should a later value make the column a double, this
					// one must fit it exactly.
					canFloat = canFloat && exactInt64(v)
				} else {
					canInt = false
				}
			}
			if canFloat && !isInt {
				if _, problem := parseFloatText(num, 64); problem != "" || numProblem != "" {
					canFloat = false
				} else if hasDigit(s) {
					floatDigit = true
				}
			}
			if canBool && !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
				canBool = false
			}
			if !canInt && !canFloat && !canBool {
				return arrow.BinaryTypes.String
			}
		}
	}
	switch {
	case !seen:
		return arrow.BinaryTypes.String
	case canInt:
		return arrow.PrimitiveTypes.Int64
	case canFloat && floatDigit:
		return arrow.PrimitiveTypes.Float64
	case canBool:
		return arrow.FixedWidthTypes.Boolean
	}
	return arrow.BinaryTypes.String
}

// leadingZero reports whether s, after an optional sign, starts with a
// zero followed by another digit ("007", "-01", "00.5", "0123"): a number
// would drop that zero. "0", "-0", "0.5" and "0e3" have none.
func leadingZero(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return len(s) >= 2 && s[0] == '0' && s[1] >= '0' && s[1] <= '9'
}

// normaliseType maps a Parquet-derived Arrow type to the type a new table
// gets, mirroring what iceberg-go's ArrowSchemaToIceberg accepts
// (docs/iceberg-go.md, "Schemas") and the Iceberg spec's primitive types:
// small and unsigned integers widen to int/long, float16 to float,
// dictionaries to their value type, large/view strings and binaries to the
// plain ones, date64 to date32, time32/time64 to time64[us], timestamps to
// microseconds (a zoned timestamp becomes UTC, a naive one stays naive), and
// an all-null column to string. Nested and other types are an error.
func normaliseType(dt arrow.DataType) (arrow.DataType, error) {
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return normaliseType(t.ValueType)
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return inferredTimeType, nil
		}
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case *arrow.Decimal128Type, *arrow.FixedSizeBinaryType:
		return dt, nil
	}
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16:
		return arrow.PrimitiveTypes.Int32, nil
	case arrow.INT64, arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64, nil
	case arrow.FLOAT16, arrow.FLOAT32:
		return arrow.PrimitiveTypes.Float32, nil
	case arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64, nil
	case arrow.BOOL:
		return arrow.FixedWidthTypes.Boolean, nil
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.NULL:
		return arrow.BinaryTypes.String, nil
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return arrow.BinaryTypes.Binary, nil
	case arrow.DATE32, arrow.DATE64:
		return arrow.FixedWidthTypes.Date32, nil
	case arrow.TIME32, arrow.TIME64:
		return arrow.FixedWidthTypes.Time64us, nil
	}
	return nil, fmt.Errorf("unsupported column type %s (lists, structs, maps and other nested or special types cannot be loaded)", dt)
}

// valueType strips a dictionary encoding.
func valueType(dt arrow.DataType) arrow.DataType {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return d.ValueType
	}
	return dt
}

// listColumns renders the column names of sc for error messages.
func listColumns(sc *arrow.Schema) string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = strconv.Quote(f.Name)
	}
	return strings.Join(names, ", ")
}
