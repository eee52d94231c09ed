package lake

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
)

func TestRetentionDropsWholeOldPartitions(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, clock := clockedTable(t, l) // now: 2026-01-06 10:00
		// Days 2026-01-01 (two files), 01-02 and 01-05 (its last hour
		// and the first of 01-06: two partitions).
		appendRows(t, tbl, "a.csv", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), 10)
		appendRows(t, tbl, "b.csv", time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC), 10)
		appendRows(t, tbl, "c.csv", time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC), 10)
		appendRows(t, tbl, "d.csv", day0, 120)
		rowsBefore := scanCount(t, tbl)

		// A retention of 4 days: 01-01 ends 01-02 00:00, older than 01-02
		// 10:00; 01-02 ends 01-03 00:00, newer: kept whole.
		dry, err := tbl.ApplyRetention(ctx, 4*24*time.Hour, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dry.Partitions, []string{"time_day=2026-01-01"}) || dry.Files != 2 || dry.Rows != 20 || dry.SnapshotID != 0 {
			t.Fatalf("dry run: %+v", dry)
		}
		if scanCount(t, tbl) != rowsBefore {
			t.Fatal("the dry run changed the table")
		}
		res, err := tbl.ApplyRetention(ctx, 4*24*time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Partitions, []string{"time_day=2026-01-01"}) || res.Files != 2 || res.Rows != 20 || res.SnapshotID == 0 {
			t.Fatalf("retention: %+v", res)
		}
		if got := scanCount(t, tbl); got != rowsBefore-20 {
			t.Fatalf("rows after: %d, want %d", got, rowsBefore-20)
		}
		live := liveDataFiles(t, tbl)
		if live["time_day=2026-01-01"] != 0 || live["time_day=2026-01-02"] != 1 {
			t.Fatalf("live files: %v", live)
		}
		snap := tbl.Metadata().CurrentSnapshot()
		if snap.Summary.Operation != table.OpDelete || snap.Summary.Properties[SummaryRetention] != "4d" ||
			snap.Summary.Properties[summaryDeletedRecords] != "20" || snap.Summary.Properties[summaryTotalRecords] != "130" {
			t.Fatalf("snapshot: %+v", snap.Summary)
		}
		// The dropped files stay readable by the snapshot before, until
		// it expires (time travel), and every row is there.
		if got := len(scanRows(t, tbl, *snap.ParentSnapshotID)); int64(got) != rowsBefore {
			t.Fatalf("the snapshot before reads %d rows", got)
		}
		// Nothing more to drop: no commit.
		v := tbl.Version()
		again, err := tbl.ApplyRetention(ctx, 4*24*time.Hour, false)
		if err != nil || again.Files != 0 || tbl.Version() != v {
			t.Fatalf("second round: %+v %v (version %d -> %d)", again, err, v, tbl.Version())
		}
		// A day later 01-02 goes too.
		*clock = clock.Add(24 * time.Hour)
		res, err = tbl.ApplyRetention(ctx, 4*24*time.Hour, false)
		if err != nil || !slices.Equal(res.Partitions, []string{"time_day=2026-01-02"}) {
			t.Fatalf("next day: %+v %v", res, err)
		}
	})
}

func TestRetentionInMaintenance(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, _ := clockedTable(t, l)
	appendRows(t, tbl, "a.csv", time.Date(2024, 11, 1, 1, 0, 0, 0, time.UTC), 10)
	appendRows(t, tbl, "b.csv", day0, 10)
	// Off by default.
	rep, err := tbl.Maintain(ctx, MaintainOptions{})
	if err != nil || rep.Retention != nil {
		t.Fatalf("without the property: %+v %v", rep.Retention, err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropRetention: "400d"}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err = tbl.Maintain(ctx, MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Retention == nil || !slices.Equal(rep.Retention.Partitions, []string{"time_day=2024-11-01"}) {
		t.Fatalf("retention: %+v", rep.Retention)
	}
	if rep.Settings.Retention != 400*24*time.Hour || rep.Settings.Sources[PropRetention] != SourceProperty {
		t.Fatalf("settings: %+v", rep.Settings)
	}
	if got := scanCount(t, tbl); got != 10 {
		t.Fatalf("rows: %d", got)
	}
}

// TestRetentionExpiredBeforeItLearntItLanded: a retention round's commit
// lands but its response is lost, and before it looks again other writers
// commit enough appends that its version is deleted as an old one, and an
// expiry removes its snapshot (timelake.max-snapshots expires young
// snapshots too). The newest version has nothing left to drop, but the
// manifest the round wrote, which keeps the newer partition's file, is
// named by the later snapshots (manifest merging off): the round keeps
// the files it wrote, and every row left is read once.
func TestRetentionExpiredBeforeItLearntItLanded(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
		ctx := context.Background()
		tbl, now := oldAndNewDay(t, l)
		dry, err := tbl.ApplyRetention(ctx, 10*24*time.Hour, true)
		if err != nil || dry.Files != 1 || dry.Rows != 60 {
			t.Fatalf("dry run: %+v, %v", dry, err)
		}
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		versions := DefaultMetadataVersions + 1
		landed, restore := outlive(t, l, other, now, versions, true)
		res, err := tbl.ApplyRetention(ctx, 10*24*time.Hour, false)
		restore()
		retention := *landed
		if err != nil {
			t.Fatalf("retention whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
		}
		fresh := expiredSnapshot(t, l, "retention", retention)
		if n := len(scanRows(t, fresh, 0)); n != 60+versions*3 {
			t.Fatalf("%d rows, want %d", n, 60+versions*3)
		}
	})
}

// TestRetentionExpiredBeforeItLearntItLandedKeepsFilesOfRetainedSnapshots:
// as TestRetentionExpiredBeforeItLearntItLanded, but an append merges the
// round's manifest into one of its own before the expiry, which removes
// the round's snapshot and keeps the later ones. The newest snapshot no
// longer names the round's manifest, the first later snapshot still does:
// the round keeps it, and every snapshot the table keeps can be read.
func TestRetentionExpiredBeforeItLearntItLandedKeepsFilesOfRetainedSnapshots(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
		ctx := context.Background()
		tbl, now := oldAndNewDay(t, l)
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		versions := DefaultMetadataVersions + 1
		var retention, later int64
		fc := &faultyCatalog{Catalog: l.cat, lose: fmt.Errorf("put: %w", catalog.ErrVersionTaken), after: func() {
			appendRows(t, other, "late-0.csv", now, 3)
			later = other.Metadata().CurrentSnapshot().SnapshotID
			retention = *other.Metadata().CurrentSnapshot().ParentSnapshotID
			if err := other.SetProperties(ctx, map[string]string{table.ManifestMergeEnabledKey: "true",
				table.ManifestMinMergeCountKey: "2"}, nil); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < versions; i++ {
				appendRows(t, other, fmt.Sprintf("late-%d.csv", i), now, 3)
			}
			if _, err := other.Expire(ctx, ExpireOptions{RetainLast: versions, RetainAtMost: versions}); err != nil {
				t.Fatal(err)
			}
		}}
		l.cat = fc
		res, err := tbl.ApplyRetention(ctx, 10*24*time.Hour, false)
		l.cat = fc.Catalog
		if err != nil {
			t.Fatalf("retention whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
		}
		fresh, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		if retention == 0 || fresh.Metadata().SnapshotByID(retention) != nil || fresh.Metadata().SnapshotByID(later) == nil {
			t.Fatalf("the retention's snapshot %d was not expired, or the one after it %d was: the race did not take place", retention, later)
		}
		if n := len(scanRows(t, fresh, 0)); n != 60+versions*3 {
			t.Fatalf("%d rows, want %d", n, 60+versions*3)
		}
		if n := len(scanRows(t, fresh, later)); n != 60+3 {
			t.Fatalf("snapshot %d after the retention: %d rows, want %d", later, n, 60+3)
		}
	})
}

// oldAndNewDay is a new table of l without manifest merging, holding one
// batch, one manifest, in two partitions: the day before d (dropped by a
// retention of 10 days) and d, 10 days before now (kept).
func oldAndNewDay(t *testing.T, l *Lake) (tbl *Table, now time.Time) {
	t.Helper()
	tbl = createTestTable(t, l)
	if err := tbl.SetProperties(context.Background(), map[string]string{table.ManifestMergeEnabledKey: "false"}, nil); err != nil {
		t.Fatal(err)
	}
	now = time.Now().UTC()
	d := now.Truncate(24*time.Hour).AddDate(0, 0, -10)
	appendRows(t, tbl, "old.csv", d.Add(-61*time.Minute), 120)
	return tbl, now
}
