package lake

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	iofs "io/fs"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/datafile"
	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// ErrRequiredNull is returned when a required (NOT NULL) column holds a
// null: iceberg-go would silently write 0 there (docs/iceberg-go.md).
var ErrRequiredNull = errors.New("null in required column")

// AppendOptions tune Append.
type AppendOptions struct {
	// Summary holds extra snapshot summary properties, e.g. the landing
	// object's size and checksum (SummarySourceSize, SummarySourceSHA256).
	Summary map[string]string
	// BatchRows is the record batch size used when writing; 0 means 65,536.
	BatchRows int
	CommitOptions
}

// AppendResult reports one append.
type AppendResult struct {
	BatchID    string
	Duplicate  bool  // the batch id was already committed: nothing written
	Rows       int64 // rows committed; 0 for a duplicate
	SnapshotID int64 // new snapshot, or the one holding the duplicate batch
	DataFiles  int
	Bytes      int64 // bytes of data files added
	Version    int   // N of the metadata version after the append
	Attempts   int   // commit attempts (1 unless races were lost)
	// Existing describes the earlier commit of a duplicate batch.
	Existing *BatchInfo
	// SchemaChanges lists what the batch's commit changed in the table's
	// schema (`added "battery" double`, `widened "v" int -> long`); empty when
	// nothing, or when an earlier batch of the commit (or another writer)
	// made the same change.
	SchemaChanges []string
	// SchemaConflict, wrapping ErrSchemaChanged, says the batch was not
	// committed (its data files are deleted): another writer changed the
	// schema so that the field ids its files use are taken or mean another
	// column. Decode and prepare its file again against the newest schema.
	SchemaConflict error
}

// Prepared is a batch whose data files are written but not committed. Pass
// it to Commit, or to Discard to delete its files.
type Prepared struct {
	BatchID string
	Rows    int64
	// Replaced counts the rows left out under timelake.read-dedup: a
	// later row of the batch has their series key and time.
	Replaced int64
	// Repeated counts the rows of a Write whose series key and time an
	// earlier row of the same Write has (datafile's
	// SortedRows.RepeatedRows), left out under timelake.read-dedup and
	// loaded like the others otherwise; 0 for a table without a series
	// key.
	Repeated int64
	Bytes    int64              // bytes of the data files
	files    []iceberg.DataFile // none for a batch without rows
	summary  iceberg.Properties
	// change is the schema the data files were written with when the
	// batch changes the table's schema; nil when they use the table's
	// schema at Prepare.
	change *schemaChange
}

// DataFiles returns the number of data files written.
func (p *Prepared) DataFiles() int { return len(p.files) }

// Append writes recs (each with ArrowSchema()) as one snapshot whose summary
// carries timelake.batch-id = batchID: Prepare then Commit. recs are not
// released. See Prepare and Commit for the rules and errors.
func (t *Table) Append(ctx context.Context, batchID string, recs []arrow.RecordBatch, opts AppendOptions) (AppendResult, error) {
	if b, ok, err := t.FindLoaded(ctx, batchID); err != nil {
		return AppendResult{BatchID: batchID}, err
	} else if ok && batchID != "" {
		return AppendResult{BatchID: batchID, Duplicate: true, SnapshotID: b.SnapshotID, Version: t.Version(), Existing: &b}, nil
	}
	p, err := t.Prepare(ctx, batchID, recs, opts.Summary, opts.BatchRows)
	if err != nil {
		return AppendResult{BatchID: batchID}, err
	}
	res, err := t.Commit(ctx, []*Prepared{p}, opts.CommitOptions)
	if err != nil {
		return AppendResult{BatchID: batchID}, err
	}
	return res[0], nil
}

// Prepare validates recs against the table schema (ErrRequiredNull for a
// null in a NOT NULL column, which iceberg-go would write as 0), sorts them
// by (partition, series key, time) as docs/table-format.md asks, and writes
// them as zstd Parquet data files, one or more per partition, without
// committing. recs are not released. A batch without rows (a gateway's
// header-only file) writes no data file: its snapshot adds nothing but
// records the batch id as loaded.
//
// recs normally have ArrowSchema(). They may also differ from it as a
// decoder's output for an older or an evolved schema does (all of them the
// same schema): columns are matched by field id, else by name; a nullable
// column they lack is written as null, a column the table holds in a wider
// type is cast to it; and columns the table lacks (without a field id) and
// wider types the Iceberg spec allows the table's to become (int -> long,
// float -> double, wider decimals) change the schema: the data files are
// written with the changed schema, which Commit commits with the batch
// (evolve.go). Whether a file may change the schema is its decoder's
// decision.
//
// Prepare may run concurrently with other Prepare calls and with Commit.
// It is NewBatchWriter, one Write and Prepared.
func (t *Table) Prepare(ctx context.Context, batchID string, recs []arrow.RecordBatch, summary map[string]string, batchRows int) (*Prepared, error) {
	w, err := t.NewBatchWriter(batchID, summary, batchRows)
	if err != nil {
		return nil, err
	}
	if err := w.Write(ctx, recs); err != nil {
		w.Discard(ctx)
		return nil, err
	}
	return w.Prepared(), nil
}

// BatchWriter writes the data files of one batch in parts, for a file too
// large to sort and write at once: each Write sorts its records and writes
// them as data files of their own (Prepare's rules), all against the table
// as NewBatchWriter saw it, so that every part uses the same schema and
// field ids. The parts commit as one snapshot (Prepared, then Commit). A
// BatchWriter is used by one goroutine.
type BatchWriter struct {
	t         *Table
	v         tableView
	batchID   string
	summary   map[string]string
	batchRows int
	sc        *arrow.Schema // the records' schema, from the first Write with records
	plan      *conformPlan  // how they are conformed to v; nil when they have its schema
	change    *schemaChange
	files     []iceberg.DataFile
	rows      int64
	replaced  int64 // rows left out under timelake.read-dedup
	repeated  int64 // Prepared.Repeated
	size      int64
	// partitions are the partition ordinals of the rows written
	// (admitPartitions).
	partitions map[int64]struct{}
	// partial is set while the Writes hold part of the batch's rows, more
	// coming (SetPartial).
	partial bool
}

// SetPartial says whether the next Write's records are the batch's rows so
// far, more following (a file decoded in pieces): a refusal then says so.
func (w *BatchWriter) SetPartial(partial bool) { w.partial = partial }

// admitPartitions refuses rows that would bring the batch's partitions
// past the table's PropMaxFilePartitions (PartitionsError), before they
// are written; else it counts theirs.
func (w *BatchWriter) admitPartitions(ordinals []int64) error {
	max := maxFilePartitions(w.v.meta.Props())
	var fresh []int64
	for _, o := range ordinals {
		if _, ok := w.partitions[o]; !ok {
			fresh = append(fresh, o)
		}
	}
	if n := len(w.partitions) + len(fresh); n > max {
		return &PartitionsError{Partitions: n, Max: max, SoFar: w.partial || len(w.partitions) > 0}
	}
	if w.partitions == nil {
		w.partitions = map[int64]struct{}{}
	}
	for _, o := range fresh {
		w.partitions[o] = struct{}{}
	}
	return nil
}

// NewBatchWriter starts a batch (batchID must not be empty); batchRows is
// the record batch size used when writing, 0 for 65,536.
func (t *Table) NewBatchWriter(batchID string, summary map[string]string, batchRows int) (*BatchWriter, error) {
	if batchID == "" {
		return nil, errors.New("append: empty batch id")
	}
	v := t.view()
	if v.contract.TimeColumn == "" {
		return nil, fmt.Errorf("append %s to %s: the table has no time column (set %s)", batchID, t.name, PropTimeColumn)
	}
	return &BatchWriter{t: t, v: v, batchID: batchID, summary: summary, batchRows: batchRows}, nil
}

// Write validates, sorts and writes recs (not released) as data files of
// the batch. Every Write's records have the schema of the first one's. On
// error the files of this Write are removed; those of earlier ones stay
// until Discard.
func (w *BatchWriter) Write(ctx context.Context, recs []arrow.RecordBatch) error {
	t := w.t
	if len(recs) == 0 {
		return nil
	}
	if w.sc == nil {
		w.sc = recs[0].Schema()
		plan, c, err := planBatch(w.v.meta.Write().CurrentSchema(), w.v.arrowSc, w.v.meta.Write().LastColumnID(), w.sc)
		if err != nil {
			return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
		}
		if c != nil {
			if err := checkPartitionNames(w.v.meta.Write().PartitionSpecs(), c.schema); err != nil {
				return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
			}
			if w.v, err = t.evolvedView(w.v, c); err != nil {
				return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
			}
			w.change = c
		}
		w.plan = plan
	}
	if w.plan != nil {
		conformed := make([]arrow.RecordBatch, 0, len(recs))
		defer func() {
			for _, r := range conformed {
				r.Release()
			}
		}()
		for _, r := range recs {
			if !r.Schema().Equal(w.sc) {
				return fmt.Errorf("append %s to %s: record schema %s does not match the first record's %s", w.batchID, t.name, r.Schema(), w.sc)
			}
			cr, err := w.plan.apply(ctx, memory.DefaultAllocator, r)
			if err != nil {
				return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
			}
			conformed = append(conformed, cr)
		}
		recs = conformed
	}
	var rows int64
	for _, r := range recs {
		if !r.Schema().Equal(w.v.arrowSc) {
			return fmt.Errorf("append %s to %s: record schema %s does not match table schema %s", w.batchID, t.name, r.Schema(), w.v.arrowSc)
		}
		if err := checkRequired(r); err != nil {
			return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
		}
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil
	}
	files, size, repeated, err := t.writeDataFiles(ctx, w.v, recs, w.batchRows, w.admitPartitions)
	if err != nil {
		return fmt.Errorf("append %s to %s: %w", w.batchID, t.name, err)
	}
	// Under timelake.read-dedup the files hold one row of each key (of
	// this Write's records).
	replaced := rows
	for _, df := range files {
		replaced -= df.Count()
	}
	w.files = append(w.files, files...)
	w.rows += rows - replaced
	w.replaced += replaced
	w.repeated += repeated
	w.size += size
	return nil
}

// Prepared returns the batch of every Write so far, to Commit (or Discard).
func (w *BatchWriter) Prepared() *Prepared {
	props := iceberg.Properties{SummaryBatchID: w.batchID}
	if newest, ok := maxRowTime(w.files, w.v.meta.Write().CurrentSchema(), w.v.contract.TimeColumn); ok {
		props[SummaryMaxRowTime] = newest.Format(time.RFC3339Nano)
	}
	for k, val := range w.summary {
		props[k] = val
	}
	if w.replaced > 0 {
		props[SummaryReplacedRows] = strconv.FormatInt(w.replaced, 10)
	}
	return &Prepared{BatchID: w.batchID, Rows: w.rows, Replaced: w.replaced, Repeated: w.repeated, Bytes: w.size, files: w.files, summary: props, change: w.change}
}

// Discard deletes the data files written so far; the writer is done with.
func (w *BatchWriter) Discard(ctx context.Context) {
	w.t.removeFiles(ctx, dataFilePaths(w.files))
	w.files, w.rows, w.replaced, w.repeated, w.size = nil, 0, 0, 0, 0
}

// maxRowTime is the newest value of the time column among files, from
// their upper bounds (Iceberg spec, "Binary single-value serialization":
// a timestamp is 8 bytes, little-endian microseconds); false when no file
// has one (no rows, a time column of another type).
func maxRowTime(files []iceberg.DataFile, sc *iceberg.Schema, timeColumn string) (time.Time, bool) {
	f, ok := sc.FindFieldByName(timeColumn)
	if !ok {
		return time.Time{}, false
	}
	switch f.Type.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
	default:
		return time.Time{}, false
	}
	var newest int64
	found := false
	for _, df := range files {
		b := df.UpperBoundValues()[f.ID]
		if len(b) != 8 {
			continue
		}
		if us := int64(binary.LittleEndian.Uint64(b)); !found || us > newest {
			newest, found = us, true
		}
	}
	return time.UnixMicro(newest).UTC(), found
}

// Discard deletes the data files of batches that will not be committed.
func (t *Table) Discard(ctx context.Context, ps ...*Prepared) {
	var paths []string
	for _, p := range ps {
		paths = append(paths, dataFilePaths(p.files)...)
	}
	t.removeFiles(ctx, paths)
}

// checkRequired rejects nulls in non-nullable fields.
func checkRequired(r arrow.RecordBatch) error {
	for i, f := range r.Schema().Fields() {
		if !f.Nullable && r.Column(i).NullN() > 0 {
			return fmt.Errorf("column %q: %w (%d nulls)", f.Name, ErrRequiredNull, r.Column(i).NullN())
		}
	}
	return nil
}

// writeDataFiles sorts recs and writes them as Parquet data files, one or
// more per partition, without committing. Large appends, and appends that
// span several partitions, are cut into ranges of whole partitions written
// concurrently (datafile.WritePlan, datafile.WriteRanges); the files come
// back in sorted order either way. It returns the files, their bytes, and
// the rows of recs whose series key and time an earlier row of recs has
// (datafile.SortedRows.RepeatedRows). admit, when not nil, is given the
// partitions of the rows (their ordinals) before any file is written; its
// error is returned.
func (t *Table) writeDataFiles(ctx context.Context, v tableView, recs []arrow.RecordBatch, batchRows int, admit func(ordinals []int64) error) ([]iceberg.DataFile, int64, int64, error) {
	sorted := datafile.NewSortedRows
	if readDedup(v.meta.Props()) {
		sorted = datafile.NewNewestRows // one row of each key (dedupe.go)
	}
	l, err := newDataFileLayout(v)
	if err != nil {
		return nil, 0, 0, err
	}
	var opts []datafile.SortOption
	if l != nil { // timelake's writer: string columns of few values as dictionaries
		opts = append(opts, datafile.WithDictionaries(l))
	}
	rows, err := sorted(memory.DefaultAllocator, v.arrowSc, recs, v.contract.order(), opts...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Release()
	if admit != nil {
		if err := admit(rows.PartitionOrdinals()); err != nil {
			return nil, 0, 0, err
		}
	}
	// Sorted by partition first, so each clustered writer keeps one
	// partition open at a time: memory stays bounded however many days an
	// append spans. The sorted batches are taken as the writer asks for
	// them, at most datafile.BufferBatches ahead of it, and the writer
	// releases each one.
	write := func(ctx context.Context, start, end int) iter.Seq2[iceberg.DataFile, error] {
		return t.writeLaidOut(ctx, v, l, rows.Batches(ctx, start, end, batchRows))
	}
	splits, writers := datafile.WritePlan(rows.Len(), rows.Partitions())
	files, err := datafile.WriteRanges(ctx, rows.Split(splits), writers, write)
	if err != nil {
		t.removeFiles(ctx, dataFilePaths(files))
		return nil, 0, 0, fmt.Errorf("write data files: %w", err)
	}
	var size int64
	for _, df := range files {
		size += df.FileSizeBytes()
	}
	return files, size, rows.RepeatedRows(), nil
}

func dataFilePaths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

// Commit commits prepared batches, one snapshot each (in order), in a single
// metadata write, through the commit protocol (Table.commit). Every attempt
// first checks each batch id against the ancestry of the newest version: a
// batch that is already there commits nothing (Duplicate, Rows 0; its data
// files are deleted), and one found under a snapshot of this Commit (a write
// whose response was lost), in the ancestry or in the load history (that
// snapshot expired before the outcome was learnt), counts as committed. Files written by attempts
// that did not win are deleted. A batch whose data files were written with
// a changed schema (Prepare) commits that change in the same metadata
// write, merged into the newest schema; one whose field ids another writer
// took is not committed (AppendResult.SchemaConflict, its data files
// deleted) while the others are. Results are in the order of ps. Commit
// must not run concurrently with another Commit on the same Table.
//
// Errors: I/O errors, and table.ErrCommitFailed after MaxAttempts lost
// races; on error no result is returned and, when the outcome is known, the
// data files of the batches not committed are deleted.
func (t *Table) Commit(ctx context.Context, ps []*Prepared, opts CommitOptions) ([]AppendResult, error) {
	m := &appendMutation{t: t, ps: ps, results: make(map[string]*AppendResult, len(ps)),
		attempts: map[int]*appendAttempt{}, ours: map[int64]bool{}}
	res, err := t.commit(ctx, m, opts)
	if err != nil {
		return nil, fmt.Errorf("commit to %s: %w", t.name, err)
	}
	if a := m.attempts[res.Attempt]; res.Committed && a != nil {
		for _, p := range a.pending {
			s := t.findSnapshot(p.BatchID)
			if s == nil {
				return nil, fmt.Errorf("commit to %s: internal: batch %s missing after commit", t.name, p.BatchID)
			}
			m.results[p.BatchID] = m.settle(p, s)
			m.results[p.BatchID].SchemaChanges = a.changes[p.BatchID]
		}
		if a.lastList != "" {
			t.lastList, t.lastManifests = a.lastList, a.lastManifests
		}
	}
	out := make([]AppendResult, len(ps))
	for i, p := range ps {
		r := m.results[p.BatchID]
		if r == nil {
			return nil, fmt.Errorf("commit to %s: internal: batch %s not settled", t.name, p.BatchID)
		}
		r.Version, r.Attempts = res.Version, res.Attempts
		out[i] = *r
	}
	return out, nil
}

// appendMutation is the mutation of Commit: append the prepared batches not
// yet in the ancestry, one snapshot each, staged by the snapshot producer
// (snapshots.go) on the tables it can write (canStage).
type appendMutation struct {
	t       *Table
	ps      []*Prepared
	results map[string]*AppendResult // batches settled so far

	attempts map[int]*appendAttempt
	ours     map[int64]bool // snapshot ids staged by any attempt

	// Snapshot ids and the batches' own manifests are fixed for the whole
	// Commit and reused by later attempts.
	snapIDs  map[string]int64                // batch id -> snapshot id
	own      map[ownKey]iceberg.ManifestFile // a batch's manifest of its ADDED files of one partition spec
	producer *snapshotProducer               // writes the manifests and manifest lists
}

// appendAttempt is what one attempt staged.
type appendAttempt struct {
	pending []*Prepared
	// files the attempt's version references that the attempt wrote: its
	// manifest lists and the manifests they name
	refs          []string
	lastList      string // the last snapshot's manifest list
	lastManifests []iceberg.ManifestFile
	// changes are the schema changes each pending batch makes, by batch
	// id (evolve)
	changes map[string][]string
}

func (m *appendMutation) build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	// Settle the batches already in the ancestry: committed since the last
	// load by another writer, or by one of our own attempts.
	var pending []*Prepared
	for _, p := range m.ps {
		if m.results[p.BatchID] != nil {
			continue
		}
		s, err := base.FindBatch(p.BatchID)
		if err != nil {
			return nil, err
		}
		if s != nil {
			m.results[p.BatchID] = m.settle(p, s)
			continue
		}
		pending = append(pending, p)
	}
	// And those the load history remembers (their snapshots expired).
	if len(pending) > 0 && base.Props()[PropLoadHistory] != "" {
		hist, err := t.lake.historyOf(ctx, t.name, base.Props())
		if err != nil {
			return nil, err
		}
		still := pending[:0:0]
		for _, p := range pending {
			r, ok, err := hist.Find(ctx, p.BatchID)
			if err != nil {
				return nil, err
			}
			if ok && m.ours[r.SnapshotID] {
				// Committed by one of our attempts whose outcome was
				// not learnt before its snapshot expired: its data
				// files are the table's.
				m.results[p.BatchID] = ownResult(p, r.SnapshotID)
				continue
			}
			if ok {
				b := BatchInfoOf(r)
				m.results[p.BatchID] = &AppendResult{BatchID: p.BatchID, SnapshotID: r.SnapshotID, Duplicate: true, Existing: &b}
				continue
			}
			still = append(still, p)
		}
		pending = still
	}
	// The schema changes of the batches, merged into the newest schema.
	a := &appendAttempt{}
	staged, pending, err := m.evolve(a, base, pending)
	if err != nil {
		return nil, err
	}
	if len(pending) == 0 {
		return nil, errNothingToCommit
	}
	a.pending = pending
	m.attempts[attempt] = a
	if err := t.canStage(base, pending); err != nil {
		return nil, err
	}
	if staged != base && (base.Write().Version() != 2 || !currentSpecOnly(base, pending)) {
		return nil, fmt.Errorf("table %s: a schema change is committed only on format-version 2 tables at the location %s gives them, written with the current partition spec", t.name, t.lake.URI())
	}
	// Write the snapshots' manifests and lists concurrently.
	snaps, err := t.stage(ctx, m, a, staged, pending, attempt)
	if err != nil {
		return nil, fmt.Errorf("stage snapshots: %w", err)
	}
	var schema *iceberg.Schema
	if staged != base {
		schema = staged.Write().CurrentSchema()
	}
	return tablemeta.AddSnapshots(schema, snaps...), nil
}

// evolve merges the schema changes of the pending batches into base's
// current schema, in order (mergeSchema). It returns the version to stage
// the snapshots on (base itself when no batch changes the schema, else base
// with the merged schema made current) and the batches that fit it; those
// that do not are settled with AppendResult.SchemaConflict. The changes
// each batch makes are recorded in a for its result.
func (m *appendMutation) evolve(a *appendAttempt, base *tablemeta.Indexed, pending []*Prepared) (*tablemeta.Indexed, []*Prepared, error) {
	a.changes = map[string][]string{}
	cur := base.Write().CurrentSchema()
	last := base.Write().LastColumnID()
	evolved := false
	fit := pending[:0:0]
	for _, p := range pending {
		if p.change == nil {
			fit = append(fit, p)
			continue
		}
		next, nextLast, changes, err := mergeSchema(cur, last, p.change)
		if err != nil {
			m.results[p.BatchID] = &AppendResult{BatchID: p.BatchID, SchemaConflict: fmt.Errorf("batch %s: %w", p.BatchID, err)}
			continue
		}
		if len(changes) > 0 {
			cur, last, evolved = next, nextLast, true
			a.changes[p.BatchID] = changes
		}
		fit = append(fit, p)
	}
	if !evolved || len(fit) == 0 {
		return base, fit, nil
	}
	staged, err := base.WithSchema(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("schema change: %w", err)
	}
	return staged, fit, nil
}

// settle reports a batch found in the ancestry in snapshot s: committed by
// one of our attempts, or a duplicate of another commit.
func (m *appendMutation) settle(p *Prepared, s *table.Snapshot) *AppendResult {
	if m.ours[s.SnapshotID] {
		return ownResult(p, s.SnapshotID)
	}
	b := batchInfo(p.BatchID, s)
	return &AppendResult{BatchID: p.BatchID, SnapshotID: s.SnapshotID, Duplicate: true, Existing: &b}
}

// ownResult is the result of batch p, committed in snapshot id by one of
// our attempts.
func ownResult(p *Prepared, id int64) *AppendResult {
	return &AppendResult{BatchID: p.BatchID, SnapshotID: id, Rows: p.Rows, DataFiles: len(p.files), Bytes: p.Bytes}
}

// cleanUp deletes what the losing attempts wrote (manifest lists and their
// own manifests) and the data files of the batches not committed by us.
// With an unknown outcome every file is kept: it may be referenced (orphan
// file removal takes what turns out not to be).
func (m *appendMutation) cleanUp(ctx context.Context, won int, unknown bool) {
	t := m.t
	if won == 0 && !unknown {
		// Batches found under our own snapshot ids although no attempt is
		// known to have won (its version was already deleted when it was
		// checked): which attempt's files they use is not known.
		for _, r := range m.results {
			unknown = unknown || (!r.Duplicate && r.SchemaConflict == nil)
		}
	}
	if unknown {
		if ctx.Err() != nil {
			// A stopped run: the next run recognises the commit or not
			// by its batch ids, and orphan removal takes the files.
			t.lake.log.Debug("commit outcome unknown after the stop: keeping written files", "table", t.name.String())
			return
		}
		t.lake.log.Warn("commit outcome unknown: keeping written files", "table", t.name.String())
		return
	}
	var refs []string
	if a := m.attempts[won]; a != nil {
		refs = a.refs
	}
	paths := without(m.producer.writtenFiles(), refs)
	for _, p := range m.ps {
		if r := m.results[p.BatchID]; r == nil || r.Duplicate || r.SchemaConflict != nil {
			if a := m.attempts[won]; a == nil || !slices.Contains(a.pending, p) {
				paths = append(paths, dataFilePaths(p.files)...)
			}
		}
	}
	t.removeFiles(ctx, paths)
}

// afterCommit does the best-effort chores after a successful commit: the
// catalog's (catalog.Catalog.Committed), and with a catalog that keeps the
// version hint, dropping a Timelake head cache of the metadata folder.
func (t *Table) afterCommit(ctx context.Context) {
	h, v := t.loaded()
	t.lake.cat.Committed(ctx, t.name, h, v)
	if t.lake.cat.Hinted() {
		t.dropHeadCache(ctx)
	}
}

// dropHeadCache deletes a Timelake head cache (metadata/timelake-head),
// which would now be stale, so its readers list. Once per Table: timelake
// itself never writes one.
func (t *Table) dropHeadCache(ctx context.Context) {
	if t.headDropped {
		return
	}
	if err := t.lake.store.Delete(ctx, catalog.MetadataPrefix(t.name)+"timelake-head"); err != nil {
		t.lake.log.Warn("stale timelake-head not removed", "table", t.name.String(), "err", err)
	} else {
		t.headDropped = true
	}
}

// without returns the paths of written that are not in keep: what the
// attempts of a commit wrote that the winning attempt's version does not
// reference.
func without(written, keep []string) []string {
	set := make(map[string]bool, len(keep))
	for _, k := range keep {
		set[k] = true
	}
	var out []string
	for _, p := range written {
		if !set[p] {
			out = append(out, p)
		}
	}
	return out
}

// isNotExist reports a missing file (local or object store).
func isNotExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

// removeFiles deletes the files a commit wrote and did not commit, in
// batches (deleteFiles). A stopped run (ctx cancelled: SIGINT, SIGTERM)
// leaves them to orphan removal, which deletes them like any other
// unreferenced file, instead of warning that their deletes were cancelled.
func (t *Table) removeFiles(ctx context.Context, paths []string) {
	if len(paths) == 0 {
		return
	}
	n, err := t.deleteFiles(ctx, paths) // nothing is sent once ctx is done
	switch {
	case err != nil && ctx.Err() != nil:
		t.lake.log.Debug("run stopped: files written and not committed are left to orphan removal",
			"table", t.name.String(), "files", len(paths)-n)
	case err != nil:
		t.lake.log.Warn("orphan files not removed", "table", t.name.String(), "files", len(paths)-n, "err", err)
	}
}

// fileKey returns the store key of the file at uri, which must lie inside
// the table's location (tableRel: else ErrOutsideTable, and nothing is
// deleted). Files are deleted through the lake's store, where a missing
// file is no error (S3 DeleteObject semantics), and many go in one
// DeleteObjects request (storage.DeleteKeys).
func (t *Table) fileKey(uri string) (string, error) {
	rel, err := t.lake.tableRel(t.name, uri)
	if err != nil {
		return "", &iofs.PathError{Op: "remove", Path: uri, Err: err}
	}
	return catalog.TablePrefix(t.name) + rel, nil
}

// checkPartitionNames refuses a schema with a column named as a partition
// field of specs that is not that column's identity (ErrPartitionName).
func checkPartitionNames(specs []iceberg.PartitionSpec, sc *iceberg.Schema) error {
	for _, spec := range specs {
		for _, f := range spec.Fields() {
			col, ok := sc.FindFieldByName(f.Name)
			if !ok {
				continue
			}
			if _, identity := f.Transform.(iceberg.IdentityTransform); identity && len(f.SourceIDs) == 1 && f.SourceIDs[0] == col.ID {
				continue
			}
			src := ""
			if len(f.SourceIDs) == 1 {
				if s, ok := sc.FindColumnName(f.SourceIDs[0]); ok {
					src = " of " + s
				}
			}
			return fmt.Errorf("new column %q: %w (%s%s)", f.Name, ErrPartitionName, f.Transform, src)
		}
	}
	return nil
}
