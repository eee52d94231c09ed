package profile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake"
)

// TestPropertiesAsTheLakeNamesThem: the properties profiles read are the
// lake's.
func TestPropertiesAsTheLakeNamesThem(t *testing.T) {
	for got, want := range map[string]string{propEvolve: lake.PropEvolve, propOnError: lake.PropOnError, propMaxBadRows: lake.PropMaxBadRows} {
		if got != want {
			t.Errorf("profile reads %q, the lake names it %q", got, want)
		}
	}
}

// TestArrowSchemaAsIcebergGo: an exported schema reads into the Arrow
// schema iceberg-go gives it (with field ids), without iceberg-go.
func TestArrowSchemaAsIcebergGo(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String, Doc: "the device"},
		iceberg.NestedField{ID: 3, Name: "t", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 5, Name: "c", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 6, Name: "amount", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "at", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 9, Name: "local", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 10, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 11, Name: "raw", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 12, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 13, Name: "ns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
	)
	body, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := arrowSchemaOf(body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) || got.String() != want.String() {
		t.Errorf("read\n%s\niceberg-go gives\n%s", got, want)
	}
	nested, _ := json.Marshal(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "tags", Type: &iceberg.ListType{ElementID: 2, Element: iceberg.PrimitiveTypes.String}}))
	if _, err := arrowSchemaOf(nested); err == nil || !strings.Contains(err.Error(), `"tags"`) {
		t.Errorf("a nested column: %v, want an error naming it", err)
	}
}
