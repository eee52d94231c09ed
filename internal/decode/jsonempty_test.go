package decode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestJSONWithoutObjectsIntoTable: a JSON file without objects (an empty
// array, blank lines) loads as 0 rows into a table that exists, as a CSV
// file of a header alone does; without a table it cannot create one
// (ErrNoRows: ingest leaves it waiting for the table) and upload
// --validate finds it valid.
func TestJSONWithoutObjectsIntoTable(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "value", Type: iceberg.PrimitiveTypes.Float64},
	)
	for _, tc := range []struct{ key, data string }{{"a.json", "[]"}, {"a.json", "[ ]\n"}, {"a.jsonl", "\n\n"}} {
		d, err := decode(t, tc.key, []byte(tc.data), DecodeOptions{Target: target, TimeColumn: "time"})
		if err != nil || d.Rows != 0 {
			t.Errorf("%s %q into a table: %v, %d rows; want 0 rows", tc.key, tc.data, err, d.Rows)
		}
		_, err = decode(t, tc.key, []byte(tc.data), DecodeOptions{})
		if !errors.Is(err, ErrNoRows) || !strings.Contains(err.Error(), "once the table exists, a file without data rows loads as 0 rows") {
			t.Errorf("%s %q without a table: %v; want ErrNoRows, as a CSV file of a header alone", tc.key, tc.data, err)
		}
		src := Source{Key: tc.key, R: strings.NewReader(tc.data), Size: int64(len(tc.data))}
		if _, err := Check(context.Background(), src, DecodeOptions{}, CheckOptions{}); err != nil {
			t.Errorf("upload --validate of %s %q: %v; want it valid", tc.key, tc.data, err)
		}
	}
}
