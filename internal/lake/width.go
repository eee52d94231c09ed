package lake

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// How wide a table may become (docs/ingest.md, "How wide a table may be").
// Every manifest iceberg-go writes carries the table's schema as JSON in
// the "schema" entry of its Avro header, and its Avro library (the OCF
// writer and reader of twmb/avro) refuses a header entry longer than 1 MiB:
// a schema past that would create a table, or evolve one, whose every
// commit then fails. So a file is refused before it creates or widens a
// table when the schema it would give the table has more than MaxColumns
// columns, or more than MaxSchemaJSONBytes bytes of JSON. The margin below
// the 1 MiB leaves room for what a commit may add after the check: the
// source columns, a type widened, the schema id growing.
const (
	// ManifestHeaderLimit is the longest header entry of an Avro
	// manifest, in bytes.
	ManifestHeaderLimit = 1 << 20
	// MaxSchemaJSONBytes is the longest schema JSON a file may give a
	// table: ManifestHeaderLimit less 128 KiB.
	MaxSchemaJSONBytes = ManifestHeaderLimit - 128<<10
	// MaxColumns is the most columns a file may give a table by default
	// (ingest's --max-columns): a guard, decided on a file's header before
	// its values are read; the schema's JSON is the limit of the format.
	MaxColumns = 10_000
)

// ErrTooWide is wrapped by a WidthError.
var ErrTooWide = errors.New("too wide for a table")

// WidthError refuses a file whose columns would make the table wider than
// MaxColumns or MaxSchemaJSONBytes.
type WidthError struct {
	// Columns the table would have with the file's; New of them are the
	// file's own (all for a new table).
	Columns, New int
	// Max is the column limit that refused it.
	Max int
	// SchemaBytes is the length of the schema's JSON, 0 when the count
	// alone refuses the file (the JSON is then not built).
	SchemaBytes int
	// Create is true for a file that would create the table.
	Create bool
}

func (e *WidthError) Error() string {
	what := fmt.Sprintf("the table's %d columns and the file's %d new ones would be %d", e.Columns-e.New, e.New, e.Columns)
	if e.Create {
		what = fmt.Sprintf("the file has %d columns", e.Columns)
	}
	if e.SchemaBytes == 0 {
		return fmt.Sprintf("%s, more than the %d columns a table may have (--max-columns; every manifest carries the table's schema, in a header of at most %d bytes): %v",
			what, e.Max, ManifestHeaderLimit, ErrTooWide)
	}
	return fmt.Sprintf("%s, a schema of %d bytes of JSON, more than the %d bytes a table's schema may have (every manifest carries it, in a header of at most %d bytes): %v",
		what, e.SchemaBytes, MaxSchemaJSONBytes, ManifestHeaderLimit, ErrTooWide)
}

func (e *WidthError) Unwrap() error { return ErrTooWide }

// CheckCreateWidth checks that a table created from sc (CreateTable) fits
// the limits: a *WidthError if it does not. Its cost is linear in the
// columns, and a file of too many columns is refused on their count alone.
func CheckCreateWidth(sc *arrow.Schema, maxColumns int) error {
	n := sc.NumFields()
	if err := CheckCreateColumns(n, maxColumns); err != nil {
		return err
	}
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, true)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return checkSchemaJSON(isc, &WidthError{Columns: n, New: n, Create: true})
}

// CheckCreateColumns checks that a table of n columns stays within
// maxColumns (0: MaxColumns): a *WidthError if not. It refuses a file by
// the count of its columns, before their types are known.
func CheckCreateColumns(n, maxColumns int) error {
	if limit := cmp.Or(maxColumns, MaxColumns); n > limit {
		return &WidthError{Columns: n, New: n, Max: limit, Create: true}
	}
	return nil
}

// CheckWidth checks that the table with the columns of rs it lacks (a file
// decoded with --evolve add-columns: the table's columns and its new ones)
// fits the limits: a *WidthError if it does not. A file that adds no column
// is never refused, whatever the table's width. Columns are matched by
// name, once each: the cost is linear in the columns.
func (t *Table) CheckWidth(rs *arrow.Schema, maxColumns int) error {
	// The Arrow schema is at hand after every commit, the metadata
	// parsed again: it is read only for a file that adds columns.
	have := t.ArrowSchema()
	var added []arrow.Field
	for i := range rs.NumFields() {
		if f := rs.Field(i); !have.HasField(f.Name) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return nil
	}
	n := have.NumFields() + len(added)
	if limit := cmp.Or(maxColumns, MaxColumns); n > limit {
		return &WidthError{Columns: n, New: len(added), Max: limit}
	}
	meta := t.Metadata()
	cur := meta.CurrentSchema()
	fields := cur.Fields()
	next := meta.LastColumnID()
	for _, f := range added {
		it, err := table.ArrowTypeToIceberg(f.Type, true)
		if err != nil {
			return fmt.Errorf("new column %q: %w", f.Name, err)
		}
		next++
		fields = append(fields, iceberg.NestedField{ID: next, Name: f.Name, Type: it})
	}
	evolved := iceberg.NewSchemaWithIdentifiers(cur.ID+1, cur.IdentifierFieldIDs, fields...)
	return checkSchemaJSON(evolved, &WidthError{Columns: n, New: len(added)})
}

// CheckAddedColumns checks that n columns more than the table has stay
// within maxColumns (0: MaxColumns): a *WidthError if not. It refuses a
// file by the count of the columns it adds, before their names or types
// are known.
func (t *Table) CheckAddedColumns(n, maxColumns int) error {
	limit := cmp.Or(maxColumns, MaxColumns)
	if cur := t.ArrowSchema().NumFields(); n > 0 && cur+n > limit {
		return &WidthError{Columns: cur + n, New: n, Max: limit}
	}
	return nil
}

// checkSchemaJSON returns refuse, with the length, when sc's JSON (as the
// manifests' header carries it) is longer than MaxSchemaJSONBytes.
func checkSchemaJSON(sc *iceberg.Schema, refuse *WidthError) error {
	b, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if len(b) > MaxSchemaJSONBytes {
		refuse.SchemaBytes = len(b)
		return refuse
	}
	return nil
}
