package pqlite

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/timelake/timelake/internal/decode"
)

// logical is the logical type of a schema element as arrow-go reads it:
// its LogicalType, or the one its ConvertedType stands for.
type logical struct {
	v             format.LogicalTypeValue // nil: none
	fromConverted bool                    // a timestamp of a converted type (UTC)
	unknown       bool                    // a converted type of no logical type
}

func elementLogical(el *format.SchemaElement) logical {
	if el.LogicalType.Value != nil {
		return logical{v: el.LogicalType.Value}
	}
	ct, ok := el.ConvertedType.Get()
	if !ok {
		return logical{}
	}
	unit := func(u format.TimeUnitValue) format.TimeUnit { return format.TimeUnit{Value: u} }
	switch ct {
	case deprecated.UTF8:
		return logical{v: &format.StringType{}}
	case deprecated.Map, deprecated.MapKeyValue:
		return logical{v: &format.MapType{}}
	case deprecated.List:
		return logical{v: &format.ListType{}}
	case deprecated.Enum:
		return logical{v: &format.EnumType{}}
	case deprecated.Decimal:
		p, _ := el.Precision.Get()
		s, _ := el.Scale.Get()
		return logical{v: &format.DecimalType{Precision: p, Scale: s}}
	case deprecated.Date:
		return logical{v: &format.DateType{}}
	case deprecated.TimeMillis:
		return logical{v: &format.TimeType{IsAdjustedToUTC: true, Unit: unit(&format.MilliSeconds{})}}
	case deprecated.TimeMicros:
		return logical{v: &format.TimeType{IsAdjustedToUTC: true, Unit: unit(&format.MicroSeconds{})}}
	case deprecated.TimestampMillis:
		return logical{v: &format.TimestampType{IsAdjustedToUTC: true, Unit: unit(&format.MilliSeconds{})}, fromConverted: true}
	case deprecated.TimestampMicros:
		return logical{v: &format.TimestampType{IsAdjustedToUTC: true, Unit: unit(&format.MicroSeconds{})}, fromConverted: true}
	case deprecated.Uint8, deprecated.Uint16, deprecated.Uint32, deprecated.Uint64,
		deprecated.Int8, deprecated.Int16, deprecated.Int32, deprecated.Int64:
		widths := map[deprecated.ConvertedType]int8{deprecated.Uint8: 8, deprecated.Uint16: 16, deprecated.Uint32: 32, deprecated.Uint64: 64,
			deprecated.Int8: 8, deprecated.Int16: 16, deprecated.Int32: 32, deprecated.Int64: 64}
		return logical{v: &format.IntType{BitWidth: widths[ct], IsSigned: ct >= deprecated.Int8}}
	case deprecated.Json:
		return logical{v: &format.JsonType{}}
	case deprecated.Bson:
		return logical{v: &format.BsonType{}}
	case deprecated.Interval:
		return logical{unknown: true, v: nil}
	}
	return logical{unknown: true}
}

// nestedName names the kind of a nested Parquet column (pqarrow names its
// Arrow type).
func nestedName(n *node) string {
	if n.repetition() == format.Repeated {
		return "list (a repeated field)"
	}
	switch elementLogical(n.el).v.(type) {
	case *format.ListType:
		return "list"
	case *format.MapType:
		return "map"
	case *format.VariantType:
		return "variant"
	}
	return "struct"
}

// unitOf is the unit of a time or timestamp type.
func unitOf(u format.TimeUnit) string {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return "ms"
	case *format.MicroSeconds:
		return "us"
	case *format.NanoSeconds:
		return "ns"
	}
	return ""
}

// decimalDigits is the most decimal digits a FIXED_LEN_BYTE_ARRAY of n
// bytes holds.
func decimalDigits(n int32) int32 {
	if n <= 0 || n > 1<<10 {
		return 0
	}
	v := new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))
	return int32(len(v.Sub(v, big.NewInt(1)).String()))
}

// parquetArrowType is the Arrow type pqarrow reads a flat column of n as
// (pqarrow's getArrowType, after arrow-go's checks of the logical type
// against the physical one).
func parquetArrowType(n *node) (arrow.DataType, error) {
	lt := elementLogical(n.el)
	if lt.unknown {
		if ct, _ := n.el.ConvertedType.Get(); ct == deprecated.Interval && n.physical == format.FixedLenByteArray {
			l, _ := n.el.TypeLength.Get()
			return &arrow.FixedSizeBinaryType{ByteWidth: int(l)}, nil
		}
		return arrow.Null, nil
	}
	if _, unknown := lt.v.(unknownLogical); unknown {
		// A LogicalType of no member arrow-go knows: it panics on it.
		return nil, errors.New("invalid logical type")
	}
	name := "NONE"
	if lt.v != nil {
		name = lt.v.String()
	}
	if _, null := lt.v.(*format.NullType); null {
		return arrow.Null, nil
	}
	decimal := func(l *format.DecimalType) (arrow.DataType, error) {
		limit := int32(38)
		switch n.physical {
		case format.Int32:
			limit = 9
		case format.Int64:
			limit = 18
		case format.FixedLenByteArray:
			w, _ := n.el.TypeLength.Get()
			limit = decimalDigits(w)
		case format.ByteArray:
			limit = 1 << 30
		default:
			return nil, fmt.Errorf("%s cannot annotate %s", name, n.physical)
		}
		if l.Precision < 1 || l.Scale > l.Precision || l.Precision > limit {
			return nil, fmt.Errorf("invalid decimal precision %d, scale %d for %s", l.Precision, l.Scale, n.physical)
		}
		if l.Precision <= 38 {
			return &arrow.Decimal128Type{Precision: l.Precision, Scale: l.Scale}, nil
		}
		return &arrow.Decimal256Type{Precision: l.Precision, Scale: l.Scale}, nil
	}
	integer := func(l *format.IntType) (arrow.DataType, error) {
		if (l.BitWidth == 64) != (n.physical == format.Int64) {
			return nil, fmt.Errorf("%s cannot annotate %s", name, n.physical)
		}
		switch w, signed := l.BitWidth, l.IsSigned; {
		case w == 8 && signed:
			return arrow.PrimitiveTypes.Int8, nil
		case w == 8:
			return arrow.PrimitiveTypes.Uint8, nil
		case w == 16 && signed:
			return arrow.PrimitiveTypes.Int16, nil
		case w == 16:
			return arrow.PrimitiveTypes.Uint16, nil
		case w == 32 && signed:
			return arrow.PrimitiveTypes.Int32, nil
		case w == 32:
			return arrow.PrimitiveTypes.Uint32, nil
		case w == 64 && signed:
			return arrow.PrimitiveTypes.Int64, nil
		case w == 64:
			return arrow.PrimitiveTypes.Uint64, nil
		}
		return nil, errors.New("invalid logical type for int32")
	}
	cannot := func(what string) error { return errors.New(name + " cannot annotate " + what) }
	switch n.physical {
	case format.Boolean:
		if lt.v != nil {
			return nil, cannot("boolean")
		}
		return arrow.FixedWidthTypes.Boolean, nil
	case format.Int32:
		switch l := lt.v.(type) {
		case nil:
			return arrow.PrimitiveTypes.Int32, nil
		case *format.TimeType:
			if unitOf(l.Unit) == "ms" {
				return arrow.FixedWidthTypes.Time32ms, nil
			}
			return nil, cannot("a time32")
		case *format.DecimalType:
			return decimal(l)
		case *format.IntType:
			return integer(l)
		case *format.DateType:
			return arrow.FixedWidthTypes.Date32, nil
		}
		return nil, cannot("int32")
	case format.Int64:
		switch l := lt.v.(type) {
		case nil:
			return arrow.PrimitiveTypes.Int64, nil
		case *format.IntType:
			return integer(l)
		case *format.DecimalType:
			return decimal(l)
		case *format.TimeType:
			switch unitOf(l.Unit) {
			case "us":
				return arrow.FixedWidthTypes.Time64us, nil
			case "ns":
				return arrow.FixedWidthTypes.Time64ns, nil
			}
			return nil, cannot("int64")
		case *format.TimestampType:
			tz := ""
			if l.IsAdjustedToUTC || lt.fromConverted {
				tz = "UTC"
			}
			switch unitOf(l.Unit) {
			case "ms":
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Millisecond}, nil
			case "us":
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Microsecond}, nil
			case "ns":
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Nanosecond}, nil
			}
			return nil, errors.New("Unrecognized unit in timestamp logical type " + name)
		}
		return nil, cannot("int64")
	case format.Int96:
		if lt.v != nil {
			return nil, cannot("int96")
		}
		return arrow.FixedWidthTypes.Timestamp_ns, nil
	case format.Float:
		if lt.v != nil {
			return nil, cannot("float")
		}
		return arrow.PrimitiveTypes.Float32, nil
	case format.Double:
		if lt.v != nil {
			return nil, cannot("double")
		}
		return arrow.PrimitiveTypes.Float64, nil
	case format.ByteArray:
		switch l := lt.v.(type) {
		case *format.StringType:
			return arrow.BinaryTypes.String, nil
		case *format.DecimalType:
			return decimal(l)
		case nil, *format.EnumType, *format.JsonType, *format.BsonType, *format.GeometryType, *format.GeographyType:
			return arrow.BinaryTypes.Binary, nil
		}
		return nil, errors.New("unhandled logicaltype " + name + " for byte_array")
	case format.FixedLenByteArray:
		w, _ := n.el.TypeLength.Get()
		switch l := lt.v.(type) {
		case *format.DecimalType:
			return decimal(l)
		case nil:
			return &arrow.FixedSizeBinaryType{ByteWidth: int(w)}, nil
		case *format.UUIDType:
			if w != 16 {
				return nil, cannot("a fixed-length byte array of other than 16 bytes")
			}
			if uuid := arrow.GetExtensionType("arrow.uuid"); uuid != nil {
				return uuid, nil
			}
			return &arrow.FixedSizeBinaryType{ByteWidth: int(w)}, nil
		case *format.Float16Type:
			if w != 2 {
				return nil, cannot("a fixed-length byte array of other than 2 bytes")
			}
			return arrow.FixedWidthTypes.Float16, nil
		}
		return nil, errors.New("unhandled logical type " + name + " for fixed-length byte array")
	}
	return nil, errors.New("invalid physical column type")
}

// fields are the Arrow fields of the footer's columns, refined by the
// stored Arrow schema when stored is true.
func (f *footer) fields(stored bool) ([]arrow.Field, error) {
	root := f.root
	fields := make([]arrow.Field, len(root.children))
	for i, n := range root.children {
		if n.leaf < 0 || n.repetition() == format.Repeated {
			return nil, &decode.FileError{Column: n.name(), Reason: fmt.Sprintf("unsupported column type %s (lists, structs, maps and other nested or special types cannot be loaded)", nestedName(n))}
		}
		dt, err := parquetArrowType(n)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: n.name(), Type: dt, Nullable: n.repetition() != format.Required}
	}
	if v, ok := f.keyValue(decode.ArrowSchemaKey); ok && stored {
		if err := decode.ApplyStoredSchema(fields, v); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// storedAgrees reports whether the footer's ARROW:schema parses and only
// refines the types of its Parquet schema (decode/arrowpq's
// dropDisagreeingArrowSchema); false without one. A panic while it is
// applied is a disagreement.
func (f *footer) storedAgrees() (ok bool) {
	v, has := f.keyValue(decode.ArrowSchemaKey)
	if !has {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	stored, err := decode.StoredArrowSchema(v)
	if err != nil || stored.NumFields() != len(f.root.children) {
		return false
	}
	plain, err := f.fields(false)
	if err != nil {
		return true // the Parquet schema itself does not read: fields says why
	}
	refined, err := f.fields(true)
	if err != nil || len(refined) != len(plain) {
		return false
	}
	for i := range plain {
		if stored.Field(i).Name != plain[i].Name || !decode.Refines(plain[i].Type, refined[i].Type) {
			return false
		}
	}
	return true
}

// schema is the Arrow schema the file's values are read with: pqarrow's,
// but for the types whose values are read in another layout
// (decode.ReadableRefinement), with ENUM columns as text.
func (f *footer) schema(stored bool) (*arrow.Schema, error) {
	fields, err := f.fields(stored)
	if err != nil {
		return nil, err
	}
	plain, err := f.fields(false)
	if err != nil {
		return nil, err
	}
	for i := range fields {
		fields[i].Type = decode.ReadableRefinement(plain[i].Type, fields[i].Type)
		if _, enum := elementLogical(f.root.children[i].el).v.(*format.EnumType); enum && f.root.children[i].physical == format.ByteArray {
			switch fields[i].Type.ID() {
			case arrow.BINARY:
				fields[i].Type = arrow.BinaryTypes.String
			case arrow.LARGE_BINARY:
				fields[i].Type = arrow.BinaryTypes.LargeString
			}
		}
	}
	return arrow.NewSchema(fields, nil), nil
}
