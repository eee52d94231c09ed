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

// inferSchema derives a schema for a new table from all rows of the file
// (batches); see inference.
func inferSchema(ro *resolved, src *arrow.Schema, batches []arrow.RecordBatch, fromText bool, timeCol string) (*arrow.Schema, string, error) {
	inf := newInference(ro, src, fromText, timeCol)
	for _, rec := range batches {
		inf.add(rec)
	}
	return inf.schema()
}

// inference derives a schema for a new table from all rows of a file,
// seen one batch at a time (add), so that the rows need not be held: src
// is the file schema (all text for CSV/TSV, when fromText is true). The
// time column is non-nullable timestamp[us, tz=UTC]; every other column
// is nullable, keeps file order, and has the type ro.columns gives it, else
// the one its values suggest (sniffText, normaliseType).
type inference struct {
	ro       *resolved
	src      *arrow.Schema
	fromText bool
	timeCol  string
	timeIdx  int                // the time column when the schema names it (a given name, a timestamp type); else -1
	cands    []timeCandidate    // else the columns named like timeColumnNames, in the order they are tried
	sniffs   map[int]*textSniff // text columns whose type comes from their values
	rows     int64
}

// timeCandidate is a column that may be the time column: err is the first
// value that does not convert to the time column's type.
type timeCandidate struct {
	idx  int
	conv convertFn
	err  error
}

func newInference(ro *resolved, src *arrow.Schema, fromText bool, timeCol string) *inference {
	inf := &inference{ro: ro, src: src, fromText: fromText, timeCol: timeCol, timeIdx: -1, sniffs: map[int]*textSniff{}}
	if timeCol != "" {
		if idx := src.FieldIndices(timeCol); len(idx) > 0 {
			inf.timeIdx = idx[0]
		}
	} else {
		for i, f := range src.Fields() {
			if valueType(f.Type).ID() == arrow.TIMESTAMP {
				inf.timeIdx = i
				break
			}
		}
	}
	if timeCol == "" && inf.timeIdx < 0 {
		for _, name := range timeColumnNames {
			for i, f := range src.Fields() {
				if !strings.EqualFold(f.Name, name) {
					continue
				}
				c := timeCandidate{idx: i}
				c.conv, c.err = makeConverter(ro, f.Name, f.Type, arrow.Field{Name: f.Name, Type: inferredTimeType}, true)
				inf.cands = append(inf.cands, c)
			}
		}
	}
	if fromText {
		for i, f := range src.Fields() {
			if _, given := ro.columns[f.Name]; !given {
				inf.sniffs[i] = &textSniff{canInt: true, canFloat: true, canBool: true}
			}
		}
	}
	return inf
}

// add looks at the next batch of the file.
func (inf *inference) add(rec arrow.RecordBatch) {
	for k := range inf.cands {
		c := &inf.cands[k]
		if c.err != nil {
			continue
		}
		out, err := c.conv(rec.Column(c.idx), inf.rows)
		if err != nil {
			c.err = err
			continue
		}
		out.Release()
	}
	for i, s := range inf.sniffs {
		s.add(inf.ro, rec.Column(i))
	}
	inf.rows += rec.NumRows()
}

// schema returns the schema inferred from the batches added, and the name
// of the time column as spelled in the file.
func (inf *inference) schema() (*arrow.Schema, string, error) {
	ro, src := inf.ro, inf.src
	timeIdx, err := inf.pickTimeColumn()
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
		case inf.fromText:
			fields[i] = arrow.Field{Name: f.Name, Type: inf.sniffs[i].dataType(), Nullable: true}
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
func (inf *inference) pickTimeColumn() (int, error) {
	ro, src := inf.ro, inf.src
	if inf.timeCol != "" {
		if inf.timeIdx < 0 {
			return -1, &FileError{Key: ro.key, Column: inf.timeCol,
				Reason: "time column is not in the file (columns: " + listColumns(src) + ")"}
		}
		return inf.timeIdx, nil
	}
	if inf.timeIdx >= 0 {
		return inf.timeIdx, nil
	}
	var firstErr error
	for _, c := range inf.cands {
		if c.err == nil {
			return c.idx, nil
		}
		if firstErr == nil {
			firstErr = c.err
		}
	}
	if firstErr != nil {
		return -1, firstErr
	}
	return -1, &FileError{Key: ro.key,
		Reason: "no time column found (columns: " + listColumns(src) + "); pass --time-column"}
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
	s := textSniff{canInt: true, canFloat: true, canBool: true}
	for _, rec := range batches {
		s.add(ro, rec.Column(i))
	}
	return s.dataType()
}

// textSniff is sniffText's view of the values of one column seen so far.
type textSniff struct {
	canInt, canFloat, canBool bool
	seen, floatDigit          bool
}

// add looks at the values of arr, the column in the next batch.
func (t *textSniff) add(ro *resolved, arr arrow.Array) {
	if !t.canInt && !t.canFloat && !t.canBool {
		return // a string whatever follows
	}
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
		t.seen = true
		if leadingZero(s) {
			t.canInt, t.canFloat, t.canBool = false, false, false
			return
		}
		num, numProblem := s, ""
		if ro.decimalComma {
			num, numProblem = decimalPoint(s)
		}
		isInt := false
		if t.canInt {
			if v, problem := parseIntText(s, 64); problem == "" {
				isInt, t.floatDigit = true, true
				// Should a later value make the column a double, this
				// one must fit it exactly.
				t.canFloat = t.canFloat && exactInt64(v)
			} else {
				t.canInt = false
			}
		}
		if t.canFloat && !isInt {
			if _, problem := parseFloatText(num, 64); problem != "" || numProblem != "" {
				t.canFloat = false
			} else if hasDigit(s) {
				t.floatDigit = true
			}
		}
		if t.canBool && !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false") {
			t.canBool = false
		}
		if !t.canInt && !t.canFloat && !t.canBool {
			return
		}
	}
}

// dataType is the type of the values seen.
func (t *textSniff) dataType() arrow.DataType {
	switch {
	case !t.canInt && !t.canFloat && !t.canBool, !t.seen:
		return arrow.BinaryTypes.String
	case t.canInt:
		return arrow.PrimitiveTypes.Int64
	case t.canFloat && t.floatDigit:
		return arrow.PrimitiveTypes.Float64
	case t.canBool:
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
	case arrow.ExtensionType:
		if isUUID(t) {
			return dt, nil
		}
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
