package lake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUndoDelete: the rows of a delete come back in a snapshot of their
// own, and the batches loaded after the delete, and a compaction of the
// delete's files with theirs, stay; a second undo is refused.
func TestUndoDelete(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := deleteFixture(t, l)
		before := scanTestRows(t, tbl)
		day2 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
		where, _ := ParseWhere([]string{"device=d1"})
		del, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where, From: day2}})
		if err != nil {
			t.Fatal(err)
		}
		isDeleted := func(r testRow) bool { return r.device == "d1" && !r.at.Before(day2) }
		want := countRows(before, isDeleted)
		if del.Rows != want || want == 0 {
			t.Fatalf("delete: %+v, %d rows before", del, want)
		}
		// A batch after the delete, in the delete's partition, and a
		// compaction of the delete's new file with it.
		appendRows(t, tbl, "later.csv", day2.Add(15*time.Hour), 9)
		if cr, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2}); err != nil || len(cr.Groups) == 0 {
			t.Fatalf("compaction: %+v %v", cr, err)
		}

		version := tbl.Version()
		dry, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if dry.Rows != want || dry.Read == 0 || dry.Written != 0 || dry.SnapshotID != 0 || tbl.Version() != version {
			t.Fatalf("dry run: %+v (version %d, was %d)", dry, tbl.Version(), version)
		}
		res, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != want || res.Written == 0 || res.SnapshotID == 0 || res.Delete.SnapshotID != del.SnapshotID {
			t.Fatalf("undo: %+v", res)
		}
		after := scanTestRows(t, tbl)
		if len(after) != len(before)+9 || countRows(after, isDeleted) != want+3 {
			t.Fatalf("after the undo: %d rows (%d before, 9 loaded since), %d of the deleted kind", len(after), len(before), countRows(after, isDeleted))
		}
		for _, r := range before {
			if countRows(after, func(a testRow) bool { return a == r }) != 1 {
				t.Fatalf("row %+v not once after the undo", r)
			}
		}
		if _, ok := tbl.FindBatch("later.csv"); !ok {
			t.Fatal("the batch loaded after the delete is gone")
		}
		if d := tbl.Deletions(); len(d) != 0 {
			t.Fatalf("deletions after the undo: %+v", d)
		}
		if _, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{}); !errors.Is(err, ErrNotUndoable) ||
			!strings.Contains(err.Error(), "undid it already") {
			t.Fatalf("a second undo: %v", err)
		}
		if n := scanCount(t, tbl); n != int64(len(after)) {
			t.Fatalf("%d rows after the second undo, %d before", n, len(after))
		}
	})
}

// TestUndoDeleteOverlapping: a delete whose rows a later delete matches
// too is undone after that one, not before; undone newest first, every
// row is back.
func TestUndoDeleteOverlapping(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := deleteFixture(t, l)
	before := scanTestRows(t, tbl)
	day2 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	where, _ := ParseWhere([]string{"device=d1"})
	first, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
	if err != nil {
		t.Fatal(err)
	}
	second, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{From: day2}})
	if err != nil {
		t.Fatal(err)
	}
	// The second matched no row of d1 (gone already), but its predicate
	// matches those of the first on 2026-01-02.
	if _, err := tbl.UndoDelete(ctx, first.SnapshotID, UndoDeleteOptions{}); !errors.Is(err, ErrNotUndoable) ||
		!strings.Contains(err.Error(), "undo that one first") {
		t.Fatalf("undo of the first: %v", err)
	}
	if n := scanCount(t, tbl); n != int64(len(before))-first.Rows-second.Rows {
		t.Fatalf("%d rows after the refusal", n)
	}
	if _, err := tbl.UndoDelete(ctx, second.SnapshotID, UndoDeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := tbl.UndoDelete(ctx, first.SnapshotID, UndoDeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != first.Rows {
		t.Fatalf("undo of the first: %+v, it deleted %d", res, first.Rows)
	}
	after := scanTestRows(t, tbl)
	if len(after) != len(before) {
		t.Fatalf("%d rows after both undos, %d before", len(after), len(before))
	}
	for _, r := range before {
		if countRows(after, func(a testRow) bool { return a == r }) != 1 {
			t.Fatalf("row %+v not once after the undos", r)
		}
	}
}

// TestUndoDeleteRefusals: what is not a delete of the current ancestry, or
// whose replaced files are gone, is refused saying why, and nothing is
// written.
func TestUndoDeleteRefusals(t *testing.T) {
	ctx := context.Background()
	l, tbl, clock := twoBatches(t)
	load, ok := tbl.FindBatch("a.csv")
	if !ok {
		t.Fatal("a.csv not loaded")
	}
	where, _ := ParseWhere([]string{"device=d1"})
	del, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{load.SnapshotID, "is an append (the load of a.csv), not a delete"},
		{12345, "the table has no snapshot 12345"},
	} {
		if _, err := tbl.UndoDelete(ctx, tc.id, UndoDeleteOptions{}); !errors.Is(err, ErrNotUndoable) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("undo of %d: %v, want %q", tc.id, err, tc.want)
		}
	}
	// The snapshot before the delete expires, and with it the files the
	// delete replaced.
	*clock = clock.Add(time.Minute)
	if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{}); !errors.Is(err, ErrNotUndoable) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("undo after the expiry: %v", err)
	}
	if n := scanCount(t, tbl); n != 60-del.Rows {
		t.Fatalf("%d rows", n)
	}
	assertNoOrphans(t, l, tbl)
}

// TestUndoDeleteReadDedup: under timelake.read-dedup the restored rows keep
// their file's data sequence number, so a newer batch's row of the same
// series and time still wins over them; so do a delete's rewritten rows.
func TestUndoDeleteReadDedup(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	if err := tbl.SetProperties(ctx, map[string]string{PropReadDedup: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	old := appendRows(t, tbl, "old.csv", start, 30)
	where, _ := ParseWhere([]string{"device=d1"})
	del, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(ctx, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	oldSeq := int64(-1)
	for _, s := range tbl.Metadata().Snapshots() {
		if s.SnapshotID == old.SnapshotID {
			oldSeq = s.SequenceNumber
		}
	}
	if len(files) != 2 {
		t.Fatalf("%d live files, want the delete's and the undo's", len(files))
	}
	for _, f := range files {
		if f.Entry.SequenceNum() != oldSeq {
			t.Fatalf("file of snapshot %d (delete %d, undo %d) has data sequence number %d, the rows' batch %d",
				f.Entry.SnapshotID(), del.SnapshotID, undo.SnapshotID, f.Entry.SequenceNum(), oldSeq)
		}
	}
}

// TestUndoDeleteExpiredBeforeItLearntItLanded: an undo's commit lands but
// its response is lost, and before it looks again other writers commit
// enough appends that its version is deleted as an old one, and an expiry
// removes its snapshot and the delete's (timelake.max-snapshots expires
// young snapshots too). The rows it restored are live in the newest
// version: the undo keeps its files, and every row is read once.
func TestUndoDeleteExpiredBeforeItLearntItLanded(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		start := day0.Add(-3 * time.Hour)
		appendRows(t, tbl, "first.csv", start, 5)
		where, _ := ParseWhere([]string{"device=d1"})
		del, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
		if err != nil || del.Rows != 2 {
			t.Fatalf("delete: %+v, %v", del, err)
		}
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		versions := DefaultMetadataVersions + 1
		landed, restore := outlive(t, l, other, day0, versions, true)
		res, err := tbl.UndoDelete(ctx, del.SnapshotID, UndoDeleteOptions{})
		restore()
		undo := *landed
		t.Logf("undo whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
		fresh := expiredSnapshot(t, l, "undo", undo)
		if n := scanCount(t, fresh); n != 5+3*int64(versions) {
			t.Fatalf("%d rows, want %d", n, 5+3*versions)
		}
	})
}
