package lake

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/timelake/timelake/internal/decode"
)

// Source columns (docs/schema.md, "Source columns"): opt-in columns that
// hold, in every row, the landing key of the file it came from (a string,
// as Snowflake's METADATA$FILENAME and Auto Loader's _metadata.file_path)
// and the time its file was loaded (a timestamptz), so that readers can
// filter by file and order the batches. A column the table lacks is added
// with the rows, as a column a file brings under --evolve add-columns.

// SourceValue is the value of one source column in every row of a batch:
// Text for the landing key, else Time.
type SourceValue struct {
	Column string
	Text   string
	Time   time.Time
}

// sourceType is the Arrow type of a source column.
func (v SourceValue) sourceType() arrow.DataType {
	if v.Text != "" {
		return arrow.BinaryTypes.String
	}
	return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
}

// WithSourceColumns returns recs (of schema sc, a decoder's output) with
// each value's column set to it in every row: a column of sc is filled
// in place, one sc lacks is added after its columns (a schema change the
// batch's commit makes, Prepare). A column of sc that holds a value in any
// row came from the file, and is an error naming it: it would be
// overwritten. The returned batches are new; recs are not released.
func WithSourceColumns(sc *arrow.Schema, recs []arrow.RecordBatch, values []SourceValue) ([]arrow.RecordBatch, error) {
	fields := sc.Fields()
	at := make([]int, len(values))
	for i, v := range values {
		at[i] = -1
		if idx := sc.FieldIndices(v.Column); len(idx) == 1 {
			if !arrow.TypeEqual(fields[idx[0]].Type, v.sourceType()) {
				return nil, &SourceColumnError{Column: v.Column, Reason: fmt.Sprintf("column %q, which holds each row's %s, is %s in the table, not %s: choose another name",
					v.Column, v.what(), decode.TypeName(fields[idx[0]].Type), decode.TypeName(v.sourceType()))}
			}
			at[i] = idx[0]
			continue
		}
		fields = append(fields, arrow.Field{Name: v.Column, Type: v.sourceType(), Nullable: true})
		at[i] = len(fields) - 1
	}
	out := sc
	if len(fields) != sc.NumFields() {
		md := sc.Metadata()
		out = arrow.NewSchema(fields, &md)
	}
	var res []arrow.RecordBatch
	release := func() {
		for _, r := range res {
			r.Release()
		}
	}
	for _, rec := range recs {
		n := int(rec.NumRows())
		cols := make([]arrow.Array, len(fields))
		copy(cols, rec.Columns())
		var made []arrow.Array
		for i, v := range values {
			if j := at[i]; j < int(rec.NumCols()) && rec.Column(j).NullN() < n {
				for _, m := range made {
					m.Release()
				}
				release()
				return nil, &SourceColumnError{Column: v.Column, Reason: fmt.Sprintf("the file has values in column %q, which holds each row's %s (--%s): rename the file's column, or choose another name",
					v.Column, v.what(), map[bool]string{true: "source-column", false: "load-time-column"}[v.Text != ""])}
			}
			a := v.constant(n)
			made = append(made, a)
			cols[at[i]] = a
		}
		res = append(res, array.NewRecordBatch(out, cols, int64(n)))
		for _, m := range made {
			m.Release()
		}
	}
	return res, nil
}

// CheckSourceColumns refuses the source column names (source: the
// landing key's, loadTime: the load time's; "" for none) that t cannot
// fill: the same name for both, the time column or a series key column of
// the contract, a column t has with another type than the one it would
// hold (string, timestamptz). Errors: *SourceColumnError naming the
// column; checked by tables alter and before a run loads a file, since
// every file would be refused.
func (t *Table) CheckSourceColumns(source, loadTime string) error {
	if source != "" && source == loadTime {
		return &SourceColumnError{Column: source, Reason: fmt.Sprintf("column %q cannot hold both each row's landing key and its load time (--source-column and --load-time-column, or %s and %s): choose two names",
			source, PropSourceColumn, PropLoadTimeColumn)}
	}
	c, sc := t.Contract(), t.ArrowSchema()
	for _, v := range []SourceValue{{Column: source, Text: "key"}, {Column: loadTime}} {
		if v.Column == "" {
			continue
		}
		if v.Column == c.TimeColumn || slices.Contains(c.SeriesKey, v.Column) {
			return &SourceColumnError{Column: v.Column, Reason: fmt.Sprintf("column %q, chosen to hold each row's %s (%s), is the table's %s: choose another name",
				v.Column, v.what(), v.setting(), map[bool]string{true: "time column", false: "series key column"}[v.Column == c.TimeColumn])}
		}
		if idx := sc.FieldIndices(v.Column); len(idx) == 1 && !arrow.TypeEqual(sc.Field(idx[0]).Type, v.sourceType()) {
			return &SourceColumnError{Column: v.Column, Reason: fmt.Sprintf("column %q, chosen to hold each row's %s (%s), is %s in the table, not %s: choose another name",
				v.Column, v.what(), v.setting(), decode.TypeName(sc.Field(idx[0]).Type), decode.TypeName(v.sourceType()))}
		}
	}
	return nil
}

// SourceColumnError refuses a batch whose source column cannot be
// filled.
type SourceColumnError struct {
	Column string
	Reason string
}

func (e *SourceColumnError) Error() string { return e.Reason }

// setting names the flag and the table property that choose v's column.
func (v SourceValue) setting() string {
	if v.Text != "" {
		return "--source-column or " + PropSourceColumn
	}
	return "--load-time-column or " + PropLoadTimeColumn
}

func (v SourceValue) what() string {
	if v.Text != "" {
		return "landing key"
	}
	return "load time"
}

// constant is an array of n copies of v.
func (v SourceValue) constant(n int) arrow.Array {
	if v.Text != "" {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(n)
		b.ReserveData(n * len(v.Text))
		for range n {
			b.Append(v.Text)
		}
		return b.NewArray()
	}
	b := array.NewTimestampBuilder(memory.DefaultAllocator, v.sourceType().(*arrow.TimestampType))
	defer b.Release()
	ts := arrow.Timestamp(v.Time.UnixMicro())
	b.Reserve(n)
	for range n {
		b.Append(ts)
	}
	return b.NewArray()
}
