package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// TestCommitPathsGolden pins what appends and a rollback write on a table
// of format v2 and on one of format v1: every snapshot, manifest list and manifest entry
// (describeSnapshots) and the metadata fields a rollback moves, compared
// with testdata/paths-<case>.golden. go test -run TestCommitPathsGolden
// -update rewrites them.
func TestCommitPathsGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		spec    bool // a batch written with a partition spec that is no longer the default
		path    bool // the table's location is the lake's spelled as a path, not a file URI
	}{
		{"v2", 2, false, false},
		{"v1", 1, false, false},
		{"v3", 3, false, false},
		{"spec", 2, true, false},
		{"path", 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pathsSequence(t, tc.version, tc.spec, tc.path)
			file := filepath.Join("testdata", "paths-"+tc.name+".golden")
			checkGolden(t, file, got)
		})
	}
}

// snapshotTimes are the times describeSnapshots renders: the sequence
// runs on the wall clock.
var snapshotTimes = regexp.MustCompile(` at \+\S+ `)

// pathsSequence creates a table of format version version (its location
// spelled as a path when path), appends to it, rolls it back, appends again
// and describes the result.
func pathsSequence(t *testing.T, version int, spec, path bool) string {
	ctx := context.Background()
	l := newLocalLake(t)
	start := time.Now()
	tbl, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"},
		Partition: Day, Properties: map[string]string{table.ManifestMergeEnabledKey: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if version != 2 || path {
		tbl = copyAsVersion(t, l, tbl, version, path)
	}
	prepare := func(batch string, at time.Time, n, g int) *Prepared {
		rec := rowsAt(t, tbl, at, n, g)
		defer rec.Release()
		p, err := tbl.Prepare(ctx, batch, []arrow.RecordBatch{rec}, map[string]string{"timelake.source": batch}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	commit := func(ps ...*Prepared) []int64 {
		res, err := tbl.Commit(ctx, ps, CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range res {
			ids = append(ids, r.SnapshotID)
		}
		return ids
	}
	day1 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	if version == 3 {
		// Appends to format-version 3 tables are refused: their data files
		// would need row ids (row lineage).
		if _, err := tbl.Commit(ctx, []*Prepared{prepare("a.csv", day1, 10, 0)}, CommitOptions{}); err == nil {
			t.Fatal("an append to a format-version 3 table was committed")
		}
		return "append refused\n" + describeRefs(t, tbl)
	}
	if spec {
		// a.csv and x.csv are written with the first partition spec,
		// committed on a version whose default spec is another (x.csv in
		// one commit with b.csv, of the new spec).
		p, x := prepare("a.csv", day1, 10, 0), prepare("x.csv", day2, 3, 2)
		addSpec(t, l, tbl)
		first := commit(p)
		commit(x, prepare("b.csv", day1.Add(time.Hour), 12, 1))
		if err := tbl.RollbackTo(ctx, first[0]); err != nil {
			t.Fatal(err)
		}
		return snapshotTimes.ReplaceAllString(describeSnapshots(t, tbl, start), " at T ") + describeRefs(t, tbl)
	}
	first := commit(prepare("a.csv", day1, 10, 0))
	commit(prepare("b.csv", day1.Add(time.Hour), 12, 1), prepare("c.csv", day2, 7, 2))
	commit(prepare("d.csv", day2, 5, 0))
	if err := tbl.RollbackTo(ctx, first[0]); err != nil {
		t.Fatal(err)
	}
	commit(prepare("e.csv", day2.Add(time.Hour), 4, 1))
	return snapshotTimes.ReplaceAllString(describeSnapshots(t, tbl, start), " at T ") + describeRefs(t, tbl)
}

// copyAsVersion creates table iot.copy from the first version of tbl (no
// snapshots), of format version version, its location spelled as a path
// when path, and loads it.
func copyAsVersion(t *testing.T, l *Lake, tbl *Table, version int, path bool) *Table {
	n := TableName{Namespace: "iot", Name: "copy"}
	loc := l.tableLocation(n)
	if path {
		loc = strings.TrimPrefix(loc, "file://")
	}
	return copyTable(t, l, tbl, n, version, loc)
}

// copyTable creates table n from the first version of tbl (no snapshots),
// of format version version, at location loc, and loads it.
func copyTable(t *testing.T, l *Lake, tbl *Table, n TableName, version int, loc string) *Table {
	ctx := context.Background()
	key := catalog.MetadataKey(tbl.name, 1)
	rc, _, err := l.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if version == 3 {
		m["format-version"] = 3
		m["next-row-id"] = 0
	}
	if version == 1 {
		m["format-version"] = 1
		delete(m, "last-sequence-number")
		for _, s := range m["schemas"].([]any) {
			if s.(map[string]any)["schema-id"] == m["current-schema-id"] {
				m["schema"] = s
			}
		}
		for _, s := range m["partition-specs"].([]any) {
			if s.(map[string]any)["spec-id"] == m["default-spec-id"] {
				m["partition-spec"] = s.(map[string]any)["fields"]
			}
		}
	}
	m["location"] = loc
	if body, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.Put(ctx, catalog.MetadataKey(n, 1), bytes.NewReader(body), storage.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	again, err := l.LoadTable(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if again.Metadata().Version() != version {
		t.Fatalf("format version %d, want %d", again.Metadata().Version(), version)
	}
	if again.Metadata().Location() != m["location"] {
		t.Fatalf("location %s, want %s", again.Metadata().Location(), m["location"])
	}
	return again
}

// describeRefs renders what the metadata says of the snapshots: format
// version, current snapshot, refs, snapshot-log, metadata-log and last
// sequence number, snapshot ids as describeSnapshots numbers them.
func describeRefs(t *testing.T, tbl *Table) string {
	meta := tbl.Metadata()
	ids := map[int64]string{}
	for i, s := range meta.Snapshots() {
		ids[s.SnapshotID] = fmt.Sprintf("s%d", i)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "format-version %d last-sequence-number %d\n", meta.Version(), meta.LastSequenceNumber())
	if s := meta.CurrentSnapshot(); s != nil {
		fmt.Fprintf(&b, "current %s\n", ids[s.SnapshotID])
	}
	for name, ref := range meta.Refs() {
		fmt.Fprintf(&b, "ref %s %s %s\n", name, ref.SnapshotRefType, ids[ref.SnapshotID])
	}
	var prev int64
	for e := range meta.SnapshotLogs() {
		if e.TimestampMs < prev {
			t.Errorf("snapshot-log not in time order at %s", ids[e.SnapshotID])
		}
		prev = e.TimestampMs
		fmt.Fprintf(&b, "snapshot-log %s\n", ids[e.SnapshotID])
	}
	for i, s := range meta.Snapshots() {
		if !strings.HasPrefix(s.ManifestList, meta.Location()+"/metadata/") {
			fmt.Fprintf(&b, "s%d manifest list not under the location the metadata gives\n", i)
		}
	}
	for e := range meta.PreviousFiles() {
		fmt.Fprintf(&b, "metadata-log %s\n", path.Base(e.MetadataFile))
	}
	if meta.LastUpdatedMillis() < prev {
		t.Errorf("last-updated-ms before the last snapshot-log entry")
	}
	return b.String()
}

// addSpec commits a version of tbl whose default partition spec is a new
// one (the time column by month), as another writer would, and loads it.
func addSpec(t *testing.T, l *Lake, tbl *Table) {
	ctx := context.Background()
	v := tbl.Version()
	rc, _, err := l.store.Get(ctx, catalog.MetadataKey(tbl.name, v))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	last := m["last-partition-id"].(float64)
	field := m["partition-specs"].([]any)[0].(map[string]any)["fields"].([]any)[0].(map[string]any)
	m["partition-specs"] = append(m["partition-specs"].([]any), map[string]any{"spec-id": 1, "fields": []any{
		map[string]any{"source-id": field["source-id"], "field-id": last + 1, "name": "time_month", "transform": "month"}}})
	m["default-spec-id"] = 1
	m["last-partition-id"] = last + 1
	if body, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.Put(ctx, catalog.MetadataKey(tbl.name, v+1), bytes.NewReader(body), storage.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
}

// TestAppendElsewhereRefused: an append to a table whose location is not
// its folder in the lake is refused with ErrOutsideTable before a data
// file is written there, and commits nothing.
func TestAppendElsewhereRefused(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}, Partition: Day})
	if err != nil {
		t.Fatal(err)
	}
	n := TableName{Namespace: "iot", Name: "copy"}
	away := copyTable(t, l, tbl, n, 2, l.tableLocation(n)+"-away")
	rec := rowsAt(t, away, time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC), 5, 0)
	defer rec.Release()
	if _, err := away.Prepare(ctx, "a.csv", []arrow.RecordBatch{rec}, nil, 0); !errors.Is(err, ErrOutsideTable) {
		t.Fatalf("append to a table stored elsewhere: %v, want ErrOutsideTable", err)
	}
	if _, err := os.Stat(strings.TrimPrefix(l.tableLocation(n)+"-away", "file://")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused append wrote below the other location: %v", err)
	}
	if away.Version() != 1 {
		t.Fatalf("version %d after the refused append", away.Version())
	}
}
