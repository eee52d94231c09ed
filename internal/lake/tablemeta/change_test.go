package tablemeta

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// threeSnapshots is a version of three snapshots in a line (1, 2, 3), the
// main branch on 3 and a tag on 1, with one property.
func threeSnapshots(t *testing.T) *Indexed {
	t.Helper()
	snap := func(id int64, batch string) map[string]any {
		s := map[string]any{"snapshot-id": id, "sequence-number": id, "timestamp-ms": 1767600000000 + id*1000,
			"manifest-list": "file:///t/" + batch + ".avro", "summary": map[string]any{"operation": "append", SummaryBatchID: batch}}
		if id > 1 {
			s["parent-snapshot-id"] = id - 1
		}
		return s
	}
	doc := map[string]any{
		"format-version": 2, "table-uuid": "6c4a6f0e-3d0b-4b8e-9c7a-2f1d5e8a9b10", "location": "file:///t",
		"last-sequence-number": 3, "last-updated-ms": 1767600003000, "last-column-id": 1,
		"current-schema-id": 0, "schemas": []any{map[string]any{"type": "struct", "schema-id": 0,
			"fields": []any{map[string]any{"id": 1, "name": "ts", "required": true, "type": "timestamptz"}}}},
		"default-spec-id": 0, "partition-specs": []any{map[string]any{"spec-id": 0, "fields": []any{}}},
		"last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": []any{map[string]any{"order-id": 0, "fields": []any{}}},
		"properties":          map[string]any{"owner": "ops"},
		"current-snapshot-id": 3,
		"refs": map[string]any{"main": map[string]any{"snapshot-id": 3, "type": "branch"},
			"audit": map[string]any{"snapshot-id": 1, "type": "tag"}},
		"snapshots": []any{snap(1, "a.csv"), snap(2, "b.csv"), snap(3, "c.csv")},
	}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func actions(us []table.Update) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Action())
	}
	return out
}

// TestChangePropertiesOnlyWhatChanges: a property change holds only what
// differs from the base (a key both set and unset is set), and one of
// nothing is empty, which Apply refuses.
func TestChangePropertiesOnlyWhatChanges(t *testing.T) {
	base := threeSnapshots(t)
	same := ChangeProperties(base.Props(), map[string]string{"owner": "ops"}, []string{"missing"}, 1767600004000)
	if !same.Empty() {
		t.Errorf("a change to the values the base has is not empty: %+v", same)
	}
	if _, _, err := base.Apply(same, "file:///t/metadata/v3.metadata.json"); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("an empty change applied: %v", err)
	}
	c := ChangeProperties(base.Props(), map[string]string{"owner": "lab", "site": "berlin"}, []string{"owner", "missing"}, 1767600004000)
	us, err := c.Updates(base)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(us); !slices.Equal(got, []string{table.UpdateSetProperties}) {
		t.Fatalf("updates %v, want only set-properties", got)
	}
	next, _, err := base.Apply(c, "file:///t/metadata/v3.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := (iceberg.Properties{"owner": "lab", "site": "berlin"}); !maps.Equal(next.Props(), want) {
		t.Errorf("properties %v, want %v", next.Props(), want)
	}
	if !c.HeldBy(next, base) || c.HeldBy(base, base) {
		t.Error("the change must be held by the version it made and not by its base")
	}
}

// TestRemoveSnapshotsRefusesHeads: an expiry may not remove the current
// snapshot or one a tag points at; removing another asserts every other
// ref of the base, and the version it makes no longer has the snapshot.
func TestRemoveSnapshotsRefusesHeads(t *testing.T) {
	base := threeSnapshots(t)
	for _, id := range []int64{1, 3} {
		if err := base.CanRemove([]int64{id}); err == nil {
			t.Errorf("snapshot %d may be removed", id)
		}
		if _, _, err := base.Apply(RemoveSnapshots([]int64{id}, 1767600004000), "file:///t/metadata/v3.metadata.json"); err == nil {
			t.Errorf("snapshot %d was removed", id)
		}
	}
	c := RemoveSnapshots([]int64{2}, 1767600004000)
	reqs, err := c.Requirements(base)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := base.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	var asserted []string
	for _, r := range reqs {
		if err := r.Validate(meta); err != nil {
			t.Errorf("requirement %s does not hold on the base: %v", r.GetType(), err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		asserted = append(asserted, string(b))
	}
	if tag := `{"type":"assert-ref-snapshot-id","ref":"audit","snapshot-id":1}`; !slices.Contains(asserted, tag) {
		t.Errorf("the tag audit is not asserted: %v", asserted)
	}
	next, _, err := base.Apply(c, "file:///t/metadata/v3.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if next.SnapshotIDTaken(2) || !next.SnapshotIDTaken(1) || !next.SnapshotIDTaken(3) {
		t.Error("snapshot 2 is still there, or another left")
	}
	if !c.HeldBy(next, base) || c.HeldBy(base, base) {
		t.Error("the change must be held by the version it made and not by its base")
	}
}

// TestRollBackGivesIcebergsVersion: a rollback's updates, applied with
// iceberg-go's metadata builder, give the main branch and current snapshot
// the splice gives, and a rollback to a snapshot outside the main branch's
// ancestry is refused.
func TestRollBackGivesIcebergsVersion(t *testing.T) {
	base := threeSnapshots(t)
	if err := base.CanRollBack(4); err == nil {
		t.Error("a rollback to a snapshot the table does not have is allowed")
	}
	c := RollBack(1, 1767600004000)
	next, _, err := base.Apply(c, "file:///t/metadata/v3.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if next.MainSnapshot() != 1 || next.PreviousLocation() != "file:///t/metadata/v3.metadata.json" {
		t.Errorf("main on %d, previous version %q", next.MainSnapshot(), next.PreviousLocation())
	}
	us, err := c.Updates(base)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := base.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	want, err := table.UpdateTableMetadata(meta, us, "file:///t/metadata/v3.metadata.json")
	if err != nil {
		t.Fatalf("iceberg-go applies %v: %v", actions(us), err)
	}
	got, err := next.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(maps.Collect(got.Refs()))
	w, _ := json.Marshal(maps.Collect(want.Refs()))
	if string(g) != string(w) || got.CurrentSnapshot().SnapshotID != want.CurrentSnapshot().SnapshotID {
		t.Errorf("refs %s, current %d; iceberg-go: refs %s, current %d", g, got.CurrentSnapshot().SnapshotID, w, want.CurrentSnapshot().SnapshotID)
	}
	if !c.HeldBy(next, base) || c.HeldBy(base, base) {
		t.Error("the change must be held by the version it made and not by its base")
	}
}
