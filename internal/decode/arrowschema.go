package decode

import (
	"bytes"
	"encoding/base64"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	// The canonical extension types (arrow.uuid, arrow.json, ...) are
	// registered, so that a stored ARROW:schema naming one reads as that
	// type, as it did when arrow-go's parquet/file linked them (through
	// arrow/compute). It links parquet/schema and parquet/variant, not
	// parquet/file or arrow/compute (docs/architecture.md, "Import rules").
	_ "github.com/apache/arrow-go/v18/arrow/extensions"
)

// ArrowSchemaKey is the key of the footer's key-value metadata under which
// Arrow writers store the Arrow schema of a Parquet file (base64 of an
// Arrow IPC schema message).
const ArrowSchemaKey = "ARROW:schema"

// StoredArrowSchema parses the value of ARROW:schema as pqarrow does:
// base64, padded or not, of an Arrow IPC stream holding the schema.
func StoredArrowSchema(value string) (*arrow.Schema, error) {
	var b []byte
	var err error
	if len(value)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(value)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(value); err != nil {
			return nil, err
		}
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.Schema(), nil
}

// Refines reports whether reading a column of the Parquet-derived type
// plain as refined reads the same values, refined only saying more about
// them: the same type, a zone on a timestamp of the same unit, a duration
// over INT64, the large variant of a string or binary, a 256-bit decimal
// of the same precision and scale, a dictionary or an extension type of
// such a type, and nested types whose children refine those of plain.
func Refines(plain, refined arrow.DataType) bool {
	if arrow.TypeEqual(plain, refined) {
		return true
	}
	switch r := refined.(type) {
	case *arrow.TimestampType:
		p, ok := plain.(*arrow.TimestampType)
		return ok && p.Unit == r.Unit
	case *arrow.DurationType:
		return plain.ID() == arrow.INT64
	case *arrow.LargeStringType:
		return plain.ID() == arrow.STRING
	case *arrow.LargeBinaryType:
		return plain.ID() == arrow.BINARY
	case *arrow.Decimal256Type:
		p, ok := plain.(*arrow.Decimal128Type)
		return ok && p.Precision == r.Precision && p.Scale == r.Scale
	case *arrow.DictionaryType:
		return Refines(plain, r.ValueType)
	case arrow.ExtensionType:
		return Refines(plain, r.StorageType())
	case *arrow.StructType:
		p, ok := plain.(*arrow.StructType)
		if !ok || p.NumFields() != r.NumFields() {
			return false
		}
		for i := range p.NumFields() {
			if p.Field(i).Name != r.Field(i).Name || !Refines(p.Field(i).Type, r.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		p, ok := plain.(*arrow.MapType)
		return ok && Refines(p.KeyType(), r.KeyType()) && Refines(p.ItemType(), r.ItemType())
	case arrow.ListLikeType:
		p, ok := plain.(arrow.ListLikeType)
		return ok && Refines(p.Elem(), r.Elem())
	}
	return false
}
