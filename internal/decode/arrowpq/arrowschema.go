package arrowpq

import (
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/timelake/timelake/internal/decode"
)

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
func dropDisagreeingArrowSchema(pf *file.Reader, reader Reader) bool {
	md := pf.MetaData()
	kv := md.KeyValueMetadata()
	if kv.FindValue(decode.ArrowSchemaKey) == nil {
		return false
	}
	if arrowSchemaAgrees(md, kv, reader) {
		return false
	}
	kept := make(metadata.KeyValueMetadata, 0, len(kv))
	for i, k := range kv.Keys() {
		if k != decode.ArrowSchemaKey {
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
func arrowSchemaAgrees(md *metadata.FileMetaData, kv metadata.KeyValueMetadata, reader Reader) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	stored, err := decode.StoredArrowSchema(*kv.FindValue(decode.ArrowSchemaKey))
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
		if !decode.Refines(plain[i].Type, refined[i].Type) {
			return false
		}
	}
	return true
}
