package lake

import (
	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/maintenance"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowsAt builds n rows of gateway g's devices at times at+i seconds.
func rowsAt(t testing.TB, tbl *Table, at time.Time, n, g int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(time.Duration(i) * time.Second).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("gw-%d-d%d", g, i%3))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 8)
	}
	return b.NewRecordBatch()
}

// TestMaintainKeepsAFleetTableSmall runs a small fleet for simulated hours
// with maintenance after every minute's commit: the files per partition,
// the snapshots and the metadata versions stay bounded, the rows are
// exact, and a key re-sent after its snapshot expired is still known.
func TestMaintainKeepsAFleetTableSmall(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		clock := time.Now()
		l.now = func() time.Time { return clock }
		tbl := createTestTable(t, l)
		const gateways, minutes = 3, 70
		rows := 0
		maxFiles, maxSnaps, orphanChecks, orphans := 0, 0, 0, 0
		for m := range minutes {
			var ps []*Prepared
			for g := range gateways {
				rec := rowsAt(t, tbl, clock, 5, g)
				p, err := tbl.Prepare(ctx, fmt.Sprintf("gw-%d/%04d.csv", g, m), []arrow.RecordBatch{rec}, nil, 0)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
				rows += 5
			}
			if _, err := tbl.Commit(ctx, ps, CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			rep, err := tbl.Maintain(ctx, MaintainOptions{})
			if err != nil {
				t.Fatalf("minute %d: %v", m, err)
			}
			if rep.Skipped != "" {
				t.Fatalf("maintenance skipped: %s", rep.Skipped)
			}
			if rep.Orphans != nil {
				orphanChecks++
				orphans += len(rep.Orphans.Files)
			} else if !rep.OrphansNext.After(clock) || rep.OrphansNext.Sub(rep.OrphansCheckedAt) != OrphanCheckInterval {
				t.Fatalf("minute %d: orphans not looked for, last %v, next %v: want the last look and the next after now", m, rep.OrphansCheckedAt, rep.OrphansNext)
			}
			for _, n := range liveDataFiles(t, tbl) {
				maxFiles = max(maxFiles, n)
			}
			maxSnaps = max(maxSnaps, len(tbl.Metadata().Snapshots()))
			clock = clock.Add(time.Minute)
		}
		// Tiers of 4 from 64 KiB: a few files per tier and the minute's own.
		if maxFiles > 16 {
			t.Errorf("up to %d live files in a partition", maxFiles)
		}
		// 15 minutes of 4 snapshots, plus compactions.
		if maxSnaps > 15*gateways+20 {
			t.Errorf("up to %d snapshots", maxSnaps)
		}
		if n := len(scanRows(t, tbl, 0)); n != rows {
			t.Fatalf("%d rows, want %d", n, rows)
		}
		versions, err := confOf(l, testName).versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(versions) > DefaultMetadataVersions+1 {
			t.Errorf("%d metadata versions kept", len(versions))
		}
		if b, ok, err := tbl.FindLoaded(ctx, "gw-0/0000.csv"); err != nil || !ok || !b.FromHistory {
			t.Errorf("the first key: %+v, %v, %v; want it in the load history", b, ok, err)
		}
		// Hourly.
		if orphanChecks != 2 {
			t.Errorf("orphan removal ran %d times (%d files), want 2", orphanChecks, orphans)
		}
		checkSortedFiles(t, tbl)
		// Load history segments merged away were deleted by the expiry
		// that merged them: nothing is left for orphan removal.
		clock = clock.Add(2 * time.Hour)
		if res, err := tbl.RemoveOrphans(ctx, OrphanOptions{}); err != nil || len(res.Files) != 0 {
			t.Fatalf("orphans two hours later: %+v, %v; want none", res, err)
		}
		requireConformantTable(t, l, tbl)
	})
}

// TestMaintainOlderAndForeignTables: a table timelake created before
// maintenance existed gets the settings on its first round and is
// maintained; a table another tool wrote is left alone unless its
// properties ask for maintenance.
func TestMaintainOlderAndForeignTables(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	for i := range 5 {
		appendRows(t, tbl, fmt.Sprintf("old-%d.csv", i), day0, 3)
	}
	// As CreateTable wrote tables before: no maintenance properties.
	if err := tbl.SetProperties(ctx, nil, []string{PropAutoMaintain, "write.metadata.previous-versions-max",
		"commit.manifest.min-count-to-merge"}); err != nil {
		t.Fatal(err)
	}
	rep, err := tbl.Maintain(ctx, MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != "" || !rep.Settings.Enabled || len(rep.Upgraded) != 3 {
		t.Fatalf("older timelake table: %+v", rep)
	}
	if rep.Took <= 0 {
		t.Errorf("maintenance took %v, want its duration", rep.Took)
	}
	if got := tbl.Properties(); got[PropAutoMaintain] != "true" || got["write.metadata.previous-versions-max"] != fmt.Sprint(DefaultMetadataVersions) {
		t.Fatalf("properties after the first round: %v", got)
	}
	if len(rep.Compacted.Groups) != 1 {
		t.Fatalf("older table not compacted: %+v", rep.Compacted)
	}

	// Another tool's table: no timelake contract properties.
	if err := tbl.SetProperties(ctx, nil, []string{PropAutoMaintain, PropTimeColumn, PropChunk}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, tbl, "foreign-1.csv", day0, 3)
	v := tbl.Version()
	rep, err = tbl.Maintain(ctx, MaintainOptions{})
	if err != nil || rep.Skipped == "" || rep.Settings.Enabled || tbl.Version() != v {
		t.Fatalf("foreign table: %+v, %v; want it left alone", rep, err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropAutoMaintain: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err = tbl.Maintain(ctx, MaintainOptions{}); err != nil || rep.Skipped != "" || len(rep.Upgraded) != 0 {
		t.Fatalf("foreign table asking for maintenance: %+v, %v", rep, err)
	}
}

// TestColdAfterOutlivesSnapshots: with snapshots kept for 5 minutes and
// compact-cold-after at 30, a partition whose last append was 30 minutes
// ago is compacted into one file although the snapshots that added its
// files expired long before (the sequences the maintenance state
// records tell their age).
func TestColdAfterOutlivesSnapshots(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	clock := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return clock }
	tbl := createTestTable(t, l)
	if err := tbl.SetProperties(ctx, map[string]string{PropSnapshotRetention: "5m", PropMinSnapshots: "2",
		PropCompactColdAfter: "30m", PropCompactMinFiles: "64"}, nil); err != nil {
		t.Fatal(err)
	}
	minute := func(m int, event time.Time) {
		t.Helper()
		rec := rowsAt(t, tbl, event, 5, 0)
		defer rec.Release()
		p, err := tbl.Prepare(ctx, fmt.Sprintf("gw/%04d.csv", m), []arrow.RecordBatch{rec}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Maintain(ctx, MaintainOptions{}); err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
		clock = clock.Add(time.Minute)
	}
	first := "time_day=2026-03-02"
	for m := range 10 {
		minute(m, clock) // event time: today
	}
	if n := liveDataFiles(t, tbl)[first]; n != 10 {
		t.Fatalf("%d files in %s after 10 minutes, want 10 (compact-min-files 64)", n, first)
	}
	// Then only the next day's partition is written: the first goes cold
	// 30 minutes after its last append (minute 9), compacted by the round
	// of minute 38 or 39 (a minute early at most: maintenance.ColdSlack).
	coldAt := -1
	for m := 10; m < 10+45; m++ {
		minute(m, clock.Add(24*time.Hour))
		if n := liveDataFiles(t, tbl)[first]; n == 1 && coldAt < 0 {
			coldAt = m
		}
	}
	if coldAt < 38 || coldAt > 39 {
		t.Errorf("%s compacted into one file at minute %d, want 38 or 39 (30 minutes after its last append at 9, the round before)", first, coldAt)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 12 {
		t.Errorf("%d snapshots kept, want those of the last 5 minutes", n)
	}
	if n := len(scanRows(t, tbl, 0)); n != 55*5 {
		t.Fatalf("%d rows, want %d", n, 55*5)
	}
}

// TestOrphansRemoveKilledWritesTemporaryFiles: a local warehouse's
// temporary files of writes killed midway (which listings never show) are
// orphans once older than orphan-min-age; younger ones stay.
func TestOrphansRemoveKilledWritesTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "gw/0.csv", day0, 2)
	meta := filepath.Join(l.URI(), filepath.FromSlash(catalog.MetadataPrefix(testName)))
	old, young := filepath.Join(meta, ".tl-tmp-v9.metadata.json-0123"), filepath.Join(meta, ".tl-tmp-v10.metadata.json-4567")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	dry, err := tbl.RemoveOrphans(ctx, OrphanOptions{DryRun: true})
	if err != nil || !slices.Contains(dry.Files, "metadata/.tl-tmp-v9.metadata.json-0123") {
		t.Fatalf("dry run: %+v, %v; want the old temporary file named", dry.Files, err)
	}
	if _, err := tbl.RemoveOrphans(ctx, OrphanOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old temporary file left: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young temporary file removed: %v", err)
	}
}

// TestOrphansGetTheirTurn: a round whose budget runs out before orphan
// removal, while it is due, postpones it; after maintenance.OrphansTurn such rounds in
// a row, the next round removes orphans before anything else, however
// short its budget, and the count starts again.
func TestOrphansGetTheirTurn(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "gw/0.csv", day0, 2)
	stray := filepath.Join(l.URI(), filepath.FromSlash(catalog.TablePrefix(testName)), "data", "stray.parquet")
	if err := os.WriteFile(stray, []byte("PAR1"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stray, past, past); err != nil {
		t.Fatal(err)
	}
	// A clock that has passed the budget whenever it is read again: every
	// step finds the budget spent.
	start := time.Now()
	reads := 0
	clock := func() time.Time {
		reads++
		if reads == 1 {
			return start
		}
		return start.Add(time.Hour)
	}
	for round := 1; round <= maintenance.OrphansTurn+1; round++ {
		reads = 0
		opts := MaintainOptions{Budget: time.Second, Clock: clock}
		if round > maintenance.OrphansTurn {
			// Its turn: a budget of a millisecond (and the slack) is
			// enough for orphan removal first.
			opts = MaintainOptions{Budget: time.Millisecond}
		}
		rep, err := tbl.Maintain(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tbl.loadMaintenanceState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(stray)
		if round <= maintenance.OrphansTurn {
			if rep.Orphans != nil || !rep.Pending || st.OrphansPostponed != round || statErr != nil {
				t.Fatalf("round %d: orphans %+v, pending %v, postponed %d, stray %v; want it postponed", round, rep.Orphans, rep.Pending, st.OrphansPostponed, statErr)
			}
			continue
		}
		if rep.Orphans == nil || !slices.Contains(rep.Orphans.Files, "data/stray.parquet") || st.OrphansPostponed != 0 || !errors.Is(statErr, fs.ErrNotExist) {
			t.Fatalf("round %d: orphans %+v, postponed %d, stray %v; want its turn", round, rep.Orphans, st.OrphansPostponed, statErr)
		}
	}
}
