package lake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// indexedMetadata is one version of a table's metadata (vN.metadata.json) in the form
// the ingest path needs: the file's top-level fields as JSON, an index of
// its snapshots (id, parent, batch id and where each one's JSON is), and the
// metadata without history (withoutHistory) for schemas, specs and
// properties. It does not hold every snapshot and summary as iceberg-go
// objects, and a commit of new snapshots (withSnapshots) appends their JSON
// to the previous version's instead of rebuilding and re-encoding the whole
// history: memory and time per commit stay nearly independent of the
// table's age. The full iceberg-go metadata is parsed on demand (metadata).
//
// A indexedMetadata is immutable once built; metadata caches its parse.
type indexedMetadata struct {
	fields []field // top-level members, in file order

	snaps   []snapRef      // every snapshot, in file order
	byID    map[int64]int  // snapshot id -> index in snaps
	batches map[string]int // batch id -> index in snaps: current ancestry, newest wins
	// content hash (timelake.content-sha256, else timelake.source-sha256)
	// -> index in snaps: current ancestry, newest wins
	contents map[string]int
	current  int // index in snaps of the current snapshot; -1 if none

	lastSeq     int64 // last-sequence-number
	lastUpdated int64 // last-updated-ms
	write       table.Metadata
	// dataWrite is write with the unsorted order as default sort order:
	// what data files are written with (dataFileMetadata).
	dataWrite table.Metadata

	once sync.Once
	full table.Metadata
	err  error
}

type field struct {
	key   string
	value json.RawMessage
}

// snapRef locates one snapshot object inside the "snapshots" member.
type snapRef struct {
	start, end int
	id         int64
	parent     int64
	hasParent  bool
	batch      string // timelake.batch-id; "" when none
	content    string // the content hash of the batch's landing file; "" when unknown
	timestamp  int64  // timestamp-ms
}

// lightSnapshot is what the index reads of each snapshot: encoding/json
// skips the other members without allocating them.
type lightSnapshot struct {
	SnapshotID *int64 `json:"snapshot-id"`
	Parent     *int64 `json:"parent-snapshot-id"`
	Timestamp  int64  `json:"timestamp-ms"`
	Summary    struct {
		BatchID       string `json:"timelake.batch-id"`
		SourceSHA256  string `json:"timelake.source-sha256"`
		ContentSHA256 string `json:"timelake.content-sha256"`
	} `json:"summary"`
}

// parseHead reads a vN.metadata.json. It parses the full metadata once as
// well (iceberg-go's validation, and the metadata callers may ask for),
// which the indexedMetadata keeps until the next commit replaces it.
//
// Errors: the body is not valid table metadata (Iceberg spec, "Table
// Metadata Fields").
func parseHead(body []byte) (*indexedMetadata, error) {
	full, err := table.ParseMetadataBytes(body)
	if err != nil {
		return nil, err
	}
	h, err := indexHead(body)
	if err != nil {
		return nil, err
	}
	h.once.Do(func() { h.full = full })
	return h, nil
}

func indexHead(body []byte) (*indexedMetadata, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("table metadata is not a JSON object")
	}
	h := &indexedMetadata{current: -1}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("field %s: %w", key, err)
		}
		h.fields = append(h.fields, field{key, v})
	}
	if err := h.index(); err != nil {
		return nil, err
	}
	return h, nil
}

// index fills snaps, byID, batches, current, lastSeq, lastUpdated and write
// from fields.
func (h *indexedMetadata) index() error {
	var err error
	if h.snaps, err = snapshotRefs(h.get("snapshots")); err != nil {
		return fmt.Errorf("snapshots: %w", err)
	}
	h.byID = make(map[int64]int, len(h.snaps))
	for i, s := range h.snaps {
		h.byID[s.id] = i
	}
	var cur *int64
	if raw := h.get("current-snapshot-id"); raw != nil {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return fmt.Errorf("current-snapshot-id: %w", err)
		}
	}
	if cur != nil {
		if i, ok := h.byID[*cur]; ok {
			h.current = i
		}
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"last-sequence-number", &h.lastSeq}, {"last-updated-ms", &h.lastUpdated}} {
		if raw := h.get(f.key); raw != nil {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
		}
	}
	h.batches = map[string]int{}
	h.contents = map[string]int{}
	seen := map[int]bool{}
	for i := h.current; i >= 0 && !seen[i]; {
		seen[i] = true
		if id := h.snaps[i].batch; id != "" {
			if _, ok := h.batches[id]; !ok {
				h.batches[id] = i
			}
			if c := h.snaps[i].content; c != "" {
				if _, ok := h.contents[c]; !ok {
					h.contents[c] = i
				}
			}
		}
		next, ok := h.byID[h.snaps[i].parent]
		if !h.snaps[i].hasParent || !ok {
			break
		}
		i = next
	}
	if h.write, err = h.withoutHistory(); err != nil {
		return err
	}
	h.dataWrite, err = dataFileMetadata(h.write)
	return err
}

// snapshotRefs indexes the members of a "snapshots" array.
func snapshotRefs(raw json.RawMessage) ([]snapRef, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	var out []snapRef
	for dec.More() {
		start := int(dec.InputOffset())
		var ls lightSnapshot
		if err := dec.Decode(&ls); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		for start < end && raw[start] != '{' { // the separator and spaces before the object
			start++
		}
		if ls.SnapshotID == nil {
			return nil, errors.New("a snapshot has no snapshot-id")
		}
		r := snapRef{start: start, end: end, id: *ls.SnapshotID, batch: ls.Summary.BatchID, timestamp: ls.Timestamp,
			content: cmp.Or(ls.Summary.ContentSHA256, ls.Summary.SourceSHA256)}
		if ls.Parent != nil {
			r.parent, r.hasParent = *ls.Parent, true
		}
		out = append(out, r)
	}
	return out, nil
}

func (h *indexedMetadata) get(key string) json.RawMessage {
	for _, f := range h.fields {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// body encodes the fields back into a metadata file.
func (h *indexedMetadata) body() []byte {
	n := 2
	for _, f := range h.fields {
		n += len(f.key) + len(f.value) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, f := range h.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.key)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, '}')
}

// historyKeys are the table metadata fields (Iceberg spec, "Table
// Metadata Fields") that record snapshots rather than how data files are
// written.
var historyKeys = map[string]bool{"current-snapshot-id": true, "snapshots": true, "snapshot-log": true,
	"metadata-log": true, "refs": true, "statistics": true, "partition-statistics": true}

// withoutHistory returns the metadata with no snapshots, refs, logs or
// statistics: the same format version, uuid, location, schemas, partition
// specs, sort orders and properties, so data files written with it are
// those the full metadata would give.
func (h *indexedMetadata) withoutHistory() (table.Metadata, error) {
	w := &indexedMetadata{}
	for _, f := range h.fields {
		if !historyKeys[f.key] {
			w.fields = append(w.fields, f)
		}
	}
	meta, err := table.ParseMetadataBytes(w.body())
	if err != nil {
		return nil, fmt.Errorf("metadata without history: %w", err)
	}
	return meta, nil
}

// dataFileMetadata returns meta with the unsorted order as its default
// sort order, for iceberg-go's data file writer (table.WriteRecords). Every
// write of rows (appends, compaction) orders them first, all of them at
// once, by (partition, series key, time) (datafile.SortedRows), which is the table's
// sort order within each partition on the tables timelake creates; given a
// sort order, iceberg-go's writer would sort every batch again, batch by
// batch (it never merges batches), which leaves such rows as they are and
// costs a sort and a copy of every column. Data files name no sort order
// either way (iceberg-go sets none). The metadata itself keeps its sort
// order: only what the writer is given differs.
func dataFileMetadata(meta table.Metadata) (table.Metadata, error) {
	if meta.DefaultSortOrder() == table.UnsortedSortOrderID {
		return meta, nil
	}
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err == nil {
		unsorted := table.UnsortedSortOrder
		err = b.AddSortOrder(&unsorted)
	}
	if err == nil {
		err = b.SetDefaultSortOrderID(table.UnsortedSortOrderID)
	}
	var out table.Metadata
	if err == nil {
		out, err = b.Build()
	}
	if err != nil {
		return nil, fmt.Errorf("metadata for data files: %w", err)
	}
	return out, nil
}

// metadata returns the full iceberg-go metadata, parsed on first use.
func (h *indexedMetadata) metadata() (table.Metadata, error) {
	h.once.Do(func() { h.full, h.err = table.ParseMetadataBytes(h.body()) })
	return h.full, h.err
}

// snapshot parses snapshot i of snaps.
func (h *indexedMetadata) snapshot(i int) (*table.Snapshot, error) {
	r := h.snaps[i]
	var s table.Snapshot
	if err := json.Unmarshal(h.get("snapshots")[r.start:r.end], &s); err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", r.id, err)
	}
	return &s, nil
}

// currentSnapshot returns the main branch's snapshot, nil for none.
func (h *indexedMetadata) currentSnapshot() (*table.Snapshot, error) {
	if h.current < 0 {
		return nil, nil
	}
	return h.snapshot(h.current)
}

// findBatch returns the snapshot of the current ancestry holding batch id,
// nil if none does.
func (h *indexedMetadata) findBatch(id string) (*table.Snapshot, error) {
	i, ok := h.batches[id]
	if !ok {
		return nil, nil
	}
	return h.snapshot(i)
}

// withSnapshots returns the next version: snaps (each the parent of the
// next, the first a child of the current snapshot; sequence numbers after
// lastSeq) appended, the main branch and current-snapshot-id on the last
// one, its timestamp as last-updated-ms, one snapshot-log entry for it (the
// earlier ones were never current: iceberg-go and Java leave them out too),
// and baseLocation (this version's file) added to the metadata-log, which
// keeps the newest write.metadata.previous-versions-max entries. It returns
// the new indexedMetadata and the file to write; h is unchanged.
func (h *indexedMetadata) withSnapshots(snaps []table.Snapshot, baseLocation string) (*indexedMetadata, []byte, error) {
	if len(snaps) == 0 {
		return nil, nil, errors.New("no snapshots to add")
	}
	last := snaps[len(snaps)-1]
	next := &indexedMetadata{fields: make([]field, len(h.fields)), current: len(h.snaps) + len(snaps) - 1,
		lastSeq: last.SequenceNumber, write: h.write, dataWrite: h.dataWrite}
	copy(next.fields, h.fields)

	// snapshots: the old array with the new objects before its "]".
	old := bytes.TrimRight(h.get("snapshots"), " \t\r\n")
	if len(old) == 0 || string(old) == "null" {
		old = []byte("[]")
	}
	if old[len(old)-1] != ']' {
		return nil, nil, errors.New("snapshots is not a JSON array")
	}
	arr := make([]byte, 0, len(old)+len(snaps)*1024)
	arr = append(arr, old[:len(old)-1]...)
	next.snaps = make([]snapRef, len(h.snaps), len(h.snaps)+len(snaps))
	copy(next.snaps, h.snaps)
	next.byID = maps.Clone(h.byID)
	next.batches = maps.Clone(h.batches)
	next.contents = maps.Clone(h.contents)
	for i := range snaps {
		s := &snaps[i]
		enc, err := json.Marshal(s)
		if err != nil {
			return nil, nil, fmt.Errorf("encode snapshot %d: %w", s.SnapshotID, err)
		}
		if len(next.snaps) > 0 {
			arr = append(arr, ',')
		}
		r := snapRef{start: len(arr), id: s.SnapshotID, timestamp: s.TimestampMs}
		if s.Summary != nil {
			r.batch = s.Summary.Properties[SummaryBatchID]
			r.content = cmp.Or(s.Summary.Properties[SummaryContentSHA256], s.Summary.Properties[SummarySourceSHA256])
		}
		arr = append(arr, enc...)
		r.end = len(arr)
		if s.ParentSnapshotID != nil {
			r.parent, r.hasParent = *s.ParentSnapshotID, true
		}
		next.byID[s.SnapshotID] = len(next.snaps)
		if r.batch != "" {
			next.batches[r.batch] = len(next.snaps)
			if r.content != "" {
				next.contents[r.content] = len(next.snaps)
			}
		}
		next.snaps = append(next.snaps, r)
	}
	arr = append(arr, ']')
	next.set("snapshots", arr)

	var snapLog []json.RawMessage
	if err := unmarshalOptional(h.get("snapshot-log"), &snapLog); err != nil {
		return nil, nil, fmt.Errorf("snapshot-log: %w", err)
	}
	entry, err := json.Marshal(table.SnapshotLogEntry{SnapshotID: last.SnapshotID, TimestampMs: last.TimestampMs})
	if err != nil {
		return nil, nil, err
	}
	if err := next.setJSON("snapshot-log", append(snapLog, entry)); err != nil {
		return nil, nil, err
	}

	if err := h.logPrevious(next, baseLocation); err != nil {
		return nil, nil, err
	}

	// refs: main moves to the last snapshot; its other settings and the
	// other refs stay.
	refs := map[string]map[string]json.RawMessage{}
	if err := unmarshalOptional(h.get("refs"), &refs); err != nil {
		return nil, nil, fmt.Errorf("refs: %w", err)
	}
	if refs == nil {
		refs = map[string]map[string]json.RawMessage{}
	}
	main := refs[table.MainBranch]
	if main == nil {
		main = map[string]json.RawMessage{}
	}
	main["snapshot-id"] = json.RawMessage(strconv.FormatInt(last.SnapshotID, 10))
	main["type"] = json.RawMessage(`"branch"`)
	refs[table.MainBranch] = main
	if err := next.setJSON("refs", refs); err != nil {
		return nil, nil, err
	}
	next.set("current-snapshot-id", []byte(strconv.FormatInt(last.SnapshotID, 10)))
	if h.write.Version() >= 2 {
		next.set("last-sequence-number", []byte(strconv.FormatInt(last.SequenceNumber, 10)))
	}
	next.lastUpdated = max(last.TimestampMs, h.lastUpdated)
	next.set("last-updated-ms", []byte(strconv.FormatInt(next.lastUpdated, 10)))
	return next, next.body(), nil
}

// logPrevious sets next's metadata-log: h's with baseLocation (h's own
// file) added, trimmed to the newest write.metadata.previous-versions-max
// entries (as iceberg-go's and Java's metadata builders do).
func (h *indexedMetadata) logPrevious(next *indexedMetadata, baseLocation string) error {
	var metaLog []table.MetadataLogEntry
	if err := unmarshalOptional(h.get("metadata-log"), &metaLog); err != nil {
		return fmt.Errorf("metadata-log: %w", err)
	}
	metaLog = append(metaLog, table.MetadataLogEntry{MetadataFile: baseLocation, TimestampMs: h.lastUpdated})
	keep := max(1, h.write.Properties().GetInt(table.MetadataPreviousVersionsMaxKey, table.MetadataPreviousVersionsMaxDefault))
	if len(metaLog) > keep {
		metaLog = metaLog[len(metaLog)-keep:]
	}
	return next.setJSON("metadata-log", metaLog)
}

// edit is the next version being built from h by changes that do not add
// snapshots (withSnapshots does that): removing snapshots, moving the main
// branch back, setting properties. done adds h's own file to the metadata-log and returns the
// new version; h is unchanged.
type edit struct {
	h    *indexedMetadata
	next *indexedMetadata
}

func (h *indexedMetadata) edit() *edit {
	next := &indexedMetadata{fields: make([]field, len(h.fields))}
	copy(next.fields, h.fields)
	return &edit{h: h, next: next}
}

// removeSnapshots removes the snapshots ids (Iceberg's remove-snapshots
// update, as iceberg-go's builder applies it): they leave snapshots, their
// statistics leave statistics and partition-statistics, and the
// snapshot-log keeps only the entries after the last removed snapshot. Ids
// this version does not have are ignored. It refuses to remove the current
// snapshot or one a branch or tag points at.
func (e *edit) removeSnapshots(ids map[int64]bool) error {
	h, next := e.h, e.next
	if err := h.canRemove(ids); err != nil {
		return err
	}
	raw := h.get("snapshots")
	arr := make([]byte, 0, len(raw))
	arr = append(arr, '[')
	for _, r := range h.snaps {
		if ids[r.id] {
			continue
		}
		if len(arr) > 1 {
			arr = append(arr, ',')
		}
		arr = append(arr, raw[r.start:r.end]...)
	}
	next.set("snapshots", append(arr, ']'))

	var snapLog []table.SnapshotLogEntry
	if err := unmarshalOptional(h.get("snapshot-log"), &snapLog); err != nil {
		return fmt.Errorf("snapshot-log: %w", err)
	}
	kept := []table.SnapshotLogEntry{}
	for _, e := range snapLog {
		if !h.snapshotIDTaken(e.SnapshotID) || ids[e.SnapshotID] {
			kept = kept[:0] // the log stays contiguous
			continue
		}
		kept = append(kept, e)
	}
	if err := next.setJSON("snapshot-log", kept); err != nil {
		return err
	}
	for _, key := range []string{"statistics", "partition-statistics"} {
		var stats []json.RawMessage
		if err := unmarshalOptional(h.get(key), &stats); err != nil || len(stats) == 0 {
			continue
		}
		keep := []json.RawMessage{}
		for _, st := range stats {
			var id struct {
				SnapshotID int64 `json:"snapshot-id"`
			}
			if json.Unmarshal(st, &id) == nil && ids[id.SnapshotID] {
				continue
			}
			keep = append(keep, st)
		}
		if err := next.setJSON(key, keep); err != nil {
			return err
		}
	}
	return nil
}

// canRemove refuses to remove the current snapshot or one a branch or tag
// points at.
func (h *indexedMetadata) canRemove(ids map[int64]bool) error {
	if h.current >= 0 && ids[h.snaps[h.current].id] {
		return fmt.Errorf("snapshot %d is current", h.snaps[h.current].id)
	}
	var refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	}
	if err := unmarshalOptional(h.get("refs"), &refs); err != nil {
		return fmt.Errorf("refs: %w", err)
	}
	for name, r := range refs {
		if ids[r.SnapshotID] {
			return fmt.Errorf("snapshot %d is the head of %s", r.SnapshotID, name)
		}
	}
	return nil
}

// rollBack points the main branch at snapshot id, which must be an
// ancestor of the current snapshot (Iceberg's set-snapshot-ref update on
// main, as a rollback makes it): the ref keeps its other settings,
// current-snapshot-id follows it, and the snapshot-log gains an entry for
// it at ms (milliseconds; the new last-updated-ms, edit.done).
func (e *edit) rollBack(id, ms int64) error {
	h, next := e.h, e.next
	if err := h.canRollBack(id); err != nil {
		return err
	}
	refs := map[string]map[string]json.RawMessage{}
	if err := unmarshalOptional(h.get("refs"), &refs); err != nil {
		return fmt.Errorf("refs: %w", err)
	}
	main := refs[table.MainBranch]
	main["snapshot-id"] = json.RawMessage(strconv.FormatInt(id, 10))
	if err := next.setJSON("refs", refs); err != nil {
		return err
	}
	next.set("current-snapshot-id", []byte(strconv.FormatInt(id, 10)))
	var snapLog []json.RawMessage
	if err := unmarshalOptional(h.get("snapshot-log"), &snapLog); err != nil {
		return fmt.Errorf("snapshot-log: %w", err)
	}
	entry, err := json.Marshal(table.SnapshotLogEntry{SnapshotID: id, TimestampMs: ms})
	if err != nil {
		return err
	}
	return next.setJSON("snapshot-log", append(snapLog, entry))
}

// canRollBack refuses to move the main branch to id unless it is a branch
// and id an ancestor of its snapshot.
func (h *indexedMetadata) canRollBack(id int64) error {
	if h.current < 0 {
		return errors.New("the main branch has no snapshot")
	}
	if !h.isAncestor(id) {
		return fmt.Errorf("snapshot %d is not an ancestor of the main branch's snapshot %d", id, h.snaps[h.current].id)
	}
	refs := map[string]map[string]json.RawMessage{}
	if err := unmarshalOptional(h.get("refs"), &refs); err != nil {
		return fmt.Errorf("refs: %w", err)
	}
	main := refs[table.MainBranch]
	if main == nil {
		return errors.New("the main branch does not exist")
	}
	if typ := main["type"]; typ != nil && string(typ) != `"branch"` {
		return fmt.Errorf("ref main is a %s, not a branch", typ)
	}
	return nil
}

// isAncestor reports whether snapshot id is the current snapshot or one of
// its ancestors.
func (h *indexedMetadata) isAncestor(id int64) bool {
	seen := map[int]bool{}
	for i := h.current; i >= 0 && !seen[i]; {
		seen[i] = true
		r := h.snaps[i]
		if r.id == id {
			return true
		}
		if !r.hasParent {
			return false
		}
		j, ok := h.byID[r.parent]
		if !ok {
			return false
		}
		i = j
	}
	return false
}

// setProperties sets and removes table properties (Iceberg's
// set-properties and remove-properties updates); a key in both is set.
func (e *edit) setProperties(set map[string]string, unset []string) error {
	props := map[string]string{}
	if err := unmarshalOptional(e.next.get("properties"), &props); err != nil {
		return fmt.Errorf("properties: %w", err)
	}
	if props == nil {
		props = map[string]string{}
	}
	for _, k := range unset {
		delete(props, k)
	}
	maps.Copy(props, set)
	return e.next.setJSON("properties", props)
}

// done adds baseLocation (h's own file) to the metadata-log, sets
// last-updated-ms to now (milliseconds) unless that is earlier, and returns
// the new version and its encoding.
func (e *edit) done(baseLocation string, now int64) (*indexedMetadata, []byte, error) {
	if err := e.h.logPrevious(e.next, baseLocation); err != nil {
		return nil, nil, err
	}
	e.next.set("last-updated-ms", []byte(strconv.FormatInt(max(now, e.h.lastUpdated), 10)))
	body := e.next.body()
	indexed, err := indexHead(body)
	if err != nil {
		return nil, nil, err
	}
	return indexed, body, nil
}

func unmarshalOptional(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// set replaces (or appends) a top-level field.
func (h *indexedMetadata) set(key string, value []byte) {
	for i := range h.fields {
		if h.fields[i].key == key {
			h.fields[i].value = value
			return
		}
	}
	h.fields = append(h.fields, field{key, value})
}

func (h *indexedMetadata) setJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	h.set(key, b)
	return nil
}

// sequenceAfter is the sequence number of the nth snapshot added on top of
// h (1 the first): format v1 has none (0).
func (h *indexedMetadata) sequenceAfter(n int) int64 {
	if h.write.Version() < 2 {
		return 0
	}
	return h.lastSeq + int64(n)
}

// snapshotIDTaken reports whether id names a snapshot of this version.
func (h *indexedMetadata) snapshotIDTaken(id int64) bool {
	_, ok := h.byID[id]
	return ok
}

// props returns the table properties.
func (h *indexedMetadata) props() iceberg.Properties { return h.write.Properties() }
