package lake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// withColumn returns the rows of rows() (the table's first three columns,
// those of testSchema) with an extra nullable column name of type dt (no
// field id: new in the file) holding value(i), or null where value returns
// nil.
func withColumn(t testing.TB, tbl *Table, start time.Time, n int, name string, dt arrow.DataType, value func(i int) any) arrow.RecordBatch {
	t.Helper()
	base := rows(t, arrow.NewSchema(tbl.ArrowSchema().Fields()[:3], nil), start, n, false)
	defer base.Release()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for i := range n {
		switch v := value(i).(type) {
		case nil:
			b.AppendNull()
		case float64:
			b.(*array.Float64Builder).Append(v)
		case int64:
			b.(*array.Int64Builder).Append(v)
		case string:
			b.(*array.StringBuilder).Append(v)
		default:
			t.Fatalf("value %T", v)
		}
	}
	col := b.NewArray()
	defer col.Release()
	fields := append(slices.Clone(base.Schema().Fields()), arrow.Field{Name: name, Type: dt, Nullable: true})
	cols := append(slices.Clone(base.Columns()), col)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
}

func prepareCommit(t testing.TB, tbl *Table, batch string, rec arrow.RecordBatch) AppendResult {
	t.Helper()
	ctx := context.Background()
	p, err := tbl.Prepare(ctx, batch, []arrow.RecordBatch{rec}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// columnsOf renders the current schema as "id:name:type" items.
func columnsOf(tbl *Table) string {
	var out []string
	for _, f := range tbl.Metadata().CurrentSchema().Fields() {
		out = append(out, fmt.Sprintf("%d:%s:%s", f.ID, f.Name, f.Type))
	}
	return strings.Join(out, " ")
}

func TestAppendAddsColumnInTheSameCommit(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		appendRows(t, tbl, "old.csv", day0, 3)
		before, oldSchema := tbl.Version(), tbl.ArrowSchema()

		rec := withColumn(t, tbl, day0.Add(time.Hour), 2, "battery", arrow.PrimitiveTypes.Float64, func(i int) any { return 80.5 + float64(i) })
		defer rec.Release()
		res := prepareCommit(t, tbl, "new.csv", rec)
		if got := strings.Join(res.SchemaChanges, ";"); got != `added "battery" double` {
			t.Errorf("schema changes %q", got)
		}
		if tbl.Version() != before+1 {
			t.Errorf("version %d, want %d: the schema and the rows are one commit", tbl.Version(), before+1)
		}
		if got := columnsOf(tbl); got != "1:time:timestamptz 2:device:string 3:value:double 4:battery:double" {
			t.Errorf("columns %s", got)
		}
		meta := tbl.Metadata()
		if meta.LastColumnID() != 4 || meta.CurrentSchema().ID != 1 || len(meta.Schemas()) != 2 {
			t.Errorf("last-column-id %d, current schema %d, %d schemas", meta.LastColumnID(), meta.CurrentSchema().ID, len(meta.Schemas()))
		}
		if s := meta.CurrentSnapshot(); s.SchemaID == nil || *s.SchemaID != 1 {
			t.Errorf("snapshot schema-id %v, want 1", s.SchemaID)
		}
		// Read back by a fresh load: the old rows have battery null.
		fresh, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		got := scanRows(t, fresh, 0)
		want := []string{
			"2026-01-05T23:01:00Z|d0|2|(null)|", "2026-01-05T23:02:00Z|d1|1|(null)|", "2026-01-05T23:03:00Z|d2|0|(null)|",
			"2026-01-06T00:01:00Z|d1|1|81.5|", "2026-01-06T00:02:00Z|d2|0|80.5|",
		}
		if !slices.Equal(got, want) {
			t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		requireConformantTable(t, l, fresh)

		// A file without the column loads too (null), and one with it
		// reuses the column's field id.
		without := rows(t, oldSchema, day0.Add(2*time.Hour), 1, false)
		defer without.Release()
		prepareCommit(t, tbl, "without.csv", without)
		rec2 := withColumn(t, tbl, day0.Add(3*time.Hour), 1, "battery", arrow.PrimitiveTypes.Float64, func(int) any { return 79.0 })
		defer rec2.Release()
		if res := prepareCommit(t, tbl, "again.csv", rec2); len(res.SchemaChanges) != 0 {
			t.Errorf("schema changes %v for a column the table has", res.SchemaChanges)
		}
		if n := len(tbl.Metadata().Schemas()); n != 2 {
			t.Errorf("%d schemas, want 2", n)
		}
		if n := len(scanRows(t, tbl, 0)); n != 7 {
			t.Errorf("%d rows, want 7", n)
		}
	})
}

// TestPrepareAcrossOwnSchemaChange: records decoded against the schema
// before a commit that added a column (another file of the same run) are
// written with the new schema: the column null, or, when they hold it
// without a field id, under the column's id.
func TestPrepareAcrossOwnSchemaChange(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	old := rows(t, tbl.ArrowSchema(), day0, 2, false) // decoded before the change
	defer old.Release()
	same := withColumn(t, tbl, day0.Add(time.Hour), 2, "battery", arrow.PrimitiveTypes.Float64, func(int) any { return 1.0 })
	defer same.Release()
	add := withColumn(t, tbl, day0.Add(2*time.Hour), 2, "battery", arrow.PrimitiveTypes.Float64, func(int) any { return 2.0 })
	defer add.Release()
	prepareCommit(t, tbl, "adds.csv", add)

	var ps []*Prepared
	for i, rec := range []arrow.RecordBatch{old, same} {
		p, err := tbl.Prepare(ctx, fmt.Sprintf("b%d.csv", i), []arrow.RecordBatch{rec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.change != nil {
			t.Errorf("batch %d changes the schema: %v", i, p.change.schema)
		}
		ps = append(ps, p)
	}
	res, err := tbl.Commit(ctx, ps, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.SchemaConflict != nil || r.Rows != 2 {
			t.Errorf("result %+v", r)
		}
	}
	if got := columnsOf(tbl); got != "1:time:timestamptz 2:device:string 3:value:double 4:battery:double" {
		t.Errorf("columns %s", got)
	}
	nulls := 0
	for _, r := range scanRows(t, tbl, 0) {
		if strings.HasSuffix(r, "|(null)|") {
			nulls++
		}
	}
	if nulls != 2 {
		t.Errorf("%d rows with battery null, want 2", nulls)
	}
}

// TestSchemaChangeRaces: another writer commits first (faultyCatalog), with
// or without a schema change of its own; the batch commits when its field
// ids still fit the newest schema, and otherwise is reported with
// SchemaConflict, its files deleted, and commits once prepared again.
func TestSchemaChangeRaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ours: does our batch add battery (float64)?
		ours bool
		// other: the column the other writer adds ("" none), and its type
		other     string
		otherType arrow.DataType
		conflict  bool
		columns   string
	}{
		{name: "other adds a column, ours adds none", other: "humidity", otherType: arrow.PrimitiveTypes.Float64,
			columns: "1:time:timestamptz 2:device:string 3:value:double 4:humidity:double"},
		{name: "both add battery alike", ours: true, other: "battery", otherType: arrow.PrimitiveTypes.Float64,
			columns: "1:time:timestamptz 2:device:string 3:value:double 4:battery:double"},
		{name: "other takes the field id", ours: true, other: "humidity", otherType: arrow.PrimitiveTypes.Float64, conflict: true,
			columns: "1:time:timestamptz 2:device:string 3:value:double 4:humidity:double 5:battery:double"},
		{name: "both add battery in other types", ours: true, other: "battery", otherType: arrow.BinaryTypes.String, conflict: true},
		{name: "other changes only properties", ours: true,
			columns: "1:time:timestamptz 2:device:string 3:value:double 4:battery:double"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLocalLake(t)
			tbl := createTestTable(t, l)
			appendRows(t, tbl, "first.csv", day0, 2)
			other, err := l.LoadTable(ctx, testName)
			if err != nil {
				t.Fatal(err)
			}
			var rec arrow.RecordBatch
			if tc.ours {
				rec = withColumn(t, tbl, day0.Add(time.Hour), 3, "battery", arrow.PrimitiveTypes.Float64, func(i int) any { return float64(i) })
			} else {
				rec = rows(t, tbl.ArrowSchema(), day0.Add(time.Hour), 3, false)
			}
			defer rec.Release()
			p, err := tbl.Prepare(ctx, "ours.csv", []arrow.RecordBatch{rec}, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ourFiles := dataFilePaths(p.files)

			fc := &faultyCatalog{Catalog: l.cat}
			l.cat = fc
			fc.before = func() {
				if tc.other == "" {
					if err := other.SetProperties(ctx, map[string]string{"x.other-writer": "1"}, nil); err != nil {
						panic(err)
					}
					return
				}
				orec := withColumn(t, other, day0.Add(2*time.Hour), 1, tc.other, tc.otherType, func(int) any {
					if tc.otherType.ID() == arrow.STRING {
						return "x"
					}
					return 1.5
				})
				defer orec.Release()
				op, err := other.Prepare(ctx, "other.csv", []arrow.RecordBatch{orec}, nil, 0)
				if err != nil {
					panic(err)
				}
				if _, err := other.Commit(ctx, []*Prepared{op}, CommitOptions{}); err != nil {
					panic(err)
				}
			}
			res, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{})
			l.cat = fc.Catalog
			if err != nil {
				t.Fatal(err)
			}
			// A lost race, then a second create; a conflict is found by the
			// second attempt, which writes nothing.
			if want := 2 - btoi(tc.conflict); fc.commits != want {
				t.Errorf("%d commits, want %d", fc.commits, want)
			}
			r := res[0]
			if !tc.conflict {
				if r.SchemaConflict != nil || r.Rows != 3 || r.Duplicate {
					t.Fatalf("result %+v", r)
				}
				if got := columnsOf(tbl); got != tc.columns {
					t.Errorf("columns %s, want %s", got, tc.columns)
				}
				if n := len(scanRows(t, tbl, 0)); n != 5+btoi(tc.other != "") {
					t.Errorf("%d rows", n)
				}
				requireConformantTable(t, l, tbl)
				return
			}
			if !errors.Is(r.SchemaConflict, ErrSchemaChanged) || r.Rows != 0 || r.SnapshotID != 0 {
				t.Fatalf("result %+v, want a schema conflict", r)
			}
			t.Logf("conflict: %v", r.SchemaConflict)
			fs, err := l.fsF(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range ourFiles {
				if fh, err := fs.Open(f); err == nil {
					fh.Close()
					t.Errorf("data file %s of the batch not committed is still there", f)
				}
			}
			if _, ok := tbl.FindBatch("ours.csv"); ok {
				t.Fatal("ours.csv committed despite the conflict")
			}
			if tc.columns == "" {
				return // the file would now be refused by its decoder
			}
			// Prepared again against the newest schema, it commits.
			if got := prepareCommit(t, tbl, "ours.csv", rec); got.Rows != 3 || got.SchemaConflict != nil {
				t.Fatalf("second commit %+v", got)
			}
			if got := columnsOf(tbl); got != tc.columns {
				t.Errorf("columns %s, want %s", got, tc.columns)
			}
			requireConformantTable(t, l, tbl)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWidenTypes: int -> long and float -> double are committed as Iceberg
// type promotions; files written before read back in the wider type.
// long -> double is no promotion.
func TestWidenTypes(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tbl, err := l.CreateTable(ctx, testName, sc, CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}})
	if err != nil {
		t.Fatal(err)
	}
	build := func(sc *arrow.Schema, start time.Time, n int64, f float64) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(start.UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append("d")
		switch nb := b.Field(2).(type) {
		case *array.Int32Builder:
			nb.Append(int32(n))
		case *array.Int64Builder:
			nb.Append(n)
		}
		switch fb := b.Field(3).(type) {
		case *array.Float32Builder:
			fb.Append(float32(f))
		case *array.Float64Builder:
			fb.Append(f)
		}
		switch lb := b.Field(4).(type) {
		case *array.Int64Builder:
			lb.Append(7)
		case *array.Float64Builder:
			lb.Append(7)
		}
		return b.NewRecordBatch()
	}
	old := build(tbl.ArrowSchema(), day0, 1, 0.5)
	defer old.Release()
	prepareCommit(t, tbl, "old.parquet", old)

	wide := arrow.NewSchema([]arrow.Field{tbl.ArrowSchema().Field(0), tbl.ArrowSchema().Field(1),
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: tbl.ArrowSchema().Field(2).Metadata},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: tbl.ArrowSchema().Field(3).Metadata},
		tbl.ArrowSchema().Field(4)}, nil)
	rec := build(wide, day0.Add(time.Minute), 3_000_000_000, 1e300)
	defer rec.Release()
	res := prepareCommit(t, tbl, "wide.parquet", rec)
	if got := strings.Join(res.SchemaChanges, ";"); got != `widened "n" int -> long;widened "f" float -> double` {
		t.Errorf("changes %q", got)
	}
	if got := columnsOf(tbl); got != "1:time:timestamptz 2:device:string 3:n:long 4:f:double 5:l:long" {
		t.Errorf("columns %s", got)
	}
	got := scanRows(t, tbl, 0)
	want := []string{"2026-01-05T23:00:00Z|d|1|0.5|7|", "2026-01-05T23:01:00Z|d|3000000000|1e+300|7|"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}

	// Records of the narrower type (decoded before the change) are cast.
	narrow := build(old.Schema(), day0.Add(2*time.Minute), 2, 0.25)
	defer narrow.Release()
	if r := prepareCommit(t, tbl, "narrow.parquet", narrow); r.Rows != 1 || len(r.SchemaChanges) != 0 {
		t.Errorf("narrow %+v", r)
	}

	// long -> double is not a promotion.
	dbl := arrow.NewSchema([]arrow.Field{tbl.ArrowSchema().Field(0), tbl.ArrowSchema().Field(1), tbl.ArrowSchema().Field(2), tbl.ArrowSchema().Field(3),
		{Name: "l", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: tbl.ArrowSchema().Field(4).Metadata}}, nil)
	bad := build(dbl, day0.Add(3*time.Minute), 1, 1)
	defer bad.Release()
	if _, err := tbl.Prepare(ctx, "bad.parquet", []arrow.RecordBatch{bad}, nil, 0); err == nil || !strings.Contains(err.Error(), "cannot become") {
		t.Errorf("long -> double: err = %v", err)
	}
	requireConformant(t, confOf(l, testName), contractWant{timeCol: "time", seriesKey: []string{"device"}, chunk: Day})
}

func TestMergeSchema(t *testing.T) {
	cur := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "battery", Type: iceberg.PrimitiveTypes.Float64},
	)
	change := func(last int, fields ...iceberg.NestedField) *schemaChange {
		return &schemaChange{schema: iceberg.NewSchema(0, fields...), last: last}
	}
	time := iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true}
	for _, tc := range []struct {
		name    string
		c       *schemaChange
		want    string // changes, or the error
		columns string
	}{
		{"same column, same id", change(2, time, iceberg.NestedField{ID: 3, Name: "battery", Type: iceberg.PrimitiveTypes.Float64}), "", "1 2 3"},
		{"new id after last", change(3, time, iceberg.NestedField{ID: 4, Name: "rssi", Type: iceberg.PrimitiveTypes.Int64}), `added "rssi" long`, "1 2 3 4"},
		{"id taken", change(2, time, iceberg.NestedField{ID: 3, Name: "rssi", Type: iceberg.PrimitiveTypes.Int64}), "field id 3 is column \"battery\"", ""},
		{"name taken", change(1, time, iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int32},
			iceberg.NestedField{ID: 4, Name: "battery", Type: iceberg.PrimitiveTypes.Float64}), "added by another writer with field id 3", ""},
		{"widen", change(3, time, iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int64}), `widened "v" int -> long`, "1 2 3"},
		{"other type", change(3, time, iceberg.NestedField{ID: 3, Name: "battery", Type: iceberg.PrimitiveTypes.String}), "column \"battery\" is double now", ""},
		{"removed", change(4, time, iceberg.NestedField{ID: 4, Name: "gone", Type: iceberg.PrimitiveTypes.String}), "was removed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, changes, err := mergeSchema(cur, 3, tc.c)
			if err != nil {
				if tc.columns != "" || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrSchemaChanged) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if tc.columns == "" {
				t.Fatalf("no error, want %q", tc.want)
			}
			if s := strings.Join(changes, ";"); s != tc.want {
				t.Errorf("changes %q, want %q", s, tc.want)
			}
			var ids []string
			for _, f := range got.Fields() {
				ids = append(ids, fmt.Sprint(f.ID))
			}
			if s := strings.Join(ids, " "); s != tc.columns {
				t.Errorf("ids %s, want %s", s, tc.columns)
			}
		})
	}
}

// TestCompactAfterSchemaChange: compaction reads the files written before
// a column was added (projected to the current schema: the column null)
// and after it, and keeps every value.
func TestCompactAfterSchemaChange(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	for i := range 3 {
		appendRows(t, tbl, fmt.Sprintf("old%d.csv", i), day0.Add(time.Duration(i)*10*time.Minute), 2)
	}
	for i := range 3 {
		rec := withColumn(t, tbl, day0.Add(time.Hour+time.Duration(i)*10*time.Minute), 2, "battery", arrow.PrimitiveTypes.Float64,
			func(j int) any { return float64(10*i + j) })
		prepareCommit(t, tbl, fmt.Sprintf("new%d.csv", i), rec)
		rec.Release()
	}
	before := scanRows(t, tbl, 0)
	res, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2, TargetFileSize: 64 << 20, ColdAfter: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) == 0 || res.SnapshotID == 0 {
		t.Fatalf("nothing compacted: %+v", res)
	}
	after := scanRows(t, tbl, 0)
	if !slices.Equal(before, after) {
		t.Errorf("rows changed by compaction:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	nulls := 0
	for _, r := range after {
		if strings.HasSuffix(r, "|(null)|") {
			nulls++
		}
	}
	if nulls != 6 || len(after) != 12 {
		t.Errorf("%d rows, %d with battery null; want 12 and 6", len(after), nulls)
	}
	requireConformantTable(t, l, tbl)
}
