package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/storage"
)

// TestHistoryStaysSmall expires one snapshot at a time for a long while:
// the history keeps a bounded number of segments, forgets keys past the
// window and remembers the others.
func TestHistoryStaysSmall(t *testing.T) {
	ctx := context.Background()
	clock := time.Now() // the store's file times are real: orphan removal compares them with the clock
	l, err := Open(ctx, t.TempDir(), Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	if err := tbl.SetProperties(ctx, map[string]string{PropDedupeWindow: "2d"}, nil); err != nil {
		t.Fatal(err)
	}
	const rounds = 150
	maxSegs := 0
	for i := range rounds {
		appendRows(t, tbl, fmt.Sprintf("gw/%04d.csv", i), day0, 2)
		clock = clock.Add(40 * time.Minute)
		if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Minute, RetainLast: 1}); err != nil {
			t.Fatal(err)
		}
		maxSegs = max(maxSegs, len(historySegments(tbl.Properties())))
	}
	if maxSegs > 2*loadhistory.MergeFanIn {
		t.Errorf("up to %d segments, want a bounded number", maxSegs)
	}
	// 150 rounds of 40 minutes = 100 hours; the window is 48 hours.
	for _, tc := range []struct {
		key  string
		want bool
	}{{"gw/0000.csv", false}, {"gw/0050.csv", false}, {"gw/0100.csv", true}, {"gw/0147.csv", true}} {
		_, ok, err := tbl.FindLoaded(ctx, tc.key)
		if err != nil || ok != tc.want {
			t.Errorf("FindLoaded(%s) = %v, %v; want %v", tc.key, ok, err, tc.want)
		}
	}
	// Segments merged away or past the window were deleted by the expiry
	// that replaced them: nothing is left for orphan removal.
	assertNoOrphans(t, l, tbl)
	clock = clock.Add(2 * time.Hour)
	if res, err := tbl.RemoveOrphans(ctx, OrphanOptions{MinAge: time.Nanosecond}); err != nil || len(res.Files) != 0 {
		t.Fatalf("orphans: %+v, %v; want none", res, err)
	}
	if _, ok, err := tbl.FindLoaded(ctx, "gw/0147.csv"); err != nil || !ok {
		t.Fatalf("after orphan removal: %v, %v", ok, err)
	}
}

// TestLoadHistoryCacheAndMissingSegment: a second process with the same
// cache folder reads the segments from it, not from the store; a segment
// deleted by another tool stops look-ups with ErrLoadHistoryMissing until
// maintenance drops it from the table.
func TestLoadHistoryCacheAndMissingSegment(t *testing.T) {
	ctx := context.Background()
	dir, cache := t.TempDir(), t.TempDir()
	l, segs := historyOfThree(t, dir, cache)
	// A new process, the same cache: the store's copy is not needed.
	l2, err := Open(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := l2.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.store.Delete(ctx, l.historyKey(testName, segs[0].Name)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := t2.FindLoaded(ctx, "gw/0.csv"); err != nil || !ok {
		t.Fatalf("from the cache: %v, %v", ok, err)
	}
	// Without the cache, the missing segment is an error naming the fix.
	l3, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t3, err := l3.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := t3.FindLoaded(ctx, "gw/0.csv"); !errors.Is(err, ErrLoadHistoryMissing) || !strings.Contains(err.Error(), "tables maintain") {
		t.Fatalf("a missing segment: %v, want ErrLoadHistoryMissing with the fix", err)
	}
	rep, err := t3.Maintain(ctx, MaintainOptions{})
	if err != nil || len(rep.DroppedSegments) != 1 {
		t.Fatalf("maintenance: %+v, %v; want the missing segment dropped", rep.DroppedSegments, err)
	}
	if _, ok, err := t3.FindLoaded(ctx, "gw/0.csv"); err != nil || ok {
		t.Fatalf("after the repair: %v, %v; want not found, no error", ok, err)
	}
	if _, ok, err := t3.FindLoaded(ctx, "gw/2.csv"); err != nil || !ok {
		t.Fatalf("the kept snapshot's key: %v, %v", ok, err)
	}
}

// TestLoadHistoryIndexCache: a run with a cache folder looks keys up in
// the cached index of each segment without decoding the segment; a torn
// index is rebuilt from the segment; a hit still reads the records.
func TestLoadHistoryIndexCache(t *testing.T) {
	ctx := context.Background()
	dir, cache := t.TempDir(), t.TempDir()
	l, segs := historyOfThree(t, dir, cache)
	path := l.segmentDiskCache(testName).Path(segs[0].Name)
	idx, err := os.ReadFile(path + loadhistory.IndexSuffix)
	if err != nil {
		t.Fatalf("the writer cached no index: %v", err)
	}
	holds := func(ix *loadhistory.Index, key string) bool { return ix.MayHoldKey(loadhistory.Fingerprint(key)) }
	if ix, ok := loadhistory.DecodeIndex(segs[0], idx); !ok || !holds(ix, "gw/0.csv") || !holds(ix, "gw/1.csv") {
		t.Fatalf("cached index %+v, %v; want the keys gw/0.csv and gw/1.csv", ix, ok)
	}
	// A new process whose cached segment is unreadable: a miss needs only
	// the index, so it neither reads nor fails on the segment.
	if err := os.WriteFile(path, []byte("not parquet"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *Table {
		t.Helper()
		l2, err := Open(ctx, dir, Options{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		t2, err := l2.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		return t2
	}
	if _, ok, err := open().FindLoaded(ctx, "gw/new.csv"); err != nil || ok {
		t.Fatalf("a new key: %v, %v; want not found from the index alone", ok, err)
	}
	// A hit reads the segment: the unreadable copy is dropped from the
	// cache and the store's copy read.
	if _, ok, err := open().FindLoaded(ctx, "gw/0.csv"); err == nil || ok {
		t.Fatalf("a hit on an unreadable cached segment: %v, %v; want its error", ok, err)
	}
	if _, ok, err := open().FindLoaded(ctx, "gw/0.csv"); err != nil || !ok {
		t.Fatalf("after the cache dropped it: %v, %v", ok, err)
	}
	// A torn index is rebuilt.
	if err := os.WriteFile(path+loadhistory.IndexSuffix, idx[:len(idx)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := open().FindLoaded(ctx, "gw/1.csv"); err != nil || !ok {
		t.Fatalf("with a torn index: %v, %v", ok, err)
	}
	if b, err := os.ReadFile(path + loadhistory.IndexSuffix); err != nil || len(b) != len(idx) {
		t.Fatalf("index not rebuilt: %d bytes, %v", len(b), err)
	}
}

// TestHistoryReaderOfAnOlderVersion: a reader that loaded the table before
// maintenance merged (and deleted) the segments it names finds the keys in
// the newest version's history.
func TestHistoryReaderOfAnOlderVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	expire := func() {
		t.Helper()
		time.Sleep(2 * time.Millisecond)
		if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		appendRows(t, tbl, fmt.Sprintf("gw/%02d.csv", i), day0, 2)
		expire()
	}
	l2, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := l2.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	before := historySegments(old.Properties())
	// Enough expiries to merge the first tier, whose segments are deleted.
	for i := 3; i < 3+loadhistory.MergeFanIn+2; i++ {
		appendRows(t, tbl, fmt.Sprintf("gw/%02d.csv", i), day0, 2)
		expire()
	}
	if _, err := l.store.Stat(ctx, l.historyKey(testName, before[0].Name)); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("segment %s still there after its merge (%v)", before[0].Name, err)
	}
	b, ok, err := old.FindLoaded(ctx, "gw/00.csv")
	if err != nil || !ok || !b.FromHistory {
		t.Fatalf("a reader of an older version: %+v, %v, %v; want the key from the newest history", b, ok, err)
	}
	if _, ok, err := old.FindLoaded(ctx, "gw/never.csv"); err != nil || ok {
		t.Fatalf("an unknown key: %v, %v", ok, err)
	}
}

// historyOfThree makes a table in dir, with the lake's cache folder cache,
// of three batches gw/0.csv to gw/2.csv (two rows each), the snapshots of
// the first two expired into one load history segment; it returns the lake
// and the segments.
func historyOfThree(t *testing.T, dir, cache string) (*Lake, []loadhistory.SegmentInfo) {
	t.Helper()
	ctx := context.Background()
	l, err := Open(ctx, dir, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	for i := range 3 {
		appendRows(t, tbl, fmt.Sprintf("gw/%d.csv", i), day0, 2)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	segs := historySegments(tbl.Properties())
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	return l, segs
}

// TestExpiryWithLinkedSegments: load history entries that are symbolic
// links in a local table's metadata folder are never read, merged or
// deleted by an expiry: one past the dedupe window and a full tier of
// them, which the new records would be merged with, leave the expiry to
// write its own segment, name only that one, and leave the links and the
// file they point at as they are.
func TestExpiryWithLinkedSegments(t *testing.T) {
	ctx := context.Background()
	clock := time.Now()
	dir := t.TempDir()
	l, err := Open(ctx, dir, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	victim := filepath.Join(t.TempDir(), "victim.parquet")
	if err := os.WriteFile(victim, []byte("outside the table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := []string{loadHistoryLog.segmentName(clock.Add(-400*24*time.Hour), 1)} // past the window: dropped
	for range loadhistory.MergeFanIn - 1 {
		links = append(links, loadHistoryLog.segmentName(clock, 1)) // the tier the new records join: merged
	}
	for _, name := range links {
		if err := os.Symlink(victim, filepath.Join(dir, filepath.FromSlash(catalog.MetadataPrefix(testName)), name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropLoadHistory: strings.Join(links, ",")}, nil); err != nil {
		t.Fatal(err)
	}
	appendRows(t, tbl, "gw/a.csv", day0, 2)
	appendRows(t, tbl, "gw/b.csv", day0.Add(time.Hour), 2)
	clock = clock.Add(time.Hour)
	res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Minute, RetainLast: 1})
	if err != nil || len(res.Expired) == 0 {
		t.Fatalf("expire: %+v, %v", res, err)
	}
	segs := historySegments(tbl.Properties())
	if len(segs) != 1 || slices.Contains(links, segs[0].Name) {
		t.Fatalf("segments after the expiry %v, want only the one it wrote", segs)
	}
	if _, ok, err := tbl.FindLoaded(ctx, "gw/a.csv"); err != nil || !ok {
		t.Fatalf("the expired key: %v, %v", ok, err)
	}
	for _, name := range links {
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(catalog.MetadataPrefix(testName)), name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link %s: %v; want it left", name, err)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "outside the table\n" {
		t.Fatalf("the file the links point at: %q, %v", b, err)
	}
}
