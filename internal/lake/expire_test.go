package lake

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// TestExpire: expiry removes the snapshots beyond the newest RetainLast
// that are older than OlderThan, deletes the files only they referenced and
// keeps every row, also when another writer commits during it; the expired
// batch ids are forgotten (a re-sent file loads again); a dry run writes
// nothing.
func TestExpire(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, nil) // gw-0/file.csv .. gw-2/file.csv, 60 rows each
		// One commit of three snapshots, 25 rows each.
		if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // every snapshot is older than OlderThan
		c := confOf(l, confName)
		before, err := c.keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		version := tbl.Version()
		wantExpired := []string{"gw-0/file.csv", "gw-1/file.csv", "gw-2/file.csv", "multi/0"}
		batchIDs := func(es []ExpiredSnapshot) []string {
			var out []string
			for _, e := range es {
				out = append(out, e.BatchID)
			}
			return out
		}

		dry, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 2, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		after, err := c.keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(batchIDs(dry.Expired), wantExpired) || dry.Kept != 2 || dry.Version != version ||
			tbl.Version() != version || !slices.Equal(after, before) {
			t.Fatalf("dry run: expired %v, kept %d, version %d (table %d, was %d), files changed %v",
				batchIDs(dry.Expired), dry.Kept, dry.Version, tbl.Version(), version, !slices.Equal(after, before))
		}

		// Another writer commits right before the first attempt's write:
		// the expiry is retried on its version, which keeps its snapshot.
		other, err := l.LoadTable(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 2,
			beforeCommit: func(attempt int) error {
				if attempt == 1 {
					confAppend(t, other, "intruder", confDay, 10, 99, AppendOptions{})
				}
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(batchIDs(res.Expired), wantExpired) || res.Kept != 3 || res.Version != version+2 || tbl.Version() != version+2 {
			t.Fatalf("expire: expired %v, kept %d, version %d (table %d), want %v, 3, %d",
				batchIDs(res.Expired), res.Kept, res.Version, tbl.Version(), wantExpired, version+2)
		}
		meta := tbl.Metadata()
		if len(meta.Snapshots()) != 3 {
			t.Fatalf("%d snapshots left, want 3", len(meta.Snapshots()))
		}
		for name, err := range map[string]error{
			"snapshots": checkSnapshots(meta),
			"orphans":   checkNoOrphans(ctx, c, meta),
			"layout":    checkLayout(ctx, c),
		} {
			if err != nil {
				t.Errorf("check %s: %v", name, err)
			}
		}
		at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows := at.NumRows()
		at.Release()
		if rows != 3*60+3*25+10 {
			t.Fatalf("scan after expiry: %d rows, want %d", rows, 3*60+3*25+10)
		}

		if _, ok := tbl.FindBatch("gw-0/file.csv"); ok {
			t.Error("an expired batch id is still in the snapshots")
		}
		// It moved into the load history with its source facts.
		if b, ok, err := tbl.FindLoaded(ctx, "gw-0/file.csv"); err != nil || !ok || !b.FromHistory || b.Rows != 60 {
			t.Errorf("expired batch id in the load history: %+v, %v, %v; want it found with 60 rows", b, ok, err)
		}
		if res.Remembered != len(wantExpired) {
			t.Errorf("%d batch ids remembered, want %d", res.Remembered, len(wantExpired))
		}
		for _, id := range []string{"multi/2", "intruder"} {
			if _, ok := tbl.FindBatch(id); !ok {
				t.Errorf("kept batch id %s is not found", id)
			}
		}
		if r := confAppend(t, tbl, "gw-0/file.csv", confDay, 60, 0, AppendOptions{}); !r.Duplicate || r.Rows != 0 {
			t.Errorf("re-sent file after its snapshot expired: %+v, want it recognised as already loaded", r)
		}

		none, err := tbl.Expire(ctx, ExpireOptions{}) // the table's defaults: 5 days
		if err != nil || len(none.Expired) != 0 || none.Version != tbl.Version() {
			t.Errorf("expire with the defaults: %+v, %v; want nothing expired", none, err)
		}
	})
}

// TestOldVersionsDeleted: with write.metadata.delete-after-commit.enabled
// (set on the tables timelake creates), a commit deletes the versions older
// than every one its metadata-log names, keeping
// write.metadata.previous-versions-max of them; a table with the property
// off keeps every version.
func TestOldVersionsDeleted(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, map[string]string{"write.metadata.previous-versions-max": "2"}) // v1..v4
		for i := range 3 {
			confAppend(t, tbl, "more/"+string(rune('a'+i)), confDay, 10, 40+i, AppendOptions{})
		}
		c := confOf(l, confName)
		got, err := c.versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{5, 6, 7}; !slices.Equal(got, want) {
			t.Errorf("versions %v, want %v (the current one and the 2 its metadata-log names)", got, want)
		}
		if err := checkLayout(ctx, c); err != nil {
			t.Error(err)
		}
		if _, err := l.LoadTable(ctx, confName); err != nil {
			t.Fatalf("load after the old versions were deleted: %v", err)
		}

	})
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, map[string]string{"write.metadata.previous-versions-max": "2",
			"write.metadata.delete-after-commit.enabled": "false"})
		confAppend(t, tbl, "more/a", confDay, 10, 40, AppendOptions{})
		if got, err := confOf(l, confName).versions(ctx); err != nil || !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
			t.Errorf("without the property: versions %v (%v), want all of 1..5", got, err)
		}
	})
}

// TestExpireAfterAnotherRound: the files of the expired snapshots that
// another round of maintenance deleted first (its orphan removal, or its
// clean-up of the same snapshots) are not a failure; a manifest list the
// kept snapshots need that is gone still is.
func TestExpireAfterAnotherRound(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		for _, tc := range []struct {
			name, table string
			delete      func(t *testing.T, tbl *Table, pre *tablemeta.Indexed, expired []int64) // what the other round deletes
			fails       bool
		}{
			{"the expired snapshots' files", "rounda", func(t *testing.T, tbl *Table, pre *tablemeta.Indexed, expired []int64) {
				fs, err := tbl.fsF(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range expired {
					s, err := pre.Snapshot(pre.ByID()[id])
					if err != nil {
						t.Fatal(err)
					}
					mfs, err := s.Manifests(fs)
					if err != nil {
						t.Fatal(err)
					}
					for _, mf := range mfs {
						_ = fs.Remove(mf.FilePath()) // shared manifests may be gone already
					}
					if err := fs.Remove(s.ManifestList); err != nil {
						t.Fatal(err)
					}
				}
			}, false},
			{"the kept snapshot's manifest list", "roundb", func(t *testing.T, tbl *Table, _ *tablemeta.Indexed, _ []int64) {
				fs, err := tbl.fsF(ctx)
				if err != nil {
					t.Fatal(err)
				}
				s, err := tbl.meta.CurrentSnapshot()
				if err != nil {
					t.Fatal(err)
				}
				if err := fs.Remove(s.ManifestList); err != nil {
					t.Fatal(err)
				}
			}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tbl, err := l.CreateTable(ctx, TableName{Namespace: "iot", Name: tc.table}, confSchema, CreateSpec{TimeColumn: "time", SeriesKey: confWant.seriesKey})
				if err != nil {
					t.Fatal(err)
				}
				for i := range 4 {
					confAppend(t, tbl, "gw/"+string(rune('a'+i))+".csv", confDay.Add(time.Duration(i)*time.Hour), 10, i, AppendOptions{})
				}
				pre, _ := tbl.loaded()
				time.Sleep(5 * time.Millisecond)
				res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1,
					beforeDelete: func(expired []int64) { tc.delete(t, tbl, pre, expired) }})
				if tc.fails != (err != nil) {
					t.Fatalf("expire: %+v, %v; want an error: %v", res, err, tc.fails)
				}
				if len(res.Expired) != 3 {
					t.Fatalf("expired %d snapshots, want 3", len(res.Expired))
				}
			})
		}
	})
}

// TestExpireWithinDeadline: an expiry with a deadline expires the oldest
// snapshots in chunks and leaves the rest, counted, once the deadline is
// past; a later expiry takes them; every batch id stays loaded and the
// rows stay as they were.
func TestExpireWithinDeadline(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, nil)
		if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // every snapshot is older than OlderThan
		rows := scanRows(t, tbl, 0)
		// A clock one second further at each look: the deadline passes
		// during the first chunk.
		now := time.Date(2026, 1, 6, 10, 0, 0, 0, time.UTC)
		clock := func() time.Time { now = now.Add(time.Second); return now }
		res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 2,
			Deadline: now.Add(2500 * time.Millisecond), Clock: clock, firstChunk: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Expired) != 2 || res.Left != 2 || res.Kept != 4 {
			t.Fatalf("within the deadline: expired %d, left %d, kept %d; want 2, 2, 4", len(res.Expired), res.Left, res.Kept)
		}
		if res.Expired[0].BatchID != "gw-0/file.csv" || res.Expired[1].BatchID != "gw-1/file.csv" {
			t.Fatalf("expired %+v, want the oldest two", res.Expired)
		}
		rest, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(rest.Expired) != 2 || rest.Left != 0 || rest.Kept != 2 {
			t.Fatalf("the next expiry: expired %d, left %d, kept %d; want 2, 0, 2", len(rest.Expired), rest.Left, rest.Kept)
		}
		for _, key := range []string{"gw-0/file.csv", "gw-1/file.csv", "gw-2/file.csv", "multi/0"} {
			if _, ok, err := tbl.FindLoaded(ctx, key); err != nil || !ok {
				t.Errorf("%s: loaded %v, %v after expiry", key, ok, err)
			}
		}
		if got := scanRows(t, tbl, 0); !slices.Equal(got, rows) {
			t.Fatalf("rows changed by expiry: %d rows, were %d", len(got), len(rows))
		}
	})
}

// TestExpireAppendsReadsNoManifest: expiring snapshots that only appended,
// up to an oldest kept snapshot that only appended too, deletes their
// manifest lists and manifests without reading a manifest: every data file
// they name is still live. A manifest of the kept snapshot made unreadable
// shows it (reading it fails the expiry); the rows and every kept key stay.
func TestExpireAppendsReadsNoManifest(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, nil)
		if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // every snapshot is older than OlderThan
		rows := len(scanRows(t, tbl, 0))
		cur := tbl.Metadata().CurrentSnapshot()
		fs, err := tbl.fsF(ctx)
		if err != nil {
			t.Fatal(err)
		}
		manifests, err := cur.Manifests(fs)
		if err != nil || len(manifests) == 0 {
			t.Fatalf("manifests of the current snapshot: %d, %v", len(manifests), err)
		}
		key, err := tbl.fileKey(manifests[0].FilePath())
		if err != nil {
			t.Fatal(err)
		}
		body, _, err := storage.ReadAll(ctx, l.store, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.store.Put(ctx, key, bytes.NewReader([]byte("not a manifest")), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1})
		if err != nil {
			t.Fatalf("expire: %v (a manifest was read)", err)
		}
		if len(res.Expired) != 5 || res.Kept != 1 {
			t.Fatalf("expired %d, kept %d; want 5, 1", len(res.Expired), res.Kept)
		}
		if _, err := l.store.Put(ctx, key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		meta := tbl.Metadata()
		c := confOf(l, confName)
		for name, err := range map[string]error{
			"snapshots": checkSnapshots(meta),
			"orphans":   checkNoOrphans(ctx, c, meta),
			"layout":    checkLayout(ctx, c),
		} {
			if err != nil {
				t.Errorf("check %s: %v", name, err)
			}
		}
		if got := len(scanRows(t, tbl, 0)); got != rows {
			t.Fatalf("%d rows after expiry, want %d", got, rows)
		}
	})
}

// TestExpireBeyondMaxSnapshots: with RetainAtMost (timelake.max-snapshots)
// the metadata keeps at most that many snapshots: the older ones are
// expired though younger than the retention (marked Early), their batch ids
// move to the load history, and their files stay until they are past the
// retention (a query may still read them) and are then deleted by the next
// expiry, in any process, while the files of the snapshots past the
// retention are deleted at once as before.
func TestExpireBeyondMaxSnapshots(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, nil) // gw-0/file.csv .. gw-2/file.csv
		time.Sleep(20 * time.Millisecond)
		mid := time.Now()
		time.Sleep(5 * time.Millisecond)
		if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil { // multi/0 .. multi/2
			t.Fatal(err)
		}
		rows := len(scanRows(t, tbl, 0))
		lists := map[string]string{} // batch id: manifest list
		for _, s := range tbl.Metadata().Snapshots() {
			lists[s.Summary.Properties["timelake.batch-id"]] = s.ManifestList
		}
		exists := func(batch string) bool {
			key, err := tbl.fileKey(lists[batch])
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.store.Stat(ctx, key)
			if err != nil && !isStoreNotExist(err) {
				t.Fatal(err)
			}
			return err == nil
		}

		res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Since(mid), RetainLast: 1, RetainAtMost: 2})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range res.Expired {
			got = append(got, e.BatchID)
			if want := e.BatchID == "multi/0"; e.Early != want {
				t.Errorf("%s: early %v, want %v", e.BatchID, e.Early, want)
			}
		}
		if want := []string{"gw-0/file.csv", "gw-1/file.csv", "gw-2/file.csv", "multi/0"}; !slices.Equal(got, want) || res.Kept != 2 {
			t.Fatalf("expired %v, kept %d; want %v, 2", got, res.Kept, want)
		}
		if res.Remembered != 4 {
			t.Errorf("%d batch ids remembered, want 4", res.Remembered)
		}
		for _, b := range []string{"gw-0/file.csv", "gw-1/file.csv", "gw-2/file.csv"} {
			if exists(b) {
				t.Errorf("the manifest list of %s (past the retention) was not deleted", b)
			}
		}
		if !exists("multi/0") {
			t.Error("the manifest list of multi/0 (expired before its retention) was deleted")
		}
		if r := confAppend(t, tbl, "multi/0", confDay, 25, 0, AppendOptions{}); !r.Duplicate {
			t.Errorf("re-sent multi/0 after its early expiry: %+v, want already loaded", r)
		}
		if got := len(scanRows(t, tbl, 0)); got != rows {
			t.Fatalf("%d rows after expiry, want %d", got, rows)
		}
		c := confOf(l, confName)
		if err := checkNoOrphans(ctx, c, tbl.Metadata()); err == nil {
			t.Fatal("no stray file after an early expiry: its manifest list should wait for its retention")
		}
		// Past multi/0's retention, another process's expiry (the next
		// cron run's maintenance) deletes them, from the record the expiry
		// left.
		time.Sleep(5 * time.Millisecond)
		other, err := l.LoadTable(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		past := ExpireOptions{OlderThan: time.Millisecond, RetainLast: 2, RetainAtMost: 2}
		res, err = other.Expire(ctx, past)
		if err != nil {
			t.Fatal(err)
		}
		if exists("multi/0") || res.FilesDeleted == 0 || len(res.Expired) != 0 {
			t.Errorf("expiry past multi/0's retention: its manifest list left %v, %d files deleted, %d expired; want it deleted",
				exists("multi/0"), res.FilesDeleted, len(res.Expired))
		}
		if res, err = tbl.Expire(ctx, past); err != nil || res.FilesDeleted != 0 {
			t.Errorf("a second expiry: %d files deleted, %v; want none left to delete", res.FilesDeleted, err)
		}
		if err := checkNoOrphans(ctx, c, tbl.Metadata()); err != nil {
			t.Errorf("after the deferred deletes: %v", err)
		}
		if err := checkSnapshots(tbl.Metadata()); err != nil {
			t.Error(err)
		}
	})
}

// TestExpireBeyondMaxSnapshotsDeletesReplaced: an expiry that removes
// snapshots past the retention together with some before it (beyond
// RetainAtMost) deletes at once the data files a compaction among the
// former replaced, as an expiry of those alone would; only the files of
// the early ones wait.
func TestExpireBeyondMaxSnapshotsDeletesReplaced(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, map[string]string{PropCompactMinFiles: "2"}) // gw-0/file.csv .. gw-2/file.csv
		replaced := livePathSet(t, tbl)
		res, err := tbl.Compact(ctx, CompactOptions{})
		if err != nil || res.SnapshotID == 0 {
			t.Fatalf("compact: %+v, %v", res, err)
		}
		for f := range livePathSet(t, tbl) {
			if replaced[f] {
				t.Fatalf("compaction left %s live", f)
			}
		}
		time.Sleep(20 * time.Millisecond)
		mid := time.Now()
		time.Sleep(5 * time.Millisecond)
		if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil { // multi/0 .. multi/2
			t.Fatal(err)
		}
		rows := len(scanRows(t, tbl, 0))
		exp, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Since(mid), RetainLast: 1, RetainAtMost: 2})
		if err != nil {
			t.Fatal(err)
		}
		early := 0
		for _, e := range exp.Expired {
			if e.Early {
				early++
			}
		}
		if len(exp.Expired) != 5 || early != 1 {
			t.Fatalf("expired %d snapshots, %d early; want 5 (3 appends, the compaction, multi/0), 1 early", len(exp.Expired), early)
		}
		for f := range replaced {
			key, err := tbl.fileKey(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.store.Stat(ctx, key); !isStoreNotExist(err) {
				t.Errorf("data file %s the compaction replaced is still there (%v)", f, err)
			}
		}
		if got := len(scanRows(t, tbl, 0)); got != rows {
			t.Fatalf("%d rows after expiry, want %d", got, rows)
		}
	})
}
