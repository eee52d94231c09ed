package decode

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestParseColumnTypeAsIceberg: every name gives the Arrow type iceberg-go
// gives the Iceberg type of that name (table.TypeToArrowType), and the
// names iceberg-go refuses, or that are not primitive types a column may
// be given, are refused.
func TestParseColumnTypeAsIceberg(t *testing.T) {
	names := []string{"boolean", "int", "long", "float", "double", "date", "time", "timestamp", "timestamptz",
		"string", "binary", "decimal(9,2)", "Decimal(9, 2)", " DOUBLE ", "decimal(38,38)", "decimal(1,0)"}
	for _, name := range names {
		got, err := ParseColumnType(name)
		if err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		var f iceberg.NestedField
		n := strings.ToLower(strings.Join(strings.Fields(name), ""))
		if err := json.Unmarshal([]byte(`{"id":1,"name":"c","required":false,"type":`+strconv.Quote(n)+`}`), &f); err != nil {
			t.Fatalf("%q: iceberg-go: %v", name, err)
		}
		want, err := table.TypeToArrowType(f.Type, false, false)
		if err != nil {
			t.Fatalf("%q: iceberg-go: %v", name, err)
		}
		if !arrow.TypeEqual(got, want) {
			t.Errorf("%q: %s, iceberg-go gives %s", name, got, want)
		}
	}
	for _, name := range []string{"", "decimal(39,2)", "decimal(0,0)", "decimal(5,6)", "decimal(9)", "uuid", "fixed[4]",
		"timestamp_ns", "list<int>", "integer", "text"} {
		if dt, err := ParseColumnType(name); err == nil {
			t.Errorf("%q: %s, want an error", name, dt)
		} else if !strings.Contains(err.Error(), "expected boolean, int, long") {
			t.Errorf("%q: %v, want the accepted names", name, err)
		}
	}
}
