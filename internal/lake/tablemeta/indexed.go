package tablemeta

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Indexed is one version of a table's metadata (vN.metadata.json) in the form
// the ingest path needs: the file's top-level fields as JSON, an index of
// its snapshots (id, parent, batch id and where each one's JSON is), and the
// metadata without history (Write, DataWrite) for schemas, specs and
// properties. It does not hold every snapshot and summary as iceberg-go
// objects, and a commit of new snapshots (WithSnapshots) appends their JSON
// to the previous version's instead of rebuilding and re-encoding the whole
// history: memory and time per commit stay nearly independent of the
// table's age. The full iceberg-go metadata is parsed on demand (Metadata).
//
// An Indexed is immutable once built; Metadata caches its parse.
type Indexed struct {
	fields []field // top-level members, in file order

	snaps   []SnapRef      // every snapshot, in file order
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

// The snapshot summary properties the index reads (lake.SummaryBatchID,
// lake.SummarySourceSHA256 and lake.SummaryContentSHA256 are these).
const (
	// SummaryBatchID is the batch id of the landing file a snapshot loaded.
	SummaryBatchID = "timelake.batch-id"
	// SummarySourceSHA256 is the hex SHA-256 of the landing file's bytes.
	SummarySourceSHA256 = "timelake.source-sha256"
	// SummaryContentSHA256 is the hex SHA-256 of the landing file's
	// decompressed bytes.
	SummaryContentSHA256 = "timelake.content-sha256"
)

// SnapRef locates one snapshot object inside the "snapshots" member.
type SnapRef struct {
	start, end int
	ID         int64
	Parent     int64
	HasParent  bool
	Batch      string // timelake.batch-id; "" when none
	Content    string // the content hash of the batch's landing file; "" when unknown
	Timestamp  int64  // timestamp-ms
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

// Parse reads a vN.metadata.json. It parses the full metadata once as
// well (iceberg-go's validation, and the metadata callers may ask for),
// which the Indexed keeps until the next commit replaces it.
//
// Errors: the body is not valid table metadata (Iceberg spec, "Table
// Metadata Fields").
func Parse(body []byte) (*Indexed, error) {
	full, err := table.ParseMetadataBytes(body)
	if err != nil {
		return nil, err
	}
	h, err := Index(body)
	if err != nil {
		return nil, err
	}
	h.once.Do(func() { h.full = full })
	return h, nil
}

func Index(body []byte) (*Indexed, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("table metadata is not a JSON object")
	}
	h := &Indexed{current: -1}
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
func (h *Indexed) index() error {
	var err error
	if h.snaps, err = snapshotRefs(h.Get("snapshots")); err != nil {
		return fmt.Errorf("snapshots: %w", err)
	}
	h.byID = make(map[int64]int, len(h.snaps))
	for i, s := range h.snaps {
		h.byID[s.ID] = i
	}
	var cur *int64
	if raw := h.Get("current-snapshot-id"); raw != nil {
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
		if raw := h.Get(f.key); raw != nil {
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
		if id := h.snaps[i].Batch; id != "" {
			if _, ok := h.batches[id]; !ok {
				h.batches[id] = i
			}
			if c := h.snaps[i].Content; c != "" {
				if _, ok := h.contents[c]; !ok {
					h.contents[c] = i
				}
			}
		}
		next, ok := h.byID[h.snaps[i].Parent]
		if !h.snaps[i].HasParent || !ok {
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
func snapshotRefs(raw json.RawMessage) ([]SnapRef, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	var out []SnapRef
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
		r := SnapRef{start: start, end: end, ID: *ls.SnapshotID, Batch: ls.Summary.BatchID, Timestamp: ls.Timestamp,
			Content: cmp.Or(ls.Summary.ContentSHA256, ls.Summary.SourceSHA256)}
		if ls.Parent != nil {
			r.Parent, r.HasParent = *ls.Parent, true
		}
		out = append(out, r)
	}
	return out, nil
}

func (h *Indexed) Get(key string) json.RawMessage {
	for _, f := range h.fields {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// Body encodes the fields back into a metadata file.
func (h *Indexed) Body() []byte {
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
func (h *Indexed) withoutHistory() (table.Metadata, error) {
	w := &Indexed{}
	for _, f := range h.fields {
		if !historyKeys[f.key] {
			w.fields = append(w.fields, f)
		}
	}
	meta, err := table.ParseMetadataBytes(w.Body())
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

// Metadata returns the full iceberg-go metadata, parsed on first use.
func (h *Indexed) Metadata() (table.Metadata, error) {
	h.once.Do(func() { h.full, h.err = table.ParseMetadataBytes(h.Body()) })
	return h.full, h.err
}

// Snapshot parses snapshot i of Snaps.
func (h *Indexed) Snapshot(i int) (*table.Snapshot, error) {
	r := h.snaps[i]
	var s table.Snapshot
	if err := json.Unmarshal(h.Get("snapshots")[r.start:r.end], &s); err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", r.ID, err)
	}
	return &s, nil
}

// CurrentSnapshot returns the main branch's snapshot, nil for none.
func (h *Indexed) CurrentSnapshot() (*table.Snapshot, error) {
	if h.current < 0 {
		return nil, nil
	}
	return h.Snapshot(h.current)
}

// FindBatch returns the snapshot of the current ancestry holding batch id,
// nil if none does.
func (h *Indexed) FindBatch(id string) (*table.Snapshot, error) {
	i, ok := h.batches[id]
	if !ok {
		return nil, nil
	}
	return h.Snapshot(i)
}

// WithSnapshots returns the next version: snaps (each the parent of the
// next, the first a child of the current snapshot; sequence numbers after
// lastSeq) appended, the main branch and current-snapshot-id on the last
// one, its timestamp as last-updated-ms, one snapshot-log entry for it (the
// earlier ones were never current: iceberg-go and Java leave them out too),
// and baseLocation (this version's file) added to the metadata-log, which
// keeps the newest write.metadata.previous-versions-max entries. It returns
// the new Indexed and the file to write; h is unchanged.
func (h *Indexed) WithSnapshots(snaps []table.Snapshot, baseLocation string) (*Indexed, []byte, error) {
	if len(snaps) == 0 {
		return nil, nil, errors.New("no snapshots to add")
	}
	last := snaps[len(snaps)-1]
	next := &Indexed{fields: make([]field, len(h.fields)), current: len(h.snaps) + len(snaps) - 1,
		lastSeq: last.SequenceNumber, write: h.write, dataWrite: h.dataWrite}
	copy(next.fields, h.fields)

	// snapshots: the old array with the new objects before its "]".
	old := bytes.TrimRight(h.Get("snapshots"), " \t\r\n")
	if len(old) == 0 || string(old) == "null" {
		old = []byte("[]")
	}
	if old[len(old)-1] != ']' {
		return nil, nil, errors.New("snapshots is not a JSON array")
	}
	arr := make([]byte, 0, len(old)+len(snaps)*1024)
	arr = append(arr, old[:len(old)-1]...)
	next.snaps = make([]SnapRef, len(h.snaps), len(h.snaps)+len(snaps))
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
		r := SnapRef{start: len(arr), ID: s.SnapshotID, Timestamp: s.TimestampMs}
		if s.Summary != nil {
			r.Batch = s.Summary.Properties[SummaryBatchID]
			r.Content = cmp.Or(s.Summary.Properties[SummaryContentSHA256], s.Summary.Properties[SummarySourceSHA256])
		}
		arr = append(arr, enc...)
		r.end = len(arr)
		if s.ParentSnapshotID != nil {
			r.Parent, r.HasParent = *s.ParentSnapshotID, true
		}
		next.byID[s.SnapshotID] = len(next.snaps)
		if r.Batch != "" {
			next.batches[r.Batch] = len(next.snaps)
			if r.Content != "" {
				next.contents[r.Content] = len(next.snaps)
			}
		}
		next.snaps = append(next.snaps, r)
	}
	arr = append(arr, ']')
	next.set("snapshots", arr)

	var snapLog []json.RawMessage
	if err := unmarshalOptional(h.Get("snapshot-log"), &snapLog); err != nil {
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
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
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
	return next, next.Body(), nil
}

// logPrevious sets next's metadata-log: h's with baseLocation (h's own
// file) added, trimmed to the newest write.metadata.previous-versions-max
// entries (as iceberg-go's and Java's metadata builders do).
func (h *Indexed) logPrevious(next *Indexed, baseLocation string) error {
	var metaLog []table.MetadataLogEntry
	if err := unmarshalOptional(h.Get("metadata-log"), &metaLog); err != nil {
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
// snapshots (WithSnapshots does that): removing snapshots, moving the main
// branch back, setting properties. done adds h's own file to the metadata-log and returns the
// new version; h is unchanged.
type edit struct {
	h    *Indexed
	next *Indexed
}

func (h *Indexed) edit() *edit {
	next := &Indexed{fields: make([]field, len(h.fields))}
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
	raw := h.Get("snapshots")
	arr := make([]byte, 0, len(raw))
	arr = append(arr, '[')
	for _, r := range h.snaps {
		if ids[r.ID] {
			continue
		}
		if len(arr) > 1 {
			arr = append(arr, ',')
		}
		arr = append(arr, raw[r.start:r.end]...)
	}
	next.set("snapshots", append(arr, ']'))

	var snapLog []table.SnapshotLogEntry
	if err := unmarshalOptional(h.Get("snapshot-log"), &snapLog); err != nil {
		return fmt.Errorf("snapshot-log: %w", err)
	}
	kept := []table.SnapshotLogEntry{}
	for _, e := range snapLog {
		if !h.SnapshotIDTaken(e.SnapshotID) || ids[e.SnapshotID] {
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
		if err := unmarshalOptional(h.Get(key), &stats); err != nil || len(stats) == 0 {
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
func (h *Indexed) canRemove(ids map[int64]bool) error {
	if h.current >= 0 && ids[h.snaps[h.current].ID] {
		return fmt.Errorf("snapshot %d is current", h.snaps[h.current].ID)
	}
	var refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	}
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
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
	if err := h.CanRollBack(id); err != nil {
		return err
	}
	refs := map[string]map[string]json.RawMessage{}
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
		return fmt.Errorf("refs: %w", err)
	}
	main := refs[table.MainBranch]
	main["snapshot-id"] = json.RawMessage(strconv.FormatInt(id, 10))
	if err := next.setJSON("refs", refs); err != nil {
		return err
	}
	next.set("current-snapshot-id", []byte(strconv.FormatInt(id, 10)))
	var snapLog []json.RawMessage
	if err := unmarshalOptional(h.Get("snapshot-log"), &snapLog); err != nil {
		return fmt.Errorf("snapshot-log: %w", err)
	}
	entry, err := json.Marshal(table.SnapshotLogEntry{SnapshotID: id, TimestampMs: ms})
	if err != nil {
		return err
	}
	return next.setJSON("snapshot-log", append(snapLog, entry))
}

// CanRollBack refuses to move the main branch to id unless it is a branch
// and id an ancestor of its snapshot.
func (h *Indexed) CanRollBack(id int64) error {
	if h.current < 0 {
		return errors.New("the main branch has no snapshot")
	}
	if !h.isAncestor(id) {
		return fmt.Errorf("snapshot %d is not an ancestor of the main branch's snapshot %d", id, h.snaps[h.current].ID)
	}
	refs := map[string]map[string]json.RawMessage{}
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
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
func (h *Indexed) isAncestor(id int64) bool {
	seen := map[int]bool{}
	for i := h.current; i >= 0 && !seen[i]; {
		seen[i] = true
		r := h.snaps[i]
		if r.ID == id {
			return true
		}
		if !r.HasParent {
			return false
		}
		j, ok := h.byID[r.Parent]
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
	if err := unmarshalOptional(e.next.Get("properties"), &props); err != nil {
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
func (e *edit) done(baseLocation string, now int64) (*Indexed, []byte, error) {
	if err := e.h.logPrevious(e.next, baseLocation); err != nil {
		return nil, nil, err
	}
	e.next.set("last-updated-ms", []byte(strconv.FormatInt(max(now, e.h.lastUpdated), 10)))
	body := e.next.Body()
	indexed, err := Index(body)
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
func (h *Indexed) set(key string, value []byte) {
	for i := range h.fields {
		if h.fields[i].key == key {
			h.fields[i].value = value
			return
		}
	}
	h.fields = append(h.fields, field{key, value})
}

func (h *Indexed) setJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	h.set(key, b)
	return nil
}

// SequenceAfter is the sequence number of the nth snapshot added on top of
// h (1 the first): format v1 has none (0).
func (h *Indexed) SequenceAfter(n int) int64 {
	if h.write.Version() < 2 {
		return 0
	}
	return h.lastSeq + int64(n)
}

// SnapshotIDTaken reports whether id names a snapshot of this version.
func (h *Indexed) SnapshotIDTaken(id int64) bool {
	_, ok := h.byID[id]
	return ok
}

// Props returns the table properties.
func (h *Indexed) Props() iceberg.Properties { return h.write.Properties() }

// WithSchema returns h with sc added to its schemas (or an equal schema
// reused, as Iceberg's metadata builder does) and made current, and
// last-column-id raised to sc's highest field id: Iceberg's add-schema and
// set-current-schema updates, applied by iceberg-go's builder to the
// metadata without history, whose schemas, current-schema-id and
// last-column-id replace h's. The snapshot index is shared with h, which
// is unchanged.
func (h *Indexed) WithSchema(sc *iceberg.Schema) (*Indexed, error) {
	b, err := table.MetadataBuilderFromBase(h.write, "")
	if err != nil {
		return nil, err
	}
	if err := b.AddSchema(sc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	if err := b.SetCurrentSchemaID(-1); err != nil {
		return nil, fmt.Errorf("set current schema: %w", err)
	}
	meta, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	enc, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(enc, &top); err != nil {
		return nil, err
	}
	next := &Indexed{fields: slices.Clone(h.fields), snaps: h.snaps, byID: h.byID, batches: h.batches,
		contents: h.contents, current: h.current, lastSeq: h.lastSeq, lastUpdated: h.lastUpdated}
	for _, k := range []string{"schemas", "current-schema-id", "last-column-id"} {
		if top[k] == nil {
			return nil, fmt.Errorf("add schema: the metadata has no %s", k)
		}
		next.set(k, top[k])
	}
	if next.write, err = next.withoutHistory(); err != nil {
		return nil, err
	}
	if next.dataWrite, err = dataFileMetadata(next.write); err != nil {
		return nil, err
	}
	return next, nil
}

// FromMetadata indexes metadata the catalog's client parsed (and
// validated) already.
func FromMetadata(meta table.Metadata) (*Indexed, error) {
	body, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	h, err := Index(body)
	if err != nil {
		return nil, err
	}
	h.once.Do(func() { h.full = meta })
	return h, nil
}

// PreviousLocation is the last entry of a version's metadata-log: the
// version it was built on ("" when the log is empty).
func (h *Indexed) PreviousLocation() string {
	var log []table.MetadataLogEntry
	if unmarshalOptional(h.Get("metadata-log"), &log) != nil || len(log) == 0 {
		return ""
	}
	return log[len(log)-1].MetadataFile
}

// MainSnapshot is the main branch's snapshot id; -1 without one.
func (h *Indexed) MainSnapshot() int64 {
	if h.current < 0 {
		return -1
	}
	return h.snaps[h.current].ID
}

// Snaps are the snapshots of this version, in file order; a caller does
// not modify them.
func (h *Indexed) Snaps() []SnapRef { return h.snaps }

// ByID maps a snapshot id to its index in Snaps; a caller does not modify
// it.
func (h *Indexed) ByID() map[int64]int { return h.byID }

// Batches maps a batch id (timelake.batch-id) of the current snapshot's
// ancestry to the index in Snaps of its newest snapshot; a caller does not
// modify it.
func (h *Indexed) Batches() map[string]int { return h.batches }

// Contents maps a content hash (timelake.content-sha256, else
// timelake.source-sha256) of the current snapshot's ancestry to the index
// in Snaps of its newest snapshot; a caller does not modify it.
func (h *Indexed) Contents() map[string]int { return h.contents }

// Current is the index in Snaps of the current snapshot; -1 if none.
func (h *Indexed) Current() int { return h.current }

// LastSeq is the version's last-sequence-number.
func (h *Indexed) LastSeq() int64 { return h.lastSeq }

// LastUpdated is the version's last-updated-ms.
func (h *Indexed) LastUpdated() int64 { return h.lastUpdated }

// Write is the metadata without history (schemas, partition specs, sort
// orders, properties: withoutHistory).
func (h *Indexed) Write() table.Metadata { return h.write }

// DataWrite is Write with the unsorted order as its default sort order:
// what data files are written with (dataFileMetadata).
func (h *Indexed) DataWrite() table.Metadata { return h.dataWrite }

// CanRemove refuses to remove the snapshots ids when one of them is the
// current snapshot or one a branch or tag points at (what an expiry checks
// before it writes anything).
func (h *Indexed) CanRemove(ids []int64) error { return h.canRemove(idSet(ids)) }

// WithLastUpdated returns body, a new table's metadata, with
// last-updated-ms set to ms (milliseconds); body as it is when it is not
// table metadata.
func WithLastUpdated(body []byte, ms int64) []byte {
	h, err := Index(body)
	if err != nil {
		return body
	}
	h.set("last-updated-ms", []byte(strconv.FormatInt(ms, 10)))
	return h.Body()
}
