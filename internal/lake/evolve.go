package lake

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Schema evolution on append (docs/schema.md). A batch whose records carry
// columns the table lacks, or a column in a wider type, is written with the
// table's schema plus those changes (Prepare), and the changed schema is
// committed in the same metadata write as the batch's snapshot (Commit):
// rows never reach the table before the columns that hold them, and the
// schema never changes without the rows that needed it. The changes allowed
// are those of the Iceberg spec ("Schema Evolution"): adding an optional
// column with a new field id, and the type promotions int -> long, float ->
// double and decimal(P, S) -> decimal(P2, S) with P2 > P. Whether a file may
// make them is decided by its decoder (package decode, the --evolve
// setting); this package checks that they are such changes.
//
// Field ids. The data files carry each column's Iceberg field id (Parquet
// field_id), so the ids a batch's files use are fixed once they are
// written. New columns take the ids after the table's last-column-id at
// Prepare. When another writer changed the schema before our commit, every
// attempt merges our changes into the newest schema: a batch whose ids are
// still free or mean the same column there (another writer added the same
// column with the same id and type, or widened it as well) commits; one
// whose ids were taken by other columns, or whose new column was added with
// another id, does not commit (AppendResult.SchemaConflict wraps
// ErrSchemaChanged) and its data files are deleted: its file must be
// decoded and prepared again against the newest schema. A batch that adds
// nothing commits whatever other writers did to columns it does not write.

// ErrSchemaChanged is wrapped by AppendResult.SchemaConflict: another writer
// changed the table's schema so that the field ids a batch's data files use
// are taken or mean another column. Decode and prepare the file again
// against the newest schema (Table.ArrowSchema after the Commit).
var ErrSchemaChanged = errors.New("another writer changed the table's schema")

// schemaChange is the schema a prepared batch's data files were written
// with, when it is not the table's schema at Prepare.
type schemaChange struct {
	schema *iceberg.Schema // the table's schema at Prepare with the batch's changes
	last   int             // the table's last-column-id at Prepare: ids above are new columns
}

// fieldIDOf reads the Iceberg field id of an Arrow field (PARQUET:field_id
// metadata, as table.SchemaToArrowSchema writes it).
func fieldIDOf(f arrow.Field) (int, bool) {
	v, ok := f.Metadata.GetValue(table.ArrowParquetFieldIDKey)
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(v)
	return id, err == nil
}

// promotable reports whether an Iceberg column of type from may become type
// to (Iceberg spec, "Schema Evolution", type promotion): int -> long, float
// -> double, decimal(P, S) -> decimal(P2, S) with P2 > P. long -> double is
// not a promotion (readers read old files of the column with the old type's
// reader).
func promotable(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	}
	return false
}

// conformPlan maps the columns of a batch's records onto the schema its
// data files are written with: per output field, the record column it comes
// from (-1: all null) and the type it is cast to (nil: none).
type conformPlan struct {
	sc   *arrow.Schema
	src  []int
	cast []arrow.DataType
}

// planBatch compares the records' schema rs with the table's (cur, its Arrow
// form cursc, last its last-column-id) and returns what Prepare writes:
// nothing to do (nil plan) when they are equal; else the plan and, when the
// records change the schema, the change.
//
// Columns are matched by field id, and those without an id (new in the
// file) by name. A column the table has in a wider type than the records
// (another commit widened it since the file was decoded) is cast to it, and
// a nullable column the records lack is null. A new column becomes an
// optional field with the next free id; a column in a wider type than the
// table's is a promotion when promotable allows it.
//
// Errors: a required column is missing, a column has a type the table's
// cannot become, a new column is required, or a field id the table does not
// know under that name.
func planBatch(cur *iceberg.Schema, cursc *arrow.Schema, last int, rs *arrow.Schema) (*conformPlan, *schemaChange, error) {
	if rs.Equal(cursc) {
		return nil, nil, nil
	}
	byID := map[int]int{}   // field id -> index in rs
	byName := map[int]int{} // table field id of a column without id -> index in rs
	var added []int         // indexes in rs of new columns
	for i, f := range rs.Fields() {
		if id, ok := fieldIDOf(f); ok {
			cf, found := cur.FindFieldByID(id)
			if !found || cf.Name != f.Name {
				return nil, nil, fmt.Errorf("column %q has field id %d, which the table does not give it: %w", f.Name, id, ErrSchemaChanged)
			}
			byID[id] = i
			continue
		}
		if cf, found := cur.FindFieldByName(f.Name); found {
			byName[cf.ID] = i
			continue
		}
		added = append(added, i)
	}
	fields := cur.Fields()
	plan := &conformPlan{src: make([]int, 0, len(fields)+len(added)), cast: make([]arrow.DataType, 0, len(fields)+len(added))}
	changed := false
	for j, cf := range fields {
		i, ok := byID[cf.ID]
		if !ok {
			i, ok = byName[cf.ID]
		}
		if !ok {
			if cf.Required {
				return nil, nil, fmt.Errorf("required column %q is missing", cf.Name)
			}
			plan.src, plan.cast = append(plan.src, -1), append(plan.cast, nil)
			continue
		}
		want := cursc.Field(j).Type
		got := rs.Field(i).Type
		plan.src = append(plan.src, i)
		if arrow.TypeEqual(want, got) {
			plan.cast = append(plan.cast, nil)
			continue
		}
		gt, err := table.ArrowTypeToIceberg(got, true)
		if err != nil {
			return nil, nil, fmt.Errorf("column %q: %w", cf.Name, err)
		}
		switch {
		case promotable(gt, cf.Type):
			plan.cast = append(plan.cast, want) // the table is wider already
		case promotable(cf.Type, gt):
			fields[j].Type = gt
			changed = true
			plan.cast = append(plan.cast, nil)
		default:
			return nil, nil, fmt.Errorf("column %q is %s in the table and %s in the records, which it cannot become", cf.Name, cf.Type, gt)
		}
	}
	next := last
	for _, i := range added {
		f := rs.Field(i)
		if !f.Nullable {
			return nil, nil, fmt.Errorf("new column %q must be nullable", f.Name)
		}
		it, err := table.ArrowTypeToIceberg(f.Type, true)
		if err != nil {
			return nil, nil, fmt.Errorf("new column %q: %w", f.Name, err)
		}
		next++
		fields = append(fields, iceberg.NestedField{ID: next, Name: f.Name, Type: it})
		plan.src, plan.cast = append(plan.src, i), append(plan.cast, nil)
		changed = true
	}
	var change *schemaChange
	sc := cursc
	if changed {
		evolved := iceberg.NewSchemaWithIdentifiers(cur.ID, cur.IdentifierFieldIDs, fields...)
		var err error
		if sc, err = table.SchemaToArrowSchema(evolved, nil, true, false); err != nil {
			return nil, nil, fmt.Errorf("schema: %w", err)
		}
		change = &schemaChange{schema: evolved, last: last}
	}
	plan.sc = sc
	for k, i := range plan.src {
		if i >= 0 && plan.cast[k] == nil && !arrow.TypeEqual(sc.Field(k).Type, rs.Field(i).Type) {
			return nil, nil, fmt.Errorf("column %q is %s in the records and %s in the data files", sc.Field(k).Name, rs.Field(i).Type, sc.Field(k).Type)
		}
	}
	return plan, change, nil
}

// apply returns rec with the plan's schema; the caller releases it.
func (p *conformPlan) apply(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	cols := make([]arrow.Array, len(p.src))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for k, i := range p.src {
		switch {
		case i < 0:
			cols[k] = array.MakeArrayOfNull(mem, p.sc.Field(k).Type, int(n))
		case p.cast[k] != nil:
			c, err := compute.CastArray(compute.WithAllocator(ctx, mem), rec.Column(i), compute.SafeCastOptions(p.cast[k]))
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", p.sc.Field(k).Name, err)
			}
			cols[k] = c
		default:
			cols[k] = rec.Column(i)
			cols[k].Retain()
		}
	}
	return array.NewRecordBatch(p.sc, cols, n), nil
}

// mergeSchema applies a batch's schema change c to the table schema cur
// (last: its last-column-id) and returns the result, its last-column-id and
// what the batch changed there (`added "battery" double`, `widened "v" int ->
// long`; names quoted, as they may hold any character). A field id of c that cur gives another column, a new column of c
// that cur holds under another id, or a type neither can become is an error
// wrapping ErrSchemaChanged: the batch's data files do not fit the table.
func mergeSchema(cur *iceberg.Schema, last int, c *schemaChange) (*iceberg.Schema, int, []string, error) {
	fields := cur.Fields()
	index := make(map[int]int, len(fields))
	for i, f := range fields {
		index[f.ID] = i
	}
	var changes []string
	for _, f := range c.schema.Fields() {
		j, ok := index[f.ID]
		if ok {
			tf := &fields[j]
			if tf.Name != f.Name {
				return nil, 0, nil, fmt.Errorf("field id %d is column %q now, the data files use it for %q: %w", f.ID, tf.Name, f.Name, ErrSchemaChanged)
			}
			switch {
			case tf.Type.Equals(f.Type), promotable(f.Type, tf.Type):
			case promotable(tf.Type, f.Type):
				changes = append(changes, fmt.Sprintf("widened %q %s -> %s", f.Name, tf.Type, f.Type))
				tf.Type = f.Type
			default:
				return nil, 0, nil, fmt.Errorf("column %q is %s now, the data files hold %s: %w", f.Name, tf.Type, f.Type, ErrSchemaChanged)
			}
			continue
		}
		if f.ID <= c.last {
			// In the schema at Prepare, but no longer in the table.
			return nil, 0, nil, fmt.Errorf("column %q (field id %d) was removed from the table: %w", f.Name, f.ID, ErrSchemaChanged)
		}
		if other, taken := cur.FindFieldByName(f.Name); taken {
			return nil, 0, nil, fmt.Errorf("column %q was added by another writer with field id %d, the data files use %d: %w", f.Name, other.ID, f.ID, ErrSchemaChanged)
		}
		if f.ID <= last {
			return nil, 0, nil, fmt.Errorf("field id %d of new column %q was taken by another writer: %w", f.ID, f.Name, ErrSchemaChanged)
		}
		fields = append(fields, f)
		index[f.ID] = len(fields) - 1
		last = max(last, f.ID)
		changes = append(changes, fmt.Sprintf("added %q %s", f.Name, f.Type))
	}
	if len(changes) == 0 {
		return cur, last, nil, nil
	}
	return iceberg.NewSchemaWithIdentifiers(cur.ID, cur.IdentifierFieldIDs, fields...), last, changes, nil
}

// evolvedView is v with the schema change c applied (the view data files of
// a batch that changes the schema are written with).
func (t *Table) evolvedView(v tableView, c *schemaChange) (tableView, error) {
	h, err := v.meta.WithSchema(iceberg.NewSchemaWithIdentifiers(c.schema.ID, c.schema.IdentifierFieldIDs, c.schema.Fields()...))
	if err != nil {
		return tableView{}, err
	}
	sc, err := table.SchemaToArrowSchema(h.Write().CurrentSchema(), nil, true, false)
	if err != nil {
		return tableView{}, err
	}
	v.meta, v.arrowSc = h, sc
	v.iceberg = table.New(t.ident(), h.DataWrite(), v.iceberg.MetadataLocation(), t.fsF, readOnly{})
	return v, nil
}
