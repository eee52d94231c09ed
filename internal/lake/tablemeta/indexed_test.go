package tablemeta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestWithSnapshotsMatchesBuilder: appending snapshots to a version's JSON
// (Indexed.WithSnapshots) gives the metadata iceberg-go's builder gives for
// the same snapshots (AddSnapshot and a main branch update each), on a
// pretty-printed foreign file with empty history and on our own compact
// output, over several commits, with the metadata-log trimmed to
// write.metadata.previous-versions-max.
func TestWithSnapshotsMatchesBuilder(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "foreign-empty.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.Replace(string(raw), "@LOCATION@", "file:///lake/iot/foreign", 1))
	raw = []byte(strings.Replace(string(raw), `"comment":`, `"write.metadata.previous-versions-max": "2", "comment":`, 1))

	h, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := h.full
	seq, ts := int64(0), int64(1767600000000)
	var parent *int64
	nextID := int64(1) << 60 // above 2^53: ids must survive as exact integers
	for commit := range 4 {
		base := "file:///lake/iot/foreign/metadata/v" + strconv.Itoa(commit+1) + ".metadata.json"
		var snaps []table.Snapshot
		var updates []table.Update
		for i := range commit + 1 { // 1, 2, 3, 4 snapshots per commit
			seq++
			ts += 1000
			nextID++
			schemaID := 3
			s := table.Snapshot{SnapshotID: nextID, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: ts,
				ManifestList: "file:///lake/iot/foreign/metadata/snap-" + strconv.FormatInt(nextID, 10) + ".avro",
				SchemaID:     &schemaID,
				Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{
					SummaryBatchID: "gw/" + strconv.Itoa(commit) + "-" + strconv.Itoa(i) + ".csv", "added-records": "10"}}}
			id := s.SnapshotID
			parent = &id
			snaps = append(snaps, s)
			updates = append(updates, table.NewAddSnapshotUpdate(&snaps[len(snaps)-1]),
				table.NewSetSnapshotRefUpdate(table.MainBranch, s.SnapshotID, table.BranchRef, -1, -1, -1))
		}
		if want, err = table.UpdateTableMetadata(want, updates, base); err != nil {
			t.Fatal(err)
		}
		var body []byte
		if h, body, err = h.WithSnapshots(snaps, base); err != nil {
			t.Fatal(err)
		}
		got, err := table.ParseMetadataBytes(body)
		if err != nil {
			t.Fatalf("commit %d: the appended metadata does not parse: %v\n%s", commit, err, body)
		}
		if g, w := got.Snapshots(), want.Snapshots(); !reflect.DeepEqual(g, w) {
			t.Errorf("commit %d: snapshots\n got %+v\nwant %+v", commit, g, w)
		}
		for name, pair := range map[string][2]any{
			"snapshot-log":         {slices.Collect(got.SnapshotLogs()), slices.Collect(want.SnapshotLogs())},
			"metadata-log":         {slices.Collect(got.PreviousFiles()), slices.Collect(want.PreviousFiles())},
			"current-snapshot":     {got.CurrentSnapshot().SnapshotID, want.CurrentSnapshot().SnapshotID},
			"main":                 {got.Ref().SnapshotID, want.Ref().SnapshotID},
			"last-sequence-number": {got.LastSequenceNumber(), want.LastSequenceNumber()},
			"last-updated-ms":      {got.LastUpdatedMillis(), want.LastUpdatedMillis()},
			"properties":           {got.Properties(), want.Properties()},
			"schema":               {got.CurrentSchema().String(), want.CurrentSchema().String()},
			"spec":                 {got.PartitionSpec().String(), want.PartitionSpec().String()},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("commit %d: %s\n got %+v\nwant %+v", commit, name, pair[0], pair[1])
			}
		}
		if n := len(slices.Collect(got.PreviousFiles())); n > 2 {
			t.Errorf("commit %d: %d metadata-log entries, previous-versions-max is 2", commit, n)
		}

		// The index agrees with the parsed file, and a re-read file gives
		// the same index.
		again, err := Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, hh := range []*Indexed{h, again} {
			if hh.lastSeq != seq || hh.lastUpdated != ts || hh.snaps[hh.current].ID != nextID || len(hh.snaps) != len(got.Snapshots()) {
				t.Errorf("commit %d: index seq %d ts %d current %d, %d snapshots", commit, hh.lastSeq, hh.lastUpdated, hh.snaps[hh.current].ID, len(hh.snaps))
			}
			for _, s := range got.Snapshots() {
				found, err := hh.FindBatch(s.Summary.Properties[SummaryBatchID])
				if err != nil || found == nil || !reflect.DeepEqual(*found, s) {
					t.Errorf("commit %d: batch %s: %+v, %v", commit, s.Summary.Properties[SummaryBatchID], found, err)
				}
			}
		}
	}

	// Removing the oldest snapshots (expiry) matches the builder too.
	var ids []int64
	for _, s := range want.Snapshots()[:6] {
		ids = append(ids, s.SnapshotID)
	}
	base := "file:///lake/iot/foreign/metadata/v5.metadata.json"
	if want, err = table.UpdateTableMetadata(want, []table.Update{table.NewRemoveSnapshotsUpdate(ids, false)}, base); err != nil {
		t.Fatal(err)
	}
	next, body, err := h.Apply(RemoveSnapshots(ids, ts+5000), base)
	if err != nil {
		t.Fatal(err)
	}
	got, err := table.ParseMetadataBytes(body)
	if err != nil {
		t.Fatalf("the metadata without the expired snapshots does not parse: %v\n%s", err, body)
	}
	for name, pair := range map[string][2]any{
		"snapshots":    {got.Snapshots(), want.Snapshots()},
		"snapshot-log": {slices.Collect(got.SnapshotLogs()), slices.Collect(want.SnapshotLogs())},
		"metadata-log": {slices.Collect(got.PreviousFiles()), slices.Collect(want.PreviousFiles())},
		"current":      {got.CurrentSnapshot().SnapshotID, want.CurrentSnapshot().SnapshotID},
		"sequence":     {got.LastSequenceNumber(), want.LastSequenceNumber()},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("after removal: %s\n got %+v\nwant %+v", name, pair[0], pair[1])
		}
	}
	if len(next.snaps) != len(want.Snapshots()) || next.snaps[next.current].ID != nextID {
		t.Errorf("index after removal: %d snapshots, current %d", len(next.snaps), next.snaps[next.current].ID)
	}
	if s, err := next.FindBatch("gw/0-0.csv"); err != nil || s != nil {
		t.Errorf("a removed snapshot's batch id is still found: %+v, %v", s, err)
	}
	if _, _, err := h.Apply(RemoveSnapshots([]int64{nextID}, ts), base); err == nil {
		t.Error("removing the current snapshot was not refused")
	}

	// Moving main back to an ancestor (rollback) matches the builder's
	// set-snapshot-ref update, the snapshot-log entry's time aside (the
	// builder takes the wall clock).
	target := *want.CurrentSnapshot().ParentSnapshotID
	base = "file:///lake/iot/foreign/metadata/v6.metadata.json"
	if want, err = table.UpdateTableMetadata(got, []table.Update{
		table.NewSetSnapshotRefUpdate(table.MainBranch, target, table.BranchRef, 0, 0, 0)}, base); err != nil {
		t.Fatal(err)
	}
	ms := ts + 9000
	e := next.edit()
	if err := e.rollBack(target, ms); err != nil {
		t.Fatal(err)
	}
	rolled, body, err := e.done(base, ms)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = table.ParseMetadataBytes(body); err != nil {
		t.Fatalf("the rolled back metadata does not parse: %v\n%s", err, body)
	}
	logIDs := func(m table.Metadata) (ids []int64) {
		for e := range m.SnapshotLogs() {
			ids = append(ids, e.SnapshotID)
		}
		return ids
	}
	for name, pair := range map[string][2]any{
		"snapshots":       {got.Snapshots(), want.Snapshots()},
		"snapshot-log":    {logIDs(got), logIDs(want)},
		"metadata-log":    {slices.Collect(got.PreviousFiles()), slices.Collect(want.PreviousFiles())},
		"current":         {got.CurrentSnapshot().SnapshotID, want.CurrentSnapshot().SnapshotID},
		"main":            {got.Ref(), want.Ref()},
		"sequence":        {got.LastSequenceNumber(), want.LastSequenceNumber()},
		"last-updated-ms": {got.LastUpdatedMillis(), ms},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("after rollback: %s\n got %+v\nwant %+v", name, pair[0], pair[1])
		}
	}
	if rolled.snaps[rolled.current].ID != target {
		t.Errorf("index after rollback: current %d, want %d", rolled.snaps[rolled.current].ID, target)
	}
	if err := rolled.edit().rollBack(nextID, ms); err == nil {
		t.Error("rolling forward to a snapshot outside the ancestry was not refused")
	}
}

// TestHeadBatchesFollowAncestry: a batch id counts only in the current
// snapshot's ancestry (docs/table-format.md, "Snapshots and batch ids"): after
// a rollback, the abandoned snapshot's batch id is not found.
func TestHeadBatchesFollowAncestry(t *testing.T) {
	doc := map[string]any{
		"format-version": 2, "table-uuid": "6c4a6f0e-3d0b-4b8e-9c7a-2f1d5e8a9b10", "location": "file:///t",
		"last-sequence-number": 2, "last-updated-ms": 1767600002000, "last-column-id": 1,
		"current-schema-id": 0, "schemas": []any{map[string]any{"type": "struct", "schema-id": 0,
			"fields": []any{map[string]any{"id": 1, "name": "ts", "required": true, "type": "timestamptz"}}}},
		"default-spec-id": 0, "partition-specs": []any{map[string]any{"spec-id": 0, "fields": []any{}}},
		"last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": []any{map[string]any{"order-id": 0, "fields": []any{}}},
		"current-snapshot-id": 1,
		"refs":                map[string]any{"main": map[string]any{"snapshot-id": 1, "type": "branch"}},
		"snapshots": []any{
			map[string]any{"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1767600001000, "manifest-list": "file:///t/1.avro",
				"summary": map[string]any{"operation": "append", SummaryBatchID: "kept.csv"}},
			map[string]any{"snapshot-id": 2, "parent-snapshot-id": 1, "sequence-number": 2, "timestamp-ms": 1767600002000,
				"manifest-list": "file:///t/2.avro", "summary": map[string]any{"operation": "append", SummaryBatchID: "abandoned.csv"}},
		},
	}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := h.FindBatch("kept.csv"); err != nil || s == nil || s.SnapshotID != 1 {
		t.Errorf("kept.csv: %+v, %v", s, err)
	}
	if s, err := h.FindBatch("abandoned.csv"); err != nil || s != nil {
		t.Errorf("abandoned.csv outside the ancestry was found: %+v, %v", s, err)
	}
	if !h.SnapshotIDTaken(2) || h.SnapshotIDTaken(3) {
		t.Error("snapshot ids: 2 must be taken (it is in the file), 3 not")
	}
}

// TestWithSnapshotsMatchesBuilderV1: on a format-version 1 table, appended
// snapshots (sequence number 0) give the builder's metadata, with no
// last-sequence-number.
func TestWithSnapshotsMatchesBuilderV1(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "foreign-empty.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(strings.Replace(string(raw), "@LOCATION@", "file:///lake/iot/foreign", 1)), &doc); err != nil {
		t.Fatal(err)
	}
	doc["format-version"] = 1
	delete(doc, "last-sequence-number")
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	h, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := h.full
	var parent *int64
	for i := range 3 {
		base := "file:///lake/iot/foreign/metadata/v" + strconv.Itoa(i+1) + ".metadata.json"
		id := int64(100 + i)
		schemaID := 3
		s := table.Snapshot{SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: h.SequenceAfter(1), TimestampMs: 1767600000000 + int64(i)*1000,
			ManifestList: "file:///lake/iot/foreign/metadata/snap-" + strconv.FormatInt(id, 10) + ".avro", SchemaID: &schemaID,
			Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{SummaryBatchID: "b" + strconv.Itoa(i)}}}
		parent = &s.SnapshotID
		if want, err = table.UpdateTableMetadata(want, []table.Update{table.NewAddSnapshotUpdate(&s),
			table.NewSetSnapshotRefUpdate(table.MainBranch, id, table.BranchRef, -1, -1, -1)}, base); err != nil {
			t.Fatal(err)
		}
		var body []byte
		if h, body, err = h.WithSnapshots([]table.Snapshot{s}, base); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), `"last-sequence-number"`) {
			t.Fatalf("format v1 metadata with a last-sequence-number:\n%s", body)
		}
		got, err := table.ParseMetadataBytes(body)
		if err != nil {
			t.Fatalf("snapshot %d: the appended metadata does not parse: %v\n%s", i, err, body)
		}
		for name, pair := range map[string][2]any{
			"version":      {got.Version(), 1},
			"snapshots":    {got.Snapshots(), want.Snapshots()},
			"snapshot-log": {slices.Collect(got.SnapshotLogs()), slices.Collect(want.SnapshotLogs())},
			"metadata-log": {slices.Collect(got.PreviousFiles()), slices.Collect(want.PreviousFiles())},
			"main":         {got.Ref(), want.Ref()},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("snapshot %d: %s\n got %+v\nwant %+v", i, name, pair[0], pair[1])
			}
		}
	}
}
