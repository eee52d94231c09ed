package lake

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
)

// crossCheckCatalog commits through the file catalog and checks every
// commit against iceberg-go: the change's requirements hold on the base,
// and its updates, applied to the base by iceberg-go's metadata builder
// (as a REST catalog applies them), give the version the file catalog
// spliced, field by field (timestamps and the logs aside). kinds counts
// the updates seen, by action.
type crossCheckCatalog struct {
	catalog.Catalog
	t     *testing.T
	kinds map[string]int
}

func (c *crossCheckCatalog) Commit(ctx context.Context, n TableName, w *catalog.Write) (committedVersion, string, error) {
	cv, applied, err := c.Catalog.Commit(ctx, n, w)
	if err != nil {
		return cv, applied, err
	}
	t := c.t
	base, err := w.Base.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := w.Change.Requirements(w.Base)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			t.Errorf("requirement %s does not hold on the base: %v", r.GetType(), err)
		}
	}
	updates, err := w.Change.Updates(w.Base)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		c.kinds[u.Action()]++
	}
	want, err := table.UpdateTableMetadata(base, updates, w.BaseRef.Location)
	if err != nil {
		t.Fatalf("iceberg-go applies the updates %s: %v", actions(updates), err)
	}
	got, err := w.Next.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"schemas", got.Schemas(), want.Schemas()},
		{"current schema", got.CurrentSchema().ID, want.CurrentSchema().ID},
		{"last column id", got.LastColumnID(), want.LastColumnID()},
		{"snapshots", got.Snapshots(), want.Snapshots()},
		{"current snapshot", got.CurrentSnapshot(), want.CurrentSnapshot()},
		{"refs", maps.Collect(got.Refs()), maps.Collect(want.Refs())},
		{"properties", got.Properties(), want.Properties()},
		{"last sequence number", got.LastSequenceNumber(), want.LastSequenceNumber()},
		{"partition specs", got.PartitionSpecs(), want.PartitionSpecs()},
		{"table uuid", got.TableUUID(), want.TableUUID()},
		{"previous versions", previousFiles(got), previousFiles(want)},
	} {
		g, _ := json.Marshal(f.got)
		wj, _ := json.Marshal(f.want)
		if string(g) != string(wj) {
			t.Errorf("%s after %s: spliced %s, iceberg-go %s", f.what, actions(updates), g, wj)
		}
	}
	return cv, applied, nil
}

func actions(us []table.Update) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Action())
	}
	return out
}

func previousFiles(m table.Metadata) []string {
	var out []string
	for e := range m.PreviousFiles() {
		out = append(out, e.MetadataFile)
	}
	return out
}

// TestChangeUpdatesMakeTheSplicedVersion: every kind of change this lake
// commits (appends, one with a schema change, a commit of several
// batches, a compaction, a retention drop, an expiry that moves batch ids
// to the load history, a property change, a rollback, outcomes recorded)
// states, as Iceberg updates and requirements, exactly the version the
// file catalog writes by splicing: what a REST catalog is sent is what a
// local table gets.
func TestChangeUpdatesMakeTheSplicedVersion(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	cc := &crossCheckCatalog{Catalog: l.cat, t: t, kinds: map[string]int{}}
	l.cat = cc
	tbl, clock := clockedTable(t, l)
	tick := func(d time.Duration) { *clock = clock.Add(d) }
	day1 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	prepare := func(batch string, at time.Time, n, g int) *Prepared {
		rec := rowsAt(t, tbl, at, n, g)
		defer rec.Release()
		p, err := tbl.Prepare(ctx, batch, []arrow.RecordBatch{rec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	commit := func(ps ...*Prepared) []AppendResult {
		res, err := tbl.Commit(ctx, ps, CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tick(time.Minute)
		return res
	}
	first := commit(prepare("a.csv", day1, 10, 0))
	commit(prepare("b.csv", day1.Add(time.Hour), 12, 1))
	commit(prepare("c.csv", day1.Add(24*time.Hour), 7, 2), prepare("d.csv", day1.Add(25*time.Hour), 5, 0))
	tick(3 * time.Hour)
	if res, err := tbl.Compact(ctx, CompactOptions{}); err != nil || res.SnapshotID == 0 {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	tick(time.Minute)
	if err := tbl.SetProperties(ctx, map[string]string{"owner": "field-ops"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, nil, []string{"owner"}); err != nil {
		t.Fatal(err)
	}
	tick(time.Minute)
	if ret, err := tbl.ApplyRetention(ctx, 4*24*time.Hour, false); err != nil || ret.SnapshotID == 0 {
		t.Fatalf("retention: %+v, %v", ret, err)
	}
	tick(time.Minute)
	commit(prepare("e.csv", clock.Add(-time.Hour), 4, 1))
	last := commit(prepare("f.csv", clock.Add(-time.Hour), 4, 2))
	rec := withColumn(t, tbl, clock.Add(-time.Hour), 3, "battery", arrow.PrimitiveTypes.Float64, func(i int) any { return 80.5 + float64(i) })
	if r := prepareCommit(t, tbl, "battery.csv", rec); len(r.SchemaChanges) == 0 {
		t.Fatalf("the batch with a new column changed no schema: %+v", r)
	}
	rec.Release()
	if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Second, RetainLast: 3}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.FindBatch(first[0].BatchID); ok {
		t.Fatal("a.csv's snapshot was not expired")
	}
	prev := tbl.Metadata().CurrentSnapshot().ParentSnapshotID
	if prev == nil {
		t.Fatal("the current snapshot has no parent")
	}
	if err := tbl.RollbackTo(ctx, *prev); err != nil {
		t.Fatal(err)
	}
	if err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: last[0].BatchID + ".bad", Size: 9, LoadedAt: *clock,
		Status: OutcomeRejected, Reason: "line 2: not a number"}}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{table.UpdateAddSchema, table.UpdateSetCurrentSchema, table.UpdateAddSnapshot,
		table.UpdateSetSnapshotRef, table.UpdateRemoveSnapshots, table.UpdateSetProperties, table.UpdateRemoveProperties} {
		if cc.kinds[kind] == 0 {
			t.Errorf("no %s update was checked (updates seen: %v)", kind, cc.kinds)
		}
	}
}
