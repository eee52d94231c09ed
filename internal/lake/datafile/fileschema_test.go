package datafile

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestFileSchemaStoresWhatPqarrowStores: the footer metadata fileSchema
// gives a file with dictionary columns is, byte for byte, what pqarrow's
// WithStoreSchema stores for the table's schema, nested columns and
// arrow-go's own list element names included.
func TestFileSchemaStoresWhatPqarrowStores(t *testing.T) {
	sch := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 6, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
		iceberg.NestedField{ID: 4, Name: "pos", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "x", Type: iceberg.PrimitiveTypes.Float64},
		}}},
		iceberg.NestedField{ID: 5, Name: "attrs", Type: &iceberg.MapType{KeyID: 8, KeyType: iceberg.PrimitiveTypes.String, ValueID: 9, ValueType: iceberg.PrimitiveTypes.Int64}},
	)
	icebergSc, err := table.SchemaToArrowSchema(sch, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	// And a schema of arrow-go's own list element name ("item").
	own := arrow.NewSchema(append(icebergSc.Fields(), arrow.Field{Name: "items", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}), nil)
	for _, sc := range []*arrow.Schema{icebergSc, own} {
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		want := r.MetaData().KeyValueMetadata()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		cols := make([]arrow.Array, sc.NumFields())
		fields := sc.Fields()
		for i, f := range fields {
			dt := f.Type
			if i == 1 {
				dt = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: f.Type}
				fields[i].Type = dt
			}
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, dt, 0)
			defer cols[i].Release()
		}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 0)
		got, dict, err := fileSchema(sc, rec)
		rec.Release()
		if err != nil || !dict {
			t.Fatalf("fileSchema: %v, %v", dict, err)
		}
		md := got.Metadata()
		if len(want.Keys()) != md.Len() {
			t.Fatalf("keys %v, pqarrow's %v", md.Keys(), want.Keys())
		}
		for i, k := range want.Keys() {
			if md.Keys()[i] != k || md.Values()[i] != want.Values()[i] {
				t.Errorf("key %d: %s = %.60s..., pqarrow's %s = %.60s...", i, md.Keys()[i], md.Values()[i], k, want.Values()[i])
			}
		}
	}
}
