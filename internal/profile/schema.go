package profile

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
)

// schemaField is a field of an Iceberg schema in its JSON form (Iceberg
// spec, "Schemas"): a primitive type is a string, a nested one an object.
type schemaField struct {
	ID       int             `json:"id"`
	Name     string          `json:"name"`
	Required bool            `json:"required"`
	Type     json.RawMessage `json:"type"`
	Doc      string          `json:"doc,omitempty"`
}

// arrowSchemaOf reads an Iceberg schema in its JSON form into the Arrow
// schema iceberg-go's table.SchemaToArrowSchema gives with field ids (in
// PARQUET:field_id, and a field's doc in doc), without linking iceberg-go,
// for the gateway binary; a test compares the two. Only primitive columns
// are read (the columns of timelake's tables); a nested one is an error
// naming it.
func arrowSchemaOf(body []byte) (*arrow.Schema, error) {
	var sc struct {
		Fields []schemaField `json:"fields"`
	}
	if err := json.Unmarshal(body, &sc); err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(sc.Fields))
	for i, f := range sc.Fields {
		var name string
		if err := json.Unmarshal(f.Type, &name); err != nil {
			return nil, fmt.Errorf("column %q: a nested type, which upload --validate does not read", f.Name)
		}
		var dt arrow.DataType
		switch name {
		case "timestamp_ns":
			dt = &arrow.TimestampType{Unit: arrow.Nanosecond}
		case "timestamptz_ns":
			dt = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
		default:
			var err error
			if dt, err = decode.ParseColumnType(name); err != nil {
				return nil, fmt.Errorf("column %q: %w", f.Name, err)
			}
		}
		meta := map[string]string{"PARQUET:field_id": strconv.Itoa(f.ID)}
		if f.Doc != "" {
			meta["doc"] = f.Doc
		}
		fields[i] = arrow.Field{Name: f.Name, Type: dt, Nullable: !f.Required, Metadata: arrow.MetadataFrom(meta)}
	}
	return arrow.NewSchema(fields, nil), nil
}
