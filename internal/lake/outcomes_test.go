package lake

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/loadhistory"
)

// scanAll returns every record ScanHistory gives, by key and outcome.
func scanAll(t *testing.T, tbl *Table) (map[string]LoadRecord, []string) {
	t.Helper()
	got := map[string]LoadRecord{}
	missing, err := tbl.ScanHistory(context.Background(), func(r LoadRecord) error {
		k := r.Outcome() + " " + r.Key
		if _, dup := got[k]; dup {
			t.Errorf("%s given twice", k)
		}
		got[k] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, missing
}

// TestOutcomeLog: duplicates and rejections recorded in the outcome log
// come back from ScanHistory beside the loaded keys of the snapshots and
// of the load history, are never taken for loaded keys, merge by tiers
// like the load history, and are not orphans.
func TestOutcomeLog(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		appendRows(t, tbl, "gw-1/a.csv", day0, 3)
		appendRows(t, tbl, "gw-1/b.csv", day0.Add(time.Hour), 3)
		time.Sleep(2 * time.Millisecond)
		if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}); err != nil {
			t.Fatal(err)
		}
		appendRows(t, tbl, "gw-2/c.csv", day0, 3)
		at := time.Now().UTC().Truncate(time.Millisecond)
		err := tbl.RecordOutcomes(ctx, []LoadRecord{
			{Key: "gw-2/bad.csv", Size: 9, SHA256: "ab", LoadedAt: at, Status: OutcomeRejected, Reason: "gw-2/bad.csv: row 1: bad",
				QuarantinedTo: "_rejected/gw-2/bad.csv", LoadedBy: LoadedByPoll},
			{Key: "gw-1/a.csv", Size: 5, LoadedAt: at, Status: OutcomeDuplicate, SnapshotID: 42},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: "gw-3/x.csv", LoadedAt: at}}); err == nil {
			t.Error("a loaded record was taken into the outcome log")
		}
		got, missing := scanAll(t, tbl)
		want := []string{"duplicate gw-1/a.csv", "loaded gw-1/a.csv", "loaded gw-1/b.csv", "loaded gw-2/c.csv", "rejected gw-2/bad.csv"}
		if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) || len(missing) != 0 {
			t.Fatalf("scan: %v (missing %v), want %v", keys, missing, want)
		}
		if r := got["rejected gw-2/bad.csv"]; r.Reason != "gw-2/bad.csv: row 1: bad" || r.QuarantinedTo != "_rejected/gw-2/bad.csv" || !r.LoadedAt.Equal(at) {
			t.Errorf("rejected record: %+v", r)
		}
		if r := got["loaded gw-2/c.csv"]; r.Rows != 3 || !r.MaxRowTime.Equal(day0.Add(3*time.Minute)) {
			t.Errorf("loaded record of a snapshot: %+v, want 3 rows up to %s (timelake.max-row-time)", r, day0.Add(3*time.Minute))
		}
		if r := got["loaded gw-1/a.csv"]; !r.MaxRowTime.Equal(day0.Add(3 * time.Minute)) {
			t.Errorf("loaded record of the load history: %+v, want its max row time kept", r)
		}
		if _, ok, err := tbl.FindLoaded(ctx, "gw-2/bad.csv"); err != nil || ok {
			t.Errorf("a rejected key counts as loaded: %v %v", ok, err)
		}
		// Enough records to fill a tier: merged into one segment, the
		// ones replaced deleted.
		for i := range loadhistory.MergeFanIn {
			if err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: fmt.Sprintf("gw-4/%d.csv", i), LoadedAt: at, Status: OutcomeRejected}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(outcomeLog.segments(tbl.Properties())); n >= loadhistory.MergeFanIn {
			t.Errorf("%d outcome segments: their tier was not merged", n)
		}
		if got, _ := scanAll(t, tbl); len(got) != len(want)+loadhistory.MergeFanIn {
			t.Errorf("after merging: %d records, want %d", len(got), len(want)+loadhistory.MergeFanIn)
		}
		assertNoOrphans(t, l, tbl)
		if res, err := tbl.RemoveOrphans(ctx, OrphanOptions{MinAge: time.Nanosecond}); err != nil {
			t.Fatal(err)
		} else if slices.ContainsFunc(res.Files, func(f string) bool { return strings.Contains(f, loadhistory.OutcomePrefix) }) {
			t.Errorf("orphan removal deleted outcome segments: %v", res.Files)
		}
		if got, _ := scanAll(t, tbl); len(got) != len(want)+loadhistory.MergeFanIn {
			t.Errorf("after orphan removal: %d records", len(got))
		}
	})
}

// TestScanHistoryMissingSegment: a load history segment deleted by hand
// is named by ScanHistory and LoadHistoryPresent, which read the rest;
// maintenance drops it from the table.
func TestScanHistoryMissingSegment(t *testing.T) {
	ctx := context.Background()
	l, segs := historyOfThree(t, t.TempDir(), "")
	tbl, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.store.Delete(ctx, l.historyKey(testName, segs[0].Name)); err != nil {
		t.Fatal(err)
	}
	got, missing := scanAll(t, tbl)
	if !slices.Equal(missing, []string{segs[0].Name}) || len(got) != 1 || got["loaded gw/2.csv"].Key == "" {
		t.Fatalf("scan: %v, missing %v; want gw/2.csv of the snapshots, and the segment named", got, missing)
	}
	hist, gone, err := tbl.LoadHistoryPresent(ctx)
	if err != nil || !slices.Equal(gone, missing) || hist.Segments() != 0 {
		t.Fatalf("LoadHistoryPresent: %v, %v, %v", gone, hist, err)
	}
	if _, err := tbl.LoadHistory(ctx); err == nil {
		t.Fatal("LoadHistory read a history with a missing segment")
	}
	if _, err := tbl.Maintain(ctx, MaintainOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, missing := scanAll(t, tbl); len(missing) != 0 {
		t.Errorf("still missing after maintenance: %v", missing)
	}
}

// TestMissingOutcomeSegmentIsDroppedByItsMerge: an outcome segment lost
// (an older timelake's orphan removal deletes what it does not know) does
// not stop recording: the merge of its tier drops it.
func TestMissingOutcomeSegmentIsDroppedByItsMerge(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	at := time.Now().UTC()
	record := func(i int) {
		t.Helper()
		if err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: fmt.Sprintf("gw/%d.csv", i), LoadedAt: at, Status: OutcomeDuplicate}}); err != nil {
			t.Fatal(err)
		}
	}
	record(0)
	first := outcomeLog.segments(tbl.Properties())[0].Name
	if err := l.store.Delete(ctx, l.historyKey(testName, first)); err != nil {
		t.Fatal(err)
	}
	if _, missing := scanAll(t, tbl); !slices.Equal(missing, []string{first}) {
		t.Errorf("missing %v, want %s", missing, first)
	}
	for i := 1; i <= loadhistory.MergeFanIn; i++ {
		record(i)
	}
	got, missing := scanAll(t, tbl)
	if len(missing) != 0 || len(got) != loadhistory.MergeFanIn {
		t.Errorf("after the merge: %d records, missing %v; want %d and none", len(got), missing, loadhistory.MergeFanIn)
	}
	if _, err := l.store.Stat(ctx, l.historyKey(testName, first)); err == nil {
		t.Error("the lost segment came back")
	} else if !isStoreNotExist(err) {
		t.Fatal(err)
	}
}

// TestOutcomeLogWithLinkedSegments: outcome log entries that are symbolic
// links in a local table's metadata folder are never read or deleted: a
// scan names them missing, a full tier of them that new outcomes join is
// merged without them and leaves them as they are, and maintenance after a
// scan drops one still named.
func TestOutcomeLogWithLinkedSegments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	victim := filepath.Join(t.TempDir(), "victim.parquet")
	if err := os.WriteFile(victim, []byte("outside the table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, filepath.FromSlash(catalog.MetadataPrefix(testName)))
	at := time.Now().UTC()
	var links []string
	for range loadhistory.MergeFanIn - 1 {
		links = append(links, outcomeLog.segmentName(at, 1)) // the tier the new outcomes join: merged
	}
	for _, name := range links {
		if err := os.Symlink(victim, filepath.Join(meta, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropLoadOutcomes: strings.Join(links, ",")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, missing := scanAll(t, tbl); !slices.Equal(missing, links) {
		t.Errorf("missing %v, want the links %v", missing, links)
	}
	if err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: "gw/a.csv", LoadedAt: at, Status: OutcomeDuplicate}}); err != nil {
		t.Fatal(err)
	}
	segs := outcomeLog.segments(tbl.Properties())
	if len(segs) != 1 || slices.Contains(links, segs[0].Name) {
		t.Fatalf("outcome segments %v, want only the one written", segs)
	}
	for _, name := range links {
		if fi, err := os.Lstat(filepath.Join(meta, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link %s: %v; want it left", name, err)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "outside the table\n" {
		t.Fatalf("the file the links point at: %q, %v", b, err)
	}

	// One link named on its own stays named until maintenance drops it.
	named := segs[0].Name + "," + links[0]
	if err := tbl.SetProperties(ctx, map[string]string{PropLoadOutcomes: named}, nil); err != nil {
		t.Fatal(err)
	}
	if got, missing := scanAll(t, tbl); !slices.Equal(missing, links[:1]) || len(got) != 1 {
		t.Fatalf("scan: %v, missing %v; want the outcome and the link missing", got, missing)
	}
	rep, err := tbl.Maintain(ctx, MaintainOptions{})
	if err != nil || !slices.Equal(rep.DroppedSegments, links[:1]) {
		t.Fatalf("maintenance dropped %v, %v; want the link", rep.DroppedSegments, err)
	}
	if got := outcomeLog.segments(tbl.Properties()); len(got) != 1 || got[0].Name != segs[0].Name {
		t.Fatalf("after maintenance %v, want %s", got, segs[0].Name)
	}
}
