package lake

import (
	"context"
	"testing"
	"time"
)

func TestRollbackTo(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		a := appendRows(t, tbl, "gw-1/a.csv", day0, 10)
		b := appendRows(t, tbl, "gw-1/b.csv", day0.Add(time.Hour), 20)
		if err := tbl.RollbackTo(ctx, a.SnapshotID); err != nil {
			t.Fatal(err)
		}
		if got := tbl.Metadata().CurrentSnapshot().SnapshotID; got != a.SnapshotID {
			t.Fatalf("current snapshot %d, want %d", got, a.SnapshotID)
		}
		if tbl.Version() != 4 {
			t.Fatalf("version %d, want 4", tbl.Version())
		}
		if _, ok := tbl.FindBatch("gw-1/b.csv"); ok {
			t.Fatal("abandoned batch still found")
		}
		if _, ok := FindBatchIn(tbl.Metadata(), "gw-1/b.csv"); ok {
			t.Fatal("FindBatchIn: abandoned batch still found")
		}
		if bs := BatchesOf(tbl.Metadata()); len(bs) != 1 || bs[0].BatchID != "gw-1/a.csv" || bs[0].Rows != 10 {
			t.Fatalf("batches after rollback: %+v", bs)
		}
		anc := InCurrentAncestry(tbl.Metadata())
		if !anc[a.SnapshotID] || anc[b.SnapshotID] {
			t.Fatalf("ancestry %v", anc)
		}
		// The snapshot stays in the metadata; a fresh load agrees.
		if tbl.Metadata().SnapshotByID(b.SnapshotID) == nil {
			t.Fatal("abandoned snapshot removed from metadata")
		}
		again, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := again.FindBatch("gw-1/b.csv"); ok || again.Version() != 4 {
			t.Fatalf("reloaded: version %d, batch found %v", again.Version(), ok)
		}
		if n := scanCount(t, again); n != 10 {
			t.Fatalf("rows after rollback %d, want 10", n)
		}
		// The abandoned batch id loads again.
		if r := appendRows(t, again, "gw-1/b.csv", day0.Add(time.Hour), 20); r.Duplicate || r.Rows != 20 {
			t.Fatalf("re-append of the abandoned batch: %+v", r)
		}
		// Rolling back to a snapshot that is not an ancestor fails.
		if err := again.RollbackTo(ctx, b.SnapshotID); err == nil {
			t.Fatal("rollback to an abandoned snapshot succeeded")
		}
	})
}
