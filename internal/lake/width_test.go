package lake

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// TestManifestHeaderLimit pins ManifestHeaderLimit to the Avro library
// iceberg-go writes manifests with: a header entry (the manifests' "schema")
// of that length is written, one byte more is refused.
func TestManifestHeaderLimit(t *testing.T) {
	for _, n := range []int{ManifestHeaderLimit, ManifestHeaderLimit + 1} {
		var buf bytes.Buffer
		_, err := ocf.NewWriter(&buf, avro.MustParse(`"int"`), ocf.WithMetadata(map[string][]byte{"schema": bytes.Repeat([]byte("x"), n)}))
		if (err == nil) != (n <= ManifestHeaderLimit) {
			t.Errorf("a header entry of %d bytes: %v", n, err)
		}
	}
}

// wideSchema has a time column and n columns whose names are nameLen bytes
// long (at least their number).
func wideSchema(n, nameLen int) *arrow.Schema {
	fields := []arrow.Field{{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}
	for i := range n {
		name := "c" + strconv.Itoa(i)
		fields = append(fields, arrow.Field{Name: name + strings.Repeat("x", max(0, nameLen-len(name))), Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

func TestCheckCreateWidth(t *testing.T) {
	for _, c := range []struct {
		columns, nameLen int
		refused          bool
		bytes            bool // refused on the schema's bytes
	}{
		{MaxColumns - 1, 0, false, false},
		{MaxColumns, 0, true, false},
		{1_100, 1_000, true, true},
		{700, 1_000, false, false},
	} {
		err := CheckCreateWidth(wideSchema(c.columns, c.nameLen), 0)
		var we *WidthError
		if errors.As(err, &we) != c.refused || (err != nil && !errors.Is(err, ErrTooWide)) {
			t.Errorf("%d columns of %d bytes: %v", c.columns+1, c.nameLen, err)
			continue
		}
		if c.refused && (we.SchemaBytes > MaxSchemaJSONBytes) != c.bytes {
			t.Errorf("%d columns of %d bytes: %+v", c.columns+1, c.nameLen, we)
		}
	}
}
