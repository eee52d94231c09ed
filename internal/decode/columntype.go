package decode

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// decimalName is an Iceberg decimal type name, decimal(P,S), spaces
// removed.
var decimalName = regexp.MustCompile(`^decimal\((\d+),(\d+)\)$`)

// ParseColumnType reads an Iceberg primitive type name (Iceberg spec,
// "Primitive Types": boolean, int, long, float, double, decimal(P,S) with
// 1 <= P <= 38 and 0 <= S <= P, date, time, timestamp, timestamptz, string,
// binary; any case, spaces allowed) and returns the Arrow type a column of
// that type decodes to, the one iceberg-go's table.TypeToArrowType gives.
// Errors name the accepted names.
func ParseColumnType(name string) (arrow.DataType, error) {
	n := strings.ToLower(strings.Join(strings.Fields(name), ""))
	switch n {
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "time":
		return arrow.FixedWidthTypes.Time64us, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz":
		return arrow.FixedWidthTypes.Timestamp_us, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	}
	if m := decimalName.FindStringSubmatch(n); m != nil {
		p, perr := strconv.Atoi(m[1])
		s, serr := strconv.Atoi(m[2])
		if perr == nil && serr == nil && p >= 1 && p <= 38 && s <= p {
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
		}
	}
	return nil, fmt.Errorf("unknown column type %q (expected boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz, string or binary)", name)
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
