package decode

import (
	"bytes"
	"encoding/base64"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// arrowSchemaKey is the key of the footer's key-value metadata under which
// Arrow writers store the Arrow schema of a Parquet file (base64 of an
// Arrow IPC schema message).
const arrowSchemaKey = "ARROW:schema"

// dropDisagreeingArrowSchema keeps the footer's ARROW:schema of pf when it
// only refines the Parquet schema's types as reader reads them, and
// otherwise takes it out of pf's copy of the footer, so that the reader
// reads the file by its Parquet schema, the authority. The stored Arrow
// schema refines the types the Parquet schema alone gives: a timestamp's
// zone, a duration stored as INT64, a large string or binary, a 256-bit
// decimal, a dictionary, an extension type over the same storage. pqarrow
// (decode/pqarrowio) trusts it without checking it against the Parquet
// schema and panics while reading a column whose stored Arrow type is of
// another kind (a large string over an INT64 column); an ARROW:schema that
// does not parse makes it refuse the file. It is taken out when it does
// not parse, names other columns, or gives a column a type that is not
// such a refinement. It reports whether it took it out.
func dropDisagreeingArrowSchema(pf *file.Reader, reader ParquetReader) bool {
	md := pf.MetaData()
	kv := md.KeyValueMetadata()
	if kv.FindValue(arrowSchemaKey) == nil {
		return false
	}
	if arrowSchemaAgrees(md, kv, reader) {
		return false
	}
	kept := make(metadata.KeyValueMetadata, 0, len(kv))
	for i, k := range kv.Keys() {
		if k != arrowSchemaKey {
			kept = append(kept, kv[i])
		}
	}
	md.FileMetaData.KeyValueMetadata = kept
	return true
}

// arrowSchemaAgrees reports whether the ARROW:schema in kv parses and only
// refines the types of md's Parquet schema (dropDisagreeingArrowSchema). A
// panic of the reader while it applies the stored schema is a
// disagreement.
func arrowSchemaAgrees(md *metadata.FileMetaData, kv metadata.KeyValueMetadata, reader ParquetReader) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	stored, err := storedArrowSchema(*kv.FindValue(arrowSchemaKey))
	if err != nil || stored.NumFields() != md.Schema.Root().NumFields() {
		return false
	}
	plain, err := reader.Fields(md.Schema, nil)
	if err != nil {
		return true // the Parquet schema itself does not read: the reader says why
	}
	refined, err := reader.Fields(md.Schema, kv)
	if err != nil || len(refined) != len(plain) {
		return false
	}
	for i := range plain {
		if stored.Field(i).Name != plain[i].Name {
			return false
		}
		if !refines(plain[i].Type, refined[i].Type) {
			return false
		}
	}
	return true
}

// storedArrowSchema parses the value of ARROW:schema as pqarrow does:
// base64, padded or not, of an Arrow IPC stream holding the schema.
func storedArrowSchema(value string) (*arrow.Schema, error) {
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

// refines reports whether reading a column of the Parquet-derived type
// plain as refined reads the same values, refined only saying more about
// them: the same type, a zone on a timestamp of the same unit, a duration
// over INT64, the large variant of a string or binary, a 256-bit decimal
// of the same precision and scale, a dictionary or an extension type of
// such a type, and nested types whose children refine those of plain.
func refines(plain, refined arrow.DataType) bool {
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
		return refines(plain, r.ValueType)
	case arrow.ExtensionType:
		return refines(plain, r.StorageType())
	case *arrow.StructType:
		p, ok := plain.(*arrow.StructType)
		if !ok || p.NumFields() != r.NumFields() {
			return false
		}
		for i := range p.NumFields() {
			if p.Field(i).Name != r.Field(i).Name || !refines(p.Field(i).Type, r.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		p, ok := plain.(*arrow.MapType)
		return ok && refines(p.KeyType(), r.KeyType()) && refines(p.ItemType(), r.ItemType())
	case arrow.ListLikeType:
		p, ok := plain.(arrow.ListLikeType)
		return ok && refines(p.Elem(), r.Elem())
	}
	return false
}
