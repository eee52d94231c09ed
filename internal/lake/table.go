package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// Table is one loaded version of a table. Commit and Refresh move it to the
// newest version. Prepare, FindBatch and the getters may be called
// concurrently with one Commit or Refresh; writers in other processes (or
// other Table values) are serialised by the commit protocol.
type Table struct {
	lake *Lake
	name TableName

	mu       sync.RWMutex       // guards the fields below
	meta     *tablemeta.Indexed // the loaded version: its fields, snapshot index and write metadata
	version  versionRef
	contract Contract
	arrowSc  *arrow.Schema

	headDropped bool // metadata/timelake-head removed after our first commit

	// The manifest list of the last snapshot this Table committed and the
	// manifests it names: the next staged commit's parent manifests,
	// without reading them back. Used by Commit only.
	lastList      string
	lastManifests []iceberg.ManifestFile

	// The deferred-deletes records this Table knows of (deferred.go), by
	// key: when their files may go. Guarded by deferredMu.
	deferredMu       sync.Mutex
	deferredRecords  map[string]time.Time
	deferredListedAt time.Time // the last listing of them; zero: never
}

func (t *Table) set(h *tablemeta.Indexed, version versionRef) error {
	props, schema := h.Write().Properties(), h.Write().CurrentSchema()
	if err := checkFormatVersion(props); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	c, err := contractFromProps(props, schema)
	if err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return fmt.Errorf("table %s: schema: %w", t.name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta, t.version, t.contract, t.arrowSc = h, version, c, sc
	return nil
}

func (t *Table) loaded() (*tablemeta.Indexed, versionRef) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.meta, t.version
}

// tableView is a consistent read of a Table's state.
type tableView struct {
	meta     *tablemeta.Indexed
	arrowSc  *arrow.Schema
	contract Contract
	iceberg  *table.Table // for writing data files (table.WriteRecords) only
}

func (t *Table) view() tableView {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return tableView{meta: t.meta, arrowSc: t.arrowSc, contract: t.contract,
		// The metadata without history: iceberg-go copies every snapshot
		// (and its summary) of the metadata it is given on each call; and
		// without a sort order, since the rows come sorted
		// (dataFileMetadata).
		iceberg: table.New(t.ident(), t.meta.DataWrite(), t.version.Location, t.fsF, readOnly{})}
}

// Name returns the table's name.
func (t *Table) Name() TableName { return t.name }

// Metadata returns the loaded Iceberg metadata, parsed on first use after
// a commit (the commit path itself keeps only an index of the snapshots).
// It panics if metadata this process wrote does not parse: metadata read
// from storage was parsed when it was loaded.
func (t *Table) Metadata() table.Metadata {
	h, _ := t.loaded()
	return t.metadataOf(h)
}

func (t *Table) metadataOf(h *tablemeta.Indexed) table.Metadata {
	meta, err := h.Metadata()
	if err != nil {
		panic(fmt.Sprintf("internal error: table %s: metadata written by this process does not parse: %v", t.name, err))
	}
	return meta
}

// CurrentSnapshotID returns the main branch's snapshot id; false when the
// table has no snapshot.
func (t *Table) CurrentSnapshotID() (int64, bool) {
	h, _ := t.loaded()
	if h.Current() < 0 {
		return 0, false
	}
	return h.Snaps()[h.Current()].ID, true
}

// Version returns N of the loaded vN.metadata.json (0 when a REST
// catalog names its metadata files without a number).
func (t *Table) Version() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version.N
}

// Location returns the table location URI.
func (t *Table) Location() string {
	h, _ := t.loaded()
	return h.Write().Location()
}

// MetadataLocation returns the URI of the loaded version's metadata file:
// what a reader that takes a metadata file (DuckDB's iceberg_scan,
// pyiceberg's StaticTable) is given.
func (t *Table) MetadataLocation() string {
	_, v := t.loaded()
	return v.Location
}

// Contract returns the table's time-series contract.
func (t *Table) Contract() Contract {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.contract
}

// ArrowSchema returns the current schema as Arrow, with Iceberg field ids in
// each field's PARQUET:field_id metadata. Records given to Append must have
// this schema.
func (t *Table) ArrowSchema() *arrow.Schema {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.arrowSc
}

// Iceberg returns an iceberg-go table for reads (scans, inspection). Writes
// must go through this package (Append or Prepare and Commit, Expire,
// RollbackTo, ...): its catalog refuses commits.
func (t *Table) Iceberg() *table.Table {
	h, v := t.loaded()
	return table.New(t.ident(), t.metadataOf(h), v.Location, t.fsF, readOnly{})
}

func (t *Table) ident() table.Identifier { return table.Identifier{t.name.Namespace, t.name.Name} }

// readOnly is the catalog of the iceberg-go tables handed out for reads:
// every change of a table goes through the commit protocol (commit.go).
type readOnly struct{}

var errReadOnly = errors.New("internal: iceberg-go tables of package lake are read-only; commit through lake")

func (readOnly) LoadTable(context.Context, table.Identifier) (*table.Table, error) {
	return nil, errReadOnly
}

func (readOnly) CommitTable(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error) {
	return nil, "", errReadOnly
}

// Refresh reloads the newest version; it never goes back to a version
// older than the one this Table holds.
func (t *Table) Refresh(ctx context.Context) error {
	h, v, err := t.lake.loadLatest(ctx, t.name)
	if err != nil {
		return err
	}
	// A commit of this Table that landed while the newest version was
	// being read is newer than what was read: keep it (unless the table
	// was made anew meanwhile: another table uuid).
	if ch, cur := t.loaded(); catalog.Newer(cur, ch, v, h) && ch.Write().TableUUID() == h.Write().TableUUID() {
		return nil
	}
	return t.set(h, v)
}

// FindBatch answers "which snapshot holds batch id X" from the loaded
// version: the newest snapshot in the current snapshot's ancestry whose
// summary has timelake.batch-id = id. Snapshots outside the ancestry (after
// a rollback) do not count (docs/table-format.md, "Snapshots and batch ids").
func (t *Table) FindBatch(id string) (BatchInfo, bool) {
	s := t.findSnapshot(id)
	if s == nil {
		return BatchInfo{}, false
	}
	return batchInfo(id, s), true
}

// Batches returns every batch in the current ancestry, newest first.
func (t *Table) Batches() []BatchInfo { return BatchesOf(t.Metadata()) }

// ancestry returns the current snapshot and its ancestors, newest first.
// It copies the snapshot list once: iceberg-go's SnapshotByID clones a
// snapshot (and its summary) per call.
func ancestry(meta table.Metadata) []table.Snapshot {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	all := meta.Snapshots()
	byID := make(map[int64]int, len(all))
	for i := range all {
		byID[all[i].SnapshotID] = i
	}
	var out []table.Snapshot
	seen := map[int64]bool{}
	for id, ok := cur.SnapshotID, true; ok && !seen[id]; {
		i, found := byID[id]
		if !found {
			break
		}
		seen[id] = true
		out = append(out, all[i])
		if all[i].ParentSnapshotID == nil {
			break
		}
		id = *all[i].ParentSnapshotID
	}
	return out
}

// findSnapshot returns the snapshot of the current ancestry holding batch
// id, from the loaded version's index. It panics if the snapshot's JSON
// does not parse: a version read from storage was parsed whole when it was
// loaded, and the snapshots this process adds are encoded by iceberg-go.
func (t *Table) findSnapshot(id string) *table.Snapshot {
	h, _ := t.loaded()
	s, err := h.FindBatch(id)
	if err != nil {
		panic(fmt.Sprintf("internal error: table %s: %v", t.name, err))
	}
	return s
}

func batchIndex(meta table.Metadata) map[string]*table.Snapshot {
	idx := map[string]*table.Snapshot{}
	anc := ancestry(meta)
	for i := range anc {
		s := &anc[i]
		if s.Summary == nil {
			continue
		}
		if id, ok := s.Summary.Properties[SummaryBatchID]; ok {
			if _, seen := idx[id]; !seen { // newest first
				idx[id] = s
			}
		}
	}
	return idx
}

func batchInfo(id string, s *table.Snapshot) BatchInfo {
	b := BatchInfo{BatchID: id, SnapshotID: s.SnapshotID, CommittedAt: time.UnixMilli(s.TimestampMs).UTC()}
	if s.Summary != nil {
		b.Summary = map[string]string(s.Summary.Properties)
		b.Rows = summaryInt(s.Summary.Properties, "added-records")
		b.DataFiles = summaryInt(s.Summary.Properties, "added-data-files")
		b.Bytes = summaryInt(s.Summary.Properties, "added-files-size")
	}
	return b
}

func summaryInt(p map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(p[k], 10, 64)
	return v
}

// unmarshalOptional decodes raw, a member of a version's metadata, into v;
// a member the metadata lacks (nil) leaves v as it is.
func unmarshalOptional(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}
