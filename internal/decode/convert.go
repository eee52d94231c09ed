package decode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// resolved holds DecodeOptions after defaults and validation.
type resolved struct {
	key       string
	text      bool // the file is text: CSV, TSV or JSON (whose values are read as text)
	json      bool // the file is JSON
	mem       memory.Allocator
	loc       *time.Location // nil = UTC
	epoch     arrow.TimeUnit
	epochSet  bool
	batchRows int
	// parallel and chunkBytes: DecodeOptions.Parallelism and ChunkBytes;
	// pieceBytes: DecodeOptions.PieceBytes (0 in Decode).
	parallel   int
	chunkBytes int64
	pieceBytes int64

	// comma separates the fields of a text file: tab for TSV, else
	// CSV.Delimiter or ','; a separator hint (openTextStream) sets the
	// file's own, and lineOffset to the line it takes.
	comma        rune
	lineOffset   int64
	tsv          bool     // a .tsv file: comma is a tab whatever CSV.Delimiter says
	delimiterSet bool     // CSV.Delimiter was given
	nulls        []string // the cells read as null: "" and CSV.Null
	decimalComma bool     // CSV.DecimalComma
	// columns are DecodeOptions.Columns; evolve DecodeOptions.Evolve.
	columns map[string]arrow.DataType
	evolve  Evolution
	// skip names the file's columns the conformer leaves out: new columns
	// that are empty in every row (decodeEvolve).
	skip map[string]bool
	// skipRows collects the rows set aside when the file is decoded with
	// OnErrorSkipRows (skiprows.go); nil otherwise.
	skipRows *rowSkipper
	// renames are DecodeOptions.Renames.
	renames map[string]string
	// maxRecord is DecodeOptions.MaxRecordBytes or its default.
	maxRecord int64
	// textBlocks lets a gzipped CSV or TSV file of an existing table be
	// parsed in blocks (gzipranges.go) when ro.parallel > 1.
	textBlocks bool
}

// convertFn converts one source column of a batch into a column of the
// target type. rowBase is the number of data rows before this batch.
type convertFn func(arr arrow.Array, rowBase int64) (arrow.Array, error)

// conformer maps source batches (CSV text columns or Parquet columns) onto a
// target schema by column name, following "Appending a file whose schema
// differs from the table" in docs/table-format.md.
type conformer struct {
	ro     *resolved
	target *arrow.Schema
	srcIdx []int       // per target field: source column index, -1 = missing
	convs  []convertFn // per target field: nil when missing
}

// newConformer checks the source schema against target before any data is
// converted: extra columns, missing required columns and impossible type
// pairs are reported here, without a row number.
func newConformer(ro *resolved, src, target *arrow.Schema, timeCol string) (*conformer, error) {
	fe := func(col, reason string) error { return &FileError{Key: ro.key, Column: col, Reason: reason} }
	if timeCol == "" {
		return nil, fe("", "no time column given for the table")
	}
	tIdx := target.FieldIndices(timeCol)
	if len(tIdx) != 1 {
		return nil, fe(timeCol, "time column is not in the table schema")
	}
	if target.Field(tIdx[0]).Type.ID() != arrow.TIMESTAMP {
		return nil, fe(timeCol, fmt.Sprintf("time column has table type %s, not a timestamp", typeName(target.Field(tIdx[0]).Type)))
	}
	var extra []string
	for _, f := range src.Fields() {
		if !target.HasField(f.Name) && !ro.skip[f.Name] {
			extra = append(extra, f.Name)
		}
	}
	if err := checkNewNames(ro, extra, target); err != nil {
		return nil, err
	}
	if len(extra) > 0 {
		reason := "not in the table schema" + othersNamed(extra[1:])
		reason += ": ingest adds new columns only with --evolve add-columns (or TIMELAKE_EVOLVE, or the table property timelake.evolve)"
		return nil, &FileError{Key: ro.key, Column: extra[0], Reason: reason, newColumns: true}
	}
	c := &conformer{ro: ro, target: target, srcIdx: make([]int, target.NumFields()), convs: make([]convertFn, target.NumFields())}
	for i, tf := range target.Fields() {
		isTime := tf.Name == timeCol
		idx := src.FieldIndices(tf.Name)
		if len(idx) == 0 {
			switch {
			case isTime:
				return nil, fe(tf.Name, "time column is missing from the file")
			case !tf.Nullable:
				return nil, fe(tf.Name, "required column is missing from the file")
			}
			c.srcIdx[i] = -1
			continue
		}
		conv, err := makeConverter(ro, tf.Name, src.Field(idx[0]).Type, tf, isTime)
		if err != nil {
			return nil, err
		}
		c.srcIdx[i] = idx[0]
		c.convs[i] = conv
	}
	return c, nil
}

// checkNewNames refuses the names of a file's columns that the table lacks
// (extra) which would make a confusing new column, whatever
// DecodeOptions.Evolve says: one that differs from a column of target (or
// from another of extra) only by case or by surrounding whitespace, which
// engines that ignore case (DuckDB, Spark by default) cannot tell apart, and
// one that begins or ends with whitespace. Such a file is refused, never
// loaded as a new column, so that the table never holds near-identical
// columns; the reason quotes both names.
func checkNewNames(ro *resolved, extra []string, target *arrow.Schema) error {
	// The first name of each fold key: the column each later one would
	// clash with, as a search in order finds it. One map keeps the check
	// linear in the columns, however wide the file.
	names := make(map[string]string, target.NumFields()+len(extra))
	for _, f := range target.Fields() {
		k := foldKey(strings.TrimSpace(f.Name))
		if _, ok := names[k]; !ok {
			names[k] = f.Name
		}
	}
	for _, name := range extra {
		trimmed := strings.TrimSpace(name)
		k := foldKey(trimmed)
		if other, ok := names[k]; ok {
			how := "only by case"
			switch {
			case trimmed != name && strings.TrimSpace(other) == trimmed:
				how = "only by surrounding whitespace"
			case trimmed != name || strings.TrimSpace(other) != other:
				how = "only by case and surrounding whitespace"
			}
			return &FileError{Key: ro.key, Column: name, Reason: fmt.Sprintf("column %q would be a new column differing from %q %s; rename it in the file (engines that ignore case, such as DuckDB and Spark, cannot tell such columns apart)",
				name, other, how)}
		}
		if trimmed != name {
			return &FileError{Key: ro.key, Column: name, Reason: fmt.Sprintf("column %q would be a new column whose name begins or ends with whitespace; rename it in the file", name)}
		}
		names[k] = name
	}
	return nil
}

// foldKey returns s with each rune replaced by the smallest rune of its
// Unicode simple case folding orbit: two strings have the same key exactly
// when strings.EqualFold says they are equal.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b.WriteRune(low)
	}
	return b.String()
}

// maxNamedColumns is how many further column names a reason quotes; the
// others are counted ("and 29,990 more"), so that a file of a million
// columns is refused with a reason of one line.
const maxNamedColumns = 10

// othersNamed returns " (nor is "b")" or " (nor are "b", "c" and K more)"
// for the columns of others, "" for none.
func othersNamed(others []string) string {
	if len(others) == 0 {
		return ""
	}
	named := others[:min(len(others), maxNamedColumns)]
	quoted := make([]string, len(named))
	for i, n := range named {
		quoted[i] = strconv.Quote(n)
	}
	list := strings.Join(quoted, ", ")
	if more := len(others) - len(named); more > 0 {
		list += " and " + strconv.Itoa(more) + " more"
	}
	verb := "are"
	if len(others) == 1 {
		verb = "is"
	}
	return " (nor " + verb + " " + list + ")"
}

// convert returns a batch with exactly the target schema (the same
// *arrow.Schema pointer). rec is not released.
func (c *conformer) convert(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error) {
	if c.ro.skipRows != nil {
		return c.convertSkipping(rec, rowBase)
	}
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, len(c.convs))
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	for i, conv := range c.convs {
		if conv == nil {
			cols = append(cols, array.MakeArrayOfNull(c.ro.mem, c.target.Field(i).Type, n))
			continue
		}
		out, err := conv(rec.Column(c.srcIdx[i]), rowBase)
		if err != nil {
			return nil, err
		}
		cols = append(cols, out)
	}
	return array.NewRecordBatch(c.target, cols, int64(n)), nil
}

// makeConverter picks the conversion from a source column type to a target
// field. Dictionary columns are decoded to their value type first; nulls are
// rejected for required fields and always for the time column (a null must
// never be written as 0, see docs/iceberg-go.md, "Writing data files").
func makeConverter(ro *resolved, col string, src arrow.DataType, dst arrow.Field, isTime bool) (convertFn, error) {
	valueType, dict := src, false
	if d, ok := src.(*arrow.DictionaryType); ok {
		valueType, dict = d.ValueType, true
	}
	_, strict := src.(*strictFloatType)
	if strict {
		valueType = src.(*strictFloatType).StorageType()
	}
	core, err := coreConverter(ro, col, valueType, dst.Type, isTime)
	if err != nil {
		return nil, err
	}
	required := !dst.Nullable || isTime
	return func(arr arrow.Array, rowBase int64) (arrow.Array, error) {
		if strict {
			arr = storageOf(arr)
		}
		if dict {
			d := arr.(*array.Dictionary)
			dec, err := take(ro.mem, d.Dictionary(), d.Indices())
			if err != nil {
				return nil, &FileError{Key: ro.key, Column: col, Reason: "cannot decode dictionary column", Err: err}
			}
			defer dec.Release()
			arr = dec
		}
		if required && arr.NullN() > 0 {
			for i := 0; i < arr.Len(); i++ {
				if arr.IsNull(i) {
					return nil, &FileError{Key: ro.key, Row: rowBase + int64(i) + 1, Column: col, Reason: "null in required column", nullCell: true}
				}
			}
		}
		return core(arr, rowBase)
	}, nil
}

// coreConverter implements the casts allowed on append: text to any
// supported scalar type, lossless integer/float widening, timestamp unit and
// zone changes, and numeric epochs for the time column when a time unit is
// set. Everything else is an error naming the column.
func coreConverter(ro *resolved, col string, src, dst arrow.DataType, isTime bool) (convertFn, error) {
	if arrow.TypeEqual(src, dst) {
		switch dst.ID() {
		case arrow.TIMESTAMP:
			return newTimeRange(dst.(*arrow.TimestampType).Unit, isTime).passThrough(ro, col, dst), nil
		case arrow.STRING, arrow.LARGE_STRING:
			return utf8PassThrough(ro, col, dst), nil
		case arrow.DECIMAL128:
			return decimalPassThrough(ro, col, src.(*arrow.Decimal128Type), dst), nil
		case arrow.TIME64:
			return timeOfDayPassThrough(ro, col, dst), nil
		}
		return passThrough(dst), nil
	}
	if src.ID() == arrow.NULL {
		return func(arr arrow.Array, _ int64) (arrow.Array, error) {
			return array.MakeArrayOfNull(ro.mem, dst, arr.Len()), nil
		}, nil
	}
	mismatch := func(extra string) error {
		reason := fmt.Sprintf("cannot convert file type %s to table type %s", src, typeName(dst))
		if extra != "" {
			reason += " (" + extra + ")"
		}
		return &FileError{Key: ro.key, Column: col, Reason: reason}
	}
	text := isText(src)
	cannot := func(s string) string {
		return "cannot parse " + quoteValue(s) + " as " + typeName(dst)
	}

	switch dt := dst.(type) {
	case *arrow.Int32Type, *arrow.Int64Type, *arrow.Float32Type, *arrow.Float64Type:
		if text {
			return textNumber(ro, col, dst), nil
		}
		if conv := numberToNumber(ro, col, src, dst); conv != nil {
			return conv, nil
		}
		return nil, mismatch("")

	case *arrow.BooleanType:
		if text {
			return build(ro, col, dst, textFill(func(b *array.BooleanBuilder, s string) string {
				switch strings.ToLower(strings.TrimSpace(s)) {
				case "true", "1":
					b.Append(true)
				case "false", "0":
					b.Append(false)
				default:
					if isNullToken(s) {
						return cannot(s) + " (" + nullTokenHint + ")"
					}
					return cannot(s)
				}
				return ""
			})), nil
		}
		return nil, mismatch("")

	case *arrow.StringType:
		if isUUID(src) {
			return build(ro, col, dst, func(arr arrow.Array) func(*array.StringBuilder, int) (string, string) {
				a := arr.(array.ExtensionArray).Storage().(*array.FixedSizeBinary)
				return func(b *array.StringBuilder, i int) (string, string) {
					b.Append(uuid.UUID(a.Value(i)).String())
					return "", ""
				}
			}), nil
		}
		if text {
			return build(ro, col, dst, textFill(func(b *array.StringBuilder, s string) string {
				if reason := textProblem(ro, s); reason != "" {
					return reason
				}
				b.Append(s)
				return ""
			})), nil
		}
		return nil, mismatch("")

	case *arrow.LargeStringType:
		if text {
			return build(ro, col, dst, textFill(func(b *array.LargeStringBuilder, s string) string {
				if reason := textProblem(ro, s); reason != "" {
					return reason
				}
				b.Append(s)
				return ""
			})), nil
		}
		return nil, mismatch("")

	case *arrow.BinaryType, *arrow.LargeBinaryType:
		if text || isBinary(src) {
			return build(ro, col, dst, func(arr arrow.Array) func(*array.BinaryBuilder, int) (string, string) {
				get := bytesValues(arr)
				return func(b *array.BinaryBuilder, i int) (string, string) {
					v := get(i)
					if ro.text && bytes.IndexByte(v, 0) >= 0 {
						return string(v), nulProblem(ro, string(v)) // CSV text holds no NUL bytes
					}
					b.Append(v)
					return "", ""
				}
			}), nil
		}
		return nil, mismatch("")

	case *arrow.TimestampType:
		return timestampConverter(ro, col, src, dt, isTime, mismatch)

	case *arrow.Date32Type:
		switch {
		case text:
			return build(ro, col, dst, textFill(func(b *array.Date32Builder, s string) string {
				v, ok := parseDate(s)
				if !ok {
					return cannot(s) + " (expected YYYY-MM-DD)"
				}
				b.Append(arrow.Date32(v))
				return ""
			})), nil
		case src.ID() == arrow.DATE64:
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Date32Builder, int) (string, string) {
				a := arr.(*array.Date64)
				return func(b *array.Date32Builder, i int) (string, string) {
					b.Append(arrow.Date32(floorDiv(int64(a.Value(i)), 86_400_000)))
					return "", ""
				}
			}), nil
		}
		return nil, mismatch("")

	case *arrow.Time64Type:
		unit := dt.Unit
		switch {
		case text:
			return build(ro, col, dst, textFill(func(b *array.Time64Builder, s string) string {
				us, ok := parseTimeOfDay(s)
				if !ok {
					return cannot(s) + " (expected HH:MM:SS)"
				}
				v, _ := convertUnit(us, arrow.Microsecond, unit)
				b.Append(arrow.Time64(v))
				return ""
			})), nil
		case src.ID() == arrow.TIME32 || src.ID() == arrow.TIME64:
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Time64Builder, int) (string, string) {
				var get func(int) int64
				var from arrow.TimeUnit
				switch a := arr.(type) {
				case *array.Time32:
					get, from = func(i int) int64 { return int64(a.Value(i)) }, a.DataType().(*arrow.Time32Type).Unit
				case *array.Time64:
					get, from = func(i int) int64 { return int64(a.Value(i)) }, a.DataType().(*arrow.Time64Type).Unit
				}
				return func(b *array.Time64Builder, i int) (string, string) {
					v, _ := convertUnit(get(i), from, unit)
					if reason := timeOfDayProblem(v, unit); reason != "" {
						return strconv.FormatInt(get(i), 10) + " " + from.String(), reason
					}
					b.Append(arrow.Time64(v))
					return "", ""
				}
			}), nil
		}
		return nil, mismatch("")

	case *arrow.Decimal128Type:
		if sd, ok := src.(*arrow.Decimal128Type); ok && sd.Scale == dt.Scale && sd.Precision <= dt.Precision {
			// A wider precision holds every value (an Iceberg type
			// promotion).
			return decimalPassThrough(ro, col, sd, dst), nil
		}
		if text {
			prec, scale := dt.Precision, dt.Scale
			return build(ro, col, dst, textFill(func(b *array.Decimal128Builder, s string) string {
				num, problem := s, ""
				if ro.decimalComma {
					if num, problem = decimalPoint(s); problem != "" {
						return numberReason(s, dst, problem)
					}
				}
				n, problem, scaleProblem := parseDecimalText(num, prec, scale)
				if scaleProblem {
					// Named by the scale alone: the precision it was
					// checked against may have been widened meanwhile
					// (--evolve widen), and no precision holds it.
					return quoteValue(s) + " has " + problem
				}
				if problem != "" {
					return numberReason(s, dst, problem)
				}
				b.Append(n)
				return ""
			})), nil
		}
		return nil, mismatch("")
	}
	return nil, mismatch("")
}

// textNumber parses text into int32/int64/float32/float64 under the text
// number rules (numbers.go). Integers are accepted for float targets (so a
// file whose values happen to be whole numbers fits a double column) when
// the type holds them exactly.
func textNumber(ro *resolved, col string, dst arrow.DataType) convertFn {
	switch dst.ID() {
	case arrow.INT32:
		return textNumbers(ro, col, dst, func(s string) (int32, string) { v, p := parseIntText(s, 32); return int32(v), p },
			(*array.Int32Builder).Append)
	case arrow.INT64:
		return textNumbers(ro, col, dst, func(s string) (int64, string) { return parseIntText(s, 64) },
			(*array.Int64Builder).Append)
	case arrow.FLOAT32:
		return textNumbers(ro, col, dst, func(s string) (float32, string) { v, p := ro.parseFloat(s, 32); return float32(v), p },
			(*array.Float32Builder).Append)
	default:
		return textNumbers(ro, col, dst, func(s string) (float64, string) { return ro.parseFloat(s, 64) },
			(*array.Float64Builder).Append)
	}
}

// textNumbers converts text into numbers of dst with parse (its problem
// "" for a value it accepts): a batch at a time (inBatches), or row by row
// appending with add, which words the first refusal (numberReason).
func textNumbers[T int32 | int64 | float32 | float64, B array.Builder](ro *resolved, col string, dst arrow.DataType,
	parse func(string) (T, string), add func(B, T)) convertFn {
	return inBatches(ro, dst, func() func(string) (T, bool) {
		return func(s string) (T, bool) { v, problem := parse(s); return v, problem == "" }
	}, build(ro, col, dst, textFill(func(b B, s string) string {
		v, problem := parse(s)
		if problem != "" {
			return numberReason(s, dst, problem)
		}
		add(b, v)
		return ""
	})))
}

// parseFloat is parseFloatText of text written with the file's decimal
// separator (a comma with CSV.DecimalComma).
func (ro *resolved) parseFloat(s string, bitSize int) (float64, string) {
	if ro.decimalComma {
		num, problem := decimalPoint(s)
		if problem != "" {
			return 0, problem
		}
		s = num
	}
	return parseFloatText(s, bitSize)
}

// numberToNumber returns the widening conversion between numeric types, or
// nil when it is not allowed. Allowed: any narrower signed integer, and
// uint8/uint16 into int; int8..int64 and uint8..uint64 into long (uint64
// values above 2^63-1 fail per row); 8/16-bit integers, float16 and float32
// into float; every integer and float into double.
func numberToNumber(ro *resolved, col string, src, dst arrow.DataType) convertFn {
	bits := 0
	if fw, ok := src.(arrow.FixedWidthDataType); ok {
		bits = fw.BitWidth()
	}
	signed, unsigned, float := isSigned(src), isUnsigned(src), isFloat(src)
	switch dst.ID() {
	case arrow.INT32:
		if (signed && bits <= 32) || (unsigned && bits <= 16) {
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Int32Builder, int) (string, string) {
				get := int64Values(arr)
				return func(b *array.Int32Builder, i int) (string, string) { b.Append(int32(get(i))); return "", "" }
			})
		}
	case arrow.INT64:
		if signed || unsigned {
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Int64Builder, int) (string, string) {
				if signed {
					get := int64Values(arr)
					return func(b *array.Int64Builder, i int) (string, string) { b.Append(get(i)); return "", "" }
				}
				get := uint64Values(arr)
				return func(b *array.Int64Builder, i int) (string, string) {
					v := get(i)
					if v > math.MaxInt64 {
						s := strconv.FormatUint(v, 10)
						return s, "value " + s + " does not fit in long"
					}
					b.Append(int64(v))
					return "", ""
				}
			})
		}
	case arrow.FLOAT32:
		if ((signed || unsigned) && bits <= 16) || (float && bits <= 32) {
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Float32Builder, int) (string, string) {
				get := float64Values(arr)
				return func(b *array.Float32Builder, i int) (string, string) { b.Append(float32(get(i))); return "", "" }
			})
		}
	case arrow.FLOAT64:
		switch {
		case float || (signed && bits <= 32) || (unsigned && bits <= 32):
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Float64Builder, int) (string, string) {
				get := float64Values(arr)
				return func(b *array.Float64Builder, i int) (string, string) { b.Append(get(i)); return "", "" }
			})
		case signed:
			// A double holds every integer up to 2^53 exactly, and only
			// some beyond: the others are refused, never rounded.
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Float64Builder, int) (string, string) {
				get := int64Values(arr)
				return func(b *array.Float64Builder, i int) (string, string) {
					v := get(i)
					if !exactInt64(v) {
						s := strconv.FormatInt(v, 10)
						return s, "value " + s + " would be stored rounded in a double (" + wholeNumberLimit(64) + ")"
					}
					b.Append(float64(v))
					return "", ""
				}
			})
		case unsigned:
			return build(ro, col, dst, func(arr arrow.Array) func(*array.Float64Builder, int) (string, string) {
				get := uint64Values(arr)
				return func(b *array.Float64Builder, i int) (string, string) {
					v := get(i)
					if !exactUint64(v) {
						s := strconv.FormatUint(v, 10)
						return s, "value " + s + " would be stored rounded in a double (" + wholeNumberLimit(64) + ")"
					}
					b.Append(float64(v))
					return "", ""
				}
			})
		}
	}
	return nil
}

// timestampConverter handles every source that may become a timestamp:
// text (RFC 3339, see timeparse.go), timestamps of any unit and zone, and
// integer/float epochs for the time column when a time unit is set. Values
// of the time column outside the accepted years (timeRange) are refused
// whatever their source.
//
// A timestamp without zone (Parquet isAdjustedToUTC=false) going into a
// zoned target (Iceberg timestamptz) is read as wall-clock time in
// AssumeLocation, i.e. as UTC when AssumeLocation is nil; a wall-clock time
// that does not exist there or occurs twice is refused. A zoned timestamp
// going into a target without zone keeps its UTC wall-clock value.
func timestampConverter(ro *resolved, col string, src arrow.DataType, dst *arrow.TimestampType, isTime bool, mismatch func(string) error) (convertFn, error) {
	tc := &timeConv{unit: dst.Unit, naive: dst.TimeZone == "", loc: ro.loc, hintEpoch: isTime}
	if isTime {
		tc.epoch, tc.epochSet = ro.epoch, ro.epochSet
	}
	rng := newTimeRange(dst.Unit, isTime)
	if isText(src) {
		rowByRow := build(ro, col, dst, func(arr arrow.Array) func(*array.TimestampBuilder, int) (string, string) {
			get := textValues(arr)
			// Rows of several series often share a time: a value equal
			// to the previous row's was accepted already, with this result.
			var last string
			var lastV int64
			have := false
			return func(b *array.TimestampBuilder, i int) (string, string) {
				s := get(i)
				if have && s == last {
					b.Append(arrow.Timestamp(lastV))
					return "", ""
				}
				v, reason, ok := tc.fromText(s)
				if !ok {
					return s, reason
				}
				if !rng.accepts(v) {
					hint := ""
					if tc.epochSet && !strings.ContainsAny(s, ":-") {
						hint = epochHint // a number, not RFC 3339 text
					}
					return s, rng.problem(v, hint)
				}
				b.Append(arrow.Timestamp(v))
				last, lastV, have = s, v, true
				return "", ""
			}
		})
		return inBatches(ro, dst, func() func(string) (int64, bool) {
			// A text equal to the row before's takes its value.
			var last string
			var lastV int64
			have := false
			return func(s string) (int64, bool) {
				if have && s == last {
					return lastV, true
				}
				v, _, ok := tc.fromText(s)
				if !ok || !rng.accepts(v) {
					return 0, false
				}
				last, lastV, have = s, v, true
				return v, true
			}
		}, rowByRow), nil
	}
	if st, ok := src.(*arrow.TimestampType); ok {
		from := st.Unit
		if arrow.TypeEqual(src, dst) {
			return rng.passThrough(ro, col, dst), nil
		}
		shift := st.TimeZone == "" && dst.TimeZone != "" && ro.loc != nil && ro.loc != time.UTC
		return build(ro, col, dst, func(arr arrow.Array) func(*array.TimestampBuilder, int) (string, string) {
			a := arr.(*array.Timestamp)
			return func(b *array.TimestampBuilder, i int) (string, string) {
				raw := int64(a.Value(i))
				shown := func() string { return a.Value(i).ToTime(from).Format(time.RFC3339Nano) }
				var v int64
				if shift {
					wall := a.Value(i).ToTime(from)
					inst, issue := wallInstant(wall.Year(), int(wall.Month()), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), ro.loc)
					if issue != nil {
						w := wall.Format("2006-01-02 15:04:05.999999999")
						return w, localTimeReason(w, ro.loc, issue)
					}
					var ok bool
					if v, ok = timeToUnit(inst, dst.Unit); !ok {
						return shown(), timestampRangeReason(shown(), raw, from, dst)
					}
				} else {
					var ok bool
					if v, ok = convertUnit(raw, from, dst.Unit); !ok {
						return shown(), timestampRangeReason(shown(), raw, from, dst)
					}
				}
				if reason := rng.problem(v, ""); reason != "" {
					return shown(), reason
				}
				b.Append(arrow.Timestamp(v))
				return "", ""
			}
		}), nil
	}
	if isSigned(src) || isUnsigned(src) || isFloat(src) {
		if !isTime {
			return nil, mismatch("")
		}
		if !tc.epochSet {
			return nil, mismatch("numeric time column needs a time unit: --time-unit s, ms, us or ns")
		}
		float := isFloat(src)
		return build(ro, col, dst, func(arr arrow.Array) func(*array.TimestampBuilder, int) (string, string) {
			var gi func(int) int64
			var gu func(int) uint64
			var gf func(int) float64
			switch {
			case float:
				gf = float64Values(arr)
			case isSigned(src):
				gi = int64Values(arr)
			default:
				gu = uint64Values(arr)
			}
			return func(b *array.TimestampBuilder, i int) (string, string) {
				var v int64
				var ok bool
				var shown string
				switch {
				case gf != nil:
					f := gf(i)
					v, ok = floatEpochToUnit(f, tc.epoch, dst.Unit)
					shown = strconv.FormatFloat(f, 'g', -1, 64)
				case gi != nil:
					x := gi(i)
					v, ok = convertUnit(x, tc.epoch, dst.Unit)
					shown = strconv.FormatInt(x, 10)
				default:
					x := gu(i)
					ok = x <= math.MaxInt64
					if ok {
						v, ok = convertUnit(int64(x), tc.epoch, dst.Unit)
					}
					shown = strconv.FormatUint(x, 10)
				}
				if !ok {
					return shown, "epoch value " + shown + " is out of range"
				}
				if reason := rng.problem(v, epochHint); reason != "" {
					return shown, reason
				}
				b.Append(arrow.Timestamp(v))
				return "", ""
			}
		}), nil
	}
	return nil, mismatch("")
}

// decimalPassThrough relabels a decimal column of type src as dst (the same
// scale, a precision at least src's), refusing a value with more digits
// than src's precision. A Parquet DECIMAL's unscaled value has the bits of
// its physical type, which hold more digits than the precision the column
// declares (LogicalTypes.md, DECIMAL: the precision is "the number of
// digits in the unscaled value"), and arrow-go reads it as it is; a table
// column never holds a value beyond its type.
func decimalPassThrough(ro *resolved, col string, src *arrow.Decimal128Type, dst arrow.DataType) convertFn {
	return checkedPassThrough(ro, col, dst, func(arr arrow.Array, i int) (string, string) {
		v := arr.(*array.Decimal128).Value(i)
		if v.FitsInPrecision(src.Precision) {
			return "", ""
		}
		s := v.ToString(src.Scale)
		return s, fmt.Sprintf("value %s has more digits than the precision %d of the column's type %s: the file holds a value its own type does not", s, src.Precision, typeName(src))
	})
}

// checkedPassThrough is passThrough refusing the first non-null value that
// problem gives a reason for (and the value as text).
func checkedPassThrough(ro *resolved, col string, dst arrow.DataType, problem func(arr arrow.Array, i int) (value, reason string)) convertFn {
	relabel := passThrough(dst)
	return func(arr arrow.Array, rowBase int64) (arrow.Array, error) {
		for i := 0; i < arr.Len(); i++ {
			if arr.IsNull(i) {
				continue
			}
			if value, reason := problem(arr, i); reason != "" {
				return nil, &FileError{Key: ro.key, Row: rowBase + int64(i) + 1, Column: col, Value: value, Reason: reason}
			}
		}
		return relabel(arr, rowBase)
	}
}

// timeOfDayProblem returns the reason a time of day v (in unit) is
// refused, or "": a time is of one day, 00:00:00 up to 23:59:59.999999
// (Iceberg spec, "Primitive Types": time; Parquet LogicalTypes.md, TIME:
// the time since midnight).
func timeOfDayProblem(v int64, unit arrow.TimeUnit) string {
	day, _ := convertUnit(86_400, arrow.Second, unit)
	if v >= 0 && v < day {
		return ""
	}
	shown := strconv.FormatInt(v, 10) + " " + unit.String()
	if d := time.Duration(unit.Multiplier()); v > -day && v < 2*day {
		shown = (time.Duration(v) * d).String()
	}
	return "time of day " + shown + " is not within a day (00:00:00 to 23:59:59.999999)"
}

// timeOfDayPassThrough is passThrough for a time column of the target's
// type, refusing a time not within a day.
func timeOfDayPassThrough(ro *resolved, col string, dst arrow.DataType) convertFn {
	unit := dst.(*arrow.Time64Type).Unit
	return checkedPassThrough(ro, col, dst, func(arr arrow.Array, i int) (string, string) {
		v := int64(arr.(*array.Time64).Value(i))
		if reason := timeOfDayProblem(v, unit); reason != "" {
			return strconv.FormatInt(v, 10) + " " + unit.String(), reason
		}
		return "", ""
	})
}

// epochHint follows the reason of an epoch time outside the accepted years.
const epochHint = " (check --time-unit)"

// passThrough re-labels an array whose type already equals the target type
// with the target's DataType object, sharing the buffers.
func passThrough(dst arrow.DataType) convertFn {
	return func(arr arrow.Array, _ int64) (arrow.Array, error) {
		d := arr.Data()
		nd := array.NewData(dst, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}
}

// build returns a convertFn that appends nulls for null slots and calls the
// per-row fill (prepared once per batch by prep) for the others. A fill that
// returns a non-empty reason aborts with a FileError naming the row, the
// column and the value.
func build[B array.Builder](ro *resolved, col string, dst arrow.DataType, prep func(arr arrow.Array) func(b B, i int) (value, reason string)) convertFn {
	return func(arr arrow.Array, rowBase int64) (arrow.Array, error) {
		b := array.NewBuilder(ro.mem, dst).(B)
		defer b.Release()
		n := arr.Len()
		b.Reserve(n)
		fill := prep(arr)
		for i := 0; i < n; i++ {
			if arr.IsNull(i) {
				b.AppendNull()
				continue
			}
			if value, reason := fill(b, i); reason != "" {
				if nul := nulProblem(ro, value); nul != "" && ro.text {
					reason = nul // what is wrong with the text, more than that it does not parse
				}
				return nil, &FileError{Key: ro.key, Row: rowBase + int64(i) + 1, Column: col, Value: value, Reason: reason}
			}
		}
		return b.NewArray(), nil
	}
}

// textFill adapts a per-string parser to build.
func textFill[B array.Builder](parse func(b B, s string) string) func(arr arrow.Array) func(b B, i int) (string, string) {
	return func(arr arrow.Array) func(b B, i int) (string, string) {
		get := textValues(arr)
		return func(b B, i int) (string, string) {
			s := get(i)
			if reason := parse(b, s); reason != "" {
				return s, reason
			}
			return "", ""
		}
	}
}

func isText(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

// isUUID reports whether dt is Arrow's UUID extension type, which a
// Parquet FIXED_LEN_BYTE_ARRAY(16) annotated UUID reads as.
func isUUID(dt arrow.DataType) bool {
	e, ok := dt.(arrow.ExtensionType)
	return ok && e.ExtensionName() == "arrow.uuid"
}

func isBinary(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return true
	}
	return false
}

func isSigned(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func isUnsigned(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloat(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func textValues(arr arrow.Array) func(int) string {
	switch a := arr.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	case *array.StringView:
		return a.Value
	}
	panic(fmt.Sprintf("decode: not a text array: %s", arr.DataType()))
}

func bytesValues(arr arrow.Array) func(int) []byte {
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value
	case *array.LargeBinary:
		return a.Value
	case *array.BinaryView:
		return a.Value
	}
	get := textValues(arr)
	return func(i int) []byte { return []byte(get(i)) }
}

func int64Values(arr arrow.Array) func(int) int64 {
	switch a := arr.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		return a.Value
	}
	get := uint64Values(arr) // unsigned up to 16 bits (callers check widths)
	return func(i int) int64 { return int64(get(i)) }
}

func uint64Values(arr arrow.Array) func(int) uint64 {
	switch a := arr.(type) {
	case *array.Uint8:
		return func(i int) uint64 { return uint64(a.Value(i)) }
	case *array.Uint16:
		return func(i int) uint64 { return uint64(a.Value(i)) }
	case *array.Uint32:
		return func(i int) uint64 { return uint64(a.Value(i)) }
	case *array.Uint64:
		return a.Value
	}
	panic(fmt.Sprintf("decode: not an integer array: %s", arr.DataType()))
}

func float64Values(arr arrow.Array) func(int) float64 {
	switch a := arr.(type) {
	case *array.Float16:
		return func(i int) float64 { return halfToFloat64(a.Value(i).Uint16()) }
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Float64:
		return a.Value
	}
	if isSigned(arr.DataType()) {
		get := int64Values(arr)
		return func(i int) float64 { return float64(get(i)) }
	}
	get := uint64Values(arr)
	return func(i int) float64 { return float64(get(i)) }
}

// halfToFloat64 widens an IEEE 754 binary16 value, given by its bits, to
// the float64 of the same value (every half float is a float32 and a
// float64 exactly): sign, 5 exponent bits with bias 15, 10 fraction bits;
// exponent 0 is zero or the subnormal fraction * 2^-24, exponent 31
// infinity or NaN (IEEE 754-2019 section 3.4). Own code because arrow-go's
// float16.Num.Float32 (v18.8) copies a subnormal's fraction into a float32
// subnormal without normalising it: 2^-24, about 6e-8, comes out as
// 2^-136, about 1e-41.
func halfToFloat64(bits uint16) float64 {
	sign := 1.0
	if bits&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(bits>>10&0x1f), float64(bits&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// TypeName is the Iceberg name of the table type an Arrow type of a
// column stands for ("double", "decimal(9, 2)", "timestamptz"), as
// messages name it; ParseColumnType reads it back.
func TypeName(dt arrow.DataType) string { return typeName(dt) }

// typeName names an Arrow type the way the Iceberg spec names the table type
// it stands for (Iceberg spec, "Primitive Types"), falling back to Arrow's
// own name.
func typeName(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "long"
	case *arrow.Float32Type:
		return "float"
	case *arrow.Float64Type:
		return "double"
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.StringType, *arrow.LargeStringType:
		return "string"
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return "binary"
	case *arrow.Date32Type:
		return "date"
	case arrow.ExtensionType:
		if isUUID(t) {
			return "uuid"
		}
	case *arrow.Time64Type:
		return "time"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d, %d)", t.Precision, t.Scale)
	case *arrow.TimestampType:
		name := "timestamp"
		if t.TimeZone != "" {
			name = "timestamptz"
		}
		if t.Unit == arrow.Nanosecond {
			name += "_ns"
		}
		return name
	}
	return dt.String()
}

// timestampRangeReason words a timestamp of a file that dst cannot hold:
// the value (shown, as RFC 3339), as the file stores it (raw, in unit from
// since the epoch: Parquet TIMESTAMP(MILLIS), (MICROS), (NANOS)), and the
// range of dst (an int64 of its unit since the epoch: Iceberg's timestamp
// and timestamptz hold microseconds, years -290308 to 294247).
func timestampRangeReason(shown string, raw int64, from arrow.TimeUnit, dst *arrow.TimestampType) string {
	lo := arrow.Timestamp(math.MinInt64).ToTime(dst.Unit).UTC().Format(time.RFC3339Nano)
	hi := arrow.Timestamp(math.MaxInt64).ToTime(dst.Unit).UTC().Format(time.RFC3339Nano)
	return fmt.Sprintf("timestamp %s (%d %s since 1970-01-01) is outside the range of %s, %s to %s",
		quoteValue(shown), raw, unitWords[from], typeName(dst), lo, hi)
}

// unitWords names a time unit in a message.
var unitWords = map[arrow.TimeUnit]string{arrow.Second: "seconds", arrow.Millisecond: "milliseconds",
	arrow.Microsecond: "microseconds", arrow.Nanosecond: "nanoseconds"}

// Times outside these years are refused in the time column, whatever the
// source (text, epoch numbers, Parquet timestamps of any unit): they come
// from a wrong --time-unit (milliseconds read as seconds land in year
// 57,983) or a placeholder value (0001-01-01, 9999-12-31), not from a
// gateway's clock. Other timestamp columns take any value their type holds.
const (
	minTimeYear = 1900
	maxTimeYear = 2199
)

// timeRange checks time column values (in unit) against the accepted
// years; with check false it accepts everything.
type timeRange struct {
	unit   arrow.TimeUnit
	check  bool
	lo, hi int64 // the accepted values: [lo, hi)
}

func newTimeRange(unit arrow.TimeUnit, check bool) timeRange {
	lo, _ := timeToUnit(time.Date(minTimeYear, 1, 1, 0, 0, 0, 0, time.UTC), unit)
	hi, _ := timeToUnit(time.Date(maxTimeYear+1, 1, 1, 0, 0, 0, 0, time.UTC), unit)
	return timeRange{unit: unit, check: check, lo: lo, hi: hi}
}

// accepts reports whether v is accepted.
func (r timeRange) accepts(v int64) bool { return !r.check || (v >= r.lo && v < r.hi) }

// problem returns the reason v is refused, or "".
func (r timeRange) problem(v int64, hint string) string {
	if r.accepts(v) {
		return ""
	}
	y := arrow.Timestamp(v).ToTime(r.unit).UTC().Year()
	return fmt.Sprintf("time in year %d is outside the accepted years %d-%d%s", y, minTimeYear, maxTimeYear, hint)
}

// passThrough is passThrough for a timestamp column of the target's type,
// checking the accepted years when r.check is set.
func (r timeRange) passThrough(ro *resolved, col string, dst arrow.DataType) convertFn {
	if !r.check {
		return passThrough(dst)
	}
	return checkedPassThrough(ro, col, dst, func(arr arrow.Array, i int) (string, string) {
		v := arr.(*array.Timestamp).Value(i)
		if reason := r.problem(int64(v), ""); reason != "" {
			return v.ToTime(r.unit).Format(time.RFC3339Nano), reason
		}
		return "", ""
	})
}

// textBatch converts a batch of text values that parse accepts, every
// one, or returns nil for the row-by-row conversion (build) to convert it
// and word the first refusal. It computes what the row-by-row conversion
// does without a builder or a call of it per row: the values straight into
// a buffer, the validity of the text as it is (a null stays null). The
// time column and the number columns of every text file the table's types
// are known for (the file that created the table, JSON) go through it.
func textBatch[T int32 | int64 | float32 | float64](mem memory.Allocator, dst arrow.DataType, arr arrow.Array, parse func(string) (T, bool)) arrow.Array {
	a, ok := arr.(*array.String)
	if !ok || a.Data().Offset() != 0 {
		return nil
	}
	n := a.Len()
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(n * int(unsafe.Sizeof(T(0))))
	out := arrow.GetData[T](values.Bytes())[:n]
	offsets, text := a.ValueOffsets(), a.ValueBytes()
	for i := range n {
		if a.IsNull(i) {
			out[i] = 0
			continue
		}
		s := text[offsets[i]:offsets[i+1]]
		v, ok := parse(unsafe.String(unsafe.SliceData(s), len(s)))
		if !ok {
			return nil
		}
		out[i] = v
	}
	bufs := []*memory.Buffer{nil, values}
	if a.NullN() > 0 {
		bufs[0] = a.Data().Buffers()[0]
	}
	d := array.NewData(dst, n, bufs, nil, a.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// inBatches converts a batch with textBatch and parse (made once per
// batch: it may keep state from row to row), else row by row.
func inBatches[T int32 | int64 | float32 | float64](ro *resolved, dst arrow.DataType, parse func() func(string) (T, bool), rowByRow convertFn) convertFn {
	return func(arr arrow.Array, rowBase int64) (arrow.Array, error) {
		if out := textBatch(ro.mem, dst, arr, parse()); out != nil {
			return out, nil
		}
		return rowByRow(arr, rowBase) // words the refusal
	}
}
