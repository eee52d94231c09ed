package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
	iofs "io/fs"

	"github.com/timelake/timelake/internal/storage"
)

// ErrEmptyBatch is returned when an append has no rows and the table
// cannot take a snapshot without data files (a table that Commit writes
// through iceberg-go's transaction, see canStage).
var ErrEmptyBatch = errors.New("no rows to append")

// ErrRequiredNull is returned when a required (NOT NULL) column holds a
// null: iceberg-go would silently write 0 there (iceberg-go-notes.md).
var ErrRequiredNull = errors.New("null in required column")

// CommitRetryBase is the first backoff between commit attempts after a lost
// race; it doubles per attempt up to CommitRetryMax. Tests may lower it.
var (
	CommitRetryBase = 25 * time.Millisecond
	CommitRetryMax  = 2 * time.Second
)

// AppendOptions tune Append.
type AppendOptions struct {
	// Summary holds extra snapshot summary properties, e.g. the landing
	// object's size and checksum (SummarySourceSize, SummarySourceSHA256).
	Summary map[string]string
	// BatchRows is the record batch size used when writing; 0 means 65,536.
	BatchRows int
	CommitOptions
}

// CommitOptions tune Commit.
type CommitOptions struct {
	// MaxAttempts bounds commit attempts after lost races; 0 means 20.
	MaxAttempts int
	// BeforeCommit, when set, runs before each commit attempt (fault
	// injection in tests).
	BeforeCommit func(attempt int) error
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
}

// Prepared is a batch whose data files are written but not committed. Pass
// it to Commit, or to Discard to delete its files.
type Prepared struct {
	BatchID string
	Rows    int64
	Bytes   int64 // bytes of the data files
	files   []iceberg.DataFile
	summary iceberg.Properties
}

// DataFiles returns the number of data files written.
func (p *Prepared) DataFiles() int { return len(p.files) }

// Append writes recs (each with ArrowSchema()) as one snapshot whose summary
// carries timelake.batch-id = batchID: Prepare then Commit. recs are not
// released. See Prepare and Commit for the rules and errors.
func (t *Table) Append(ctx context.Context, batchID string, recs []arrow.RecordBatch, opts AppendOptions) (AppendResult, error) {
	if b, ok := t.FindBatch(batchID); ok && batchID != "" {
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
// by (partition, series key, time) as timelake-format.md asks, and writes
// them as zstd Parquet data files, one or more per partition, without
// committing. A batch without rows writes no file: its snapshot will carry
// the batch id and add nothing (ErrEmptyBatch where the table cannot take
// such a snapshot). recs are not released.
// Prepare may run concurrently with other Prepare calls and with Commit.
func (t *Table) Prepare(ctx context.Context, batchID string, recs []arrow.RecordBatch, summary map[string]string, batchRows int) (*Prepared, error) {
	if batchID == "" {
		return nil, errors.New("append: empty batch id")
	}
	v := t.view()
	var rows int64
	for _, r := range recs {
		if !r.Schema().Equal(v.arrowSc) {
			return nil, fmt.Errorf("append %s to %s: record schema %s does not match table schema %s", batchID, t.name, r.Schema(), v.arrowSc)
		}
		if err := checkRequired(r); err != nil {
			return nil, fmt.Errorf("append %s to %s: %w", batchID, t.name, err)
		}
		rows += r.NumRows()
	}
	if v.contract.TimeColumn == "" {
		return nil, fmt.Errorf("append %s to %s: the table has no time column (set %s)", batchID, t.name, PropTimeColumn)
	}
	if rows == 0 {
		// A batch without rows (a gateway with nothing to report) is still
		// recorded: a snapshot with no data files carrying its batch id.
		if h, _ := t.loaded(); !t.canStage(h, nil) {
			return nil, fmt.Errorf("append %s to %s: %w", batchID, t.name, ErrEmptyBatch)
		}
		props := iceberg.Properties{SummaryBatchID: batchID}
		maps.Copy(props, summary)
		return &Prepared{BatchID: batchID, summary: props}, nil
	}
	files, size, err := t.writeDataFiles(ctx, v, recs, batchRows)
	if err != nil {
		return nil, fmt.Errorf("append %s to %s: %w", batchID, t.name, err)
	}
	props := iceberg.Properties{SummaryBatchID: batchID}
	for k, val := range summary {
		props[k] = val
	}
	return &Prepared{BatchID: batchID, Rows: rows, Bytes: size, files: files, summary: props}, nil
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
// more per partition, without committing. Large appends are cut into ranges
// of whole partitions written concurrently (writeSplits, writeRanges); the
// files come back in sorted order either way.
func (t *Table) writeDataFiles(ctx context.Context, v tableView, recs []arrow.RecordBatch, batchRows int) ([]iceberg.DataFile, int64, error) {
	rows, err := newSortedRows(memory.DefaultAllocator, v.arrowSc, recs,
		v.contract.TimeColumn, v.contract.SeriesKey, v.contract.Chunk)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Release()
	// Sorted by partition first, so each clustered writer keeps one
	// partition open at a time: memory stays bounded however many days an
	// append spans. The sorted batches are taken as the writer asks for
	// them, at most writeBufferBatches ahead of it, and WriteRecords
	// releases each one.
	write := func(ctx context.Context, start, end int) iter.Seq2[iceberg.DataFile, error] {
		return table.WriteRecords(ctx, v.iceberg, v.arrowSc, rows.batches(ctx, start, end, batchRows),
			table.WithClusteredWrite(), table.WithRecordBatchBufferSize(writeBufferBatches))
	}
	files, err := writeRanges(ctx, rows.split(writeSplits(rows.Len())), write)
	if err != nil {
		t.removeFiles(ctx, dataFilePaths(files))
		return nil, 0, fmt.Errorf("write data files: %w", err)
	}
	var size int64
	for _, df := range files {
		size += df.FileSizeBytes()
	}
	return files, size, nil
}

func dataFilePaths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

// Commit commits prepared batches, one snapshot each (in order), in a single
// metadata write: the conditional create of the next vN.metadata.json. On a
// lost race it reloads and retries with backoff; every attempt first checks
// each batch id against the ancestry of the newest version, and a batch that
// is already there commits nothing (Duplicate, Rows 0; its files are
// deleted). A batch found there under a snapshot of one of our own attempts
// (a write whose response was lost) counts as committed. Files written by
// attempts that did not win are deleted. Results are in the order of ps.
// Commit must not run concurrently with another Commit on the same Table.
//
// Errors: I/O errors, and table.ErrCommitFailed after MaxAttempts lost
// races; on error no result is returned and, when the outcome is known, the
// data files of the batches not committed are deleted.
func (t *Table) Commit(ctx context.Context, ps []*Prepared, opts CommitOptions) ([]AppendResult, error) {
	c := &committer{lake: t.lake, name: t.name, batches: map[string]bool{}, committed: map[int64]bool{}}
	results := make(map[string]*AppendResult, len(ps))
	err := t.commitLoop(ctx, c, ps, opts, results)
	t.cleanup(ctx, c, ps, err, results)
	if err != nil {
		return nil, fmt.Errorf("commit to %s: %w", t.name, err)
	}
	out := make([]AppendResult, len(ps))
	for i, p := range ps {
		out[i] = *results[p.BatchID]
	}
	return out, nil
}

// commitLoop commits the batches not yet settled in results, reloading and
// retrying after lost races.
func (t *Table) commitLoop(ctx context.Context, c *committer, ps []*Prepared, opts CommitOptions, results map[string]*AppendResult) error {
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 20
	}
	var lastErr error
	retry := false
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if retry {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
			if err := t.Refresh(ctx); err != nil {
				return err
			}
		}
		// Settle the batches already in the ancestry: committed since the
		// last load by another writer, or by one of our own attempts whose
		// response was lost (a retried PUT then reads 412 although it
		// succeeded).
		version := t.Version()
		var pending []*Prepared
		for _, p := range ps {
			if results[p.BatchID] != nil {
				continue
			}
			if s := t.findSnapshot(p.BatchID); s != nil {
				results[p.BatchID] = t.settle(c, p, s, version, attempt)
				continue
			}
			pending = append(pending, p)
		}
		if len(pending) == 0 {
			return nil
		}
		clear(c.batches)
		for _, p := range pending {
			c.batches[p.BatchID] = true
		}
		if opts.BeforeCommit != nil {
			if err := opts.BeforeCommit(attempt); err != nil {
				return err
			}
		}
		var err error
		if h, _ := t.loaded(); t.canStage(h, pending) {
			// Write the snapshots' manifests and lists concurrently, then
			// commit them in one metadata write.
			c.fast = true
			snaps, parent, serr := t.stage(ctx, c, h, pending, attempt)
			if serr != nil {
				return fmt.Errorf("stage snapshots: %w", serr)
			}
			err = c.commitStaged(ctx, h.write.TableUUID(), parent, snaps)
		} else {
			txn := t.iceberg(c).NewTransaction()
			for _, p := range pending {
				if err := txn.AddDataFiles(ctx, p.files, p.summary, table.WithoutDuplicateCheck()); err != nil {
					return fmt.Errorf("stage snapshot of %s: %w", p.BatchID, err)
				}
			}
			_, err = txn.Commit(ctx)
		}
		if err == nil {
			if err := t.set(c.committedHead, c.committedVersion); err != nil {
				return err
			}
			if c.fast {
				t.lastList, t.lastManifests = c.lastList, c.lastManifests
			}
			for _, p := range pending {
				s := t.findSnapshot(p.BatchID)
				if s == nil {
					return fmt.Errorf("internal: batch %s missing after commit", p.BatchID)
				}
				results[p.BatchID] = t.settle(c, p, s, c.committedVersion, attempt)
			}
			t.afterCommit(ctx)
			return nil
		}
		lastErr, retry = err, true
		var dup *batchCommittedError
		switch {
		case errors.As(err, &dup):
			// Settle the found batches at the top of the loop, then retry
			// the others at once on the newer version.
			if err := t.set(dup.head, dup.version); err != nil {
				return err
			}
			retry = false
		case errors.Is(err, table.ErrCommitFailed):
		default:
			// Unknown outcome (e.g. the PUT's response was lost): reload and
			// let the batch-id check decide.
			c.unknown = true
			if ctx.Err() != nil {
				return err
			}
		}
	}
	return fmt.Errorf("gave up after %d commit attempts: %w", maxAttempts, lastErr)
}

// settle reports a batch found in the ancestry in snapshot s: committed by
// one of our attempts, or a duplicate of another commit.
func (t *Table) settle(c *committer, p *Prepared, s *table.Snapshot, version, attempts int) *AppendResult {
	r := &AppendResult{BatchID: p.BatchID, SnapshotID: s.SnapshotID, Version: version, Attempts: attempts}
	if c.ours(s.SnapshotID) {
		c.committed[s.SnapshotID] = true
		r.Rows, r.DataFiles, r.Bytes = p.Rows, len(p.files), p.Bytes
		return r
	}
	b := batchInfo(p.BatchID, s)
	r.Duplicate, r.Existing = true, &b
	return r
}

// afterCommit does the best-effort chores after a successful commit.
func (t *Table) afterCommit(ctx context.Context) {
	t.lake.writeVersionHint(ctx, t.name, t.Version())
	t.dropOldVersions(ctx)
	// A Timelake head cache would now be stale: drop it so its readers
	// list. Once per Table: timelake itself never writes one.
	if !t.headDropped {
		if err := t.lake.store.Delete(ctx, metadataPrefix(t.name)+"timelake-head"); err != nil {
			t.lake.log.Warn("stale timelake-head not removed", "table", t.name.String(), "err", err)
		} else {
			t.headDropped = true
		}
	}
}

// dropOldVersions deletes the vN.metadata.json files older than every one
// the loaded version's metadata-log names, when the table sets
// write.metadata.delete-after-commit.enabled (Iceberg's table property;
// timelake sets it on the tables it creates): each version holds the whole
// snapshot history, so keeping them all would store that history once per
// commit. The versions come from the listing of the commit's last attempt.
// Best effort: a failure is logged, and the next commit tries again.
func (t *Table) dropOldVersions(ctx context.Context) {
	h, _ := t.loaded()
	if !h.props().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return
	}
	var entries []table.MetadataLogEntry
	if err := unmarshalOptional(h.get("metadata-log"), &entries); err != nil || len(entries) == 0 {
		return
	}
	oldest := 0
	for _, e := range entries {
		v, ok := parseVersion(path.Base(e.MetadataFile))
		if !ok {
			return // a file name of another scheme: leave the files alone
		}
		if oldest == 0 || v < oldest {
			oldest = v
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for _, v := range t.lake.listedBelow(t.name, oldest) {
		g.Go(func() error { return t.lake.store.Delete(gctx, metadataKey(t.name, v)) })
	}
	if err := g.Wait(); err != nil {
		t.lake.log.Warn("old metadata versions not all deleted", "table", t.name.String(), "err", err)
	}
}

// cleanup deletes what the losing attempts wrote (manifest lists and their
// own manifests) and the data files of the batches not committed by us.
// Attempts whose outcome is unknown are only cleaned once a later version
// has been committed: their vN slot is then taken, so they can never land.
func (t *Table) cleanup(ctx context.Context, c *committer, ps []*Prepared, commitErr error, results map[string]*AppendResult) {
	if commitErr != nil && c.unknown {
		t.lake.log.Warn("commit outcome unknown: keeping written files", "table", t.name.String())
		return
	}
	fs, err := t.lake.fsF(ctx)
	if err != nil {
		return
	}
	var paths []string
	if c.fast {
		paths = t.unusedStaged(c)
	}
	for _, s := range c.attempts {
		if _, staged := c.listRefs[s.ManifestList]; staged || c.committed[s.SnapshotID] {
			continue // staged attempts are cleaned by unusedStaged
		}
		if mfs, err := s.Manifests(fs); err == nil {
			for _, m := range mfs {
				if m.SnapshotID() == s.SnapshotID {
					paths = append(paths, m.FilePath())
				}
			}
		}
		paths = append(paths, s.ManifestList)
	}
	for _, p := range ps {
		if r := results[p.BatchID]; r == nil || r.Duplicate {
			paths = append(paths, dataFilePaths(p.files)...)
		}
	}
	t.removeFiles(ctx, paths)
}

func (t *Table) removeFiles(ctx context.Context, paths []string) {
	if len(paths) == 0 {
		return
	}
	fs, err := t.lake.fsF(ctx)
	if err != nil {
		return
	}
	for _, p := range paths {
		if err := fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			t.lake.log.Warn("orphan file not removed", "path", p, "err", err)
		}
	}
}

func backoff(attempt int) time.Duration {
	d := CommitRetryBase << min(attempt-2, 10)
	if d > CommitRetryMax {
		d = CommitRetryMax
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// batchCommittedError stops a commit whose batch id is already in the
// ancestry of the newest version. It does not wrap table.ErrCommitFailed, so
// iceberg-go's own retry loop stops too.
type batchCommittedError struct {
	snapshot *table.Snapshot
	head     *head
	version  int
}

func (e *batchCommittedError) Error() string {
	return fmt.Sprintf("batch already committed in snapshot %d", e.snapshot.SnapshotID)
}

// committer is the catalog-free table.CatalogIO of one append: it commits by
// conditionally creating the next vN.metadata.json and checks the batch id on
// every call, including retries made inside iceberg-go.
type committer struct {
	lake    *Lake
	name    TableName
	batches map[string]bool // batch ids being committed

	attempts  []*table.Snapshot // snapshots our attempts staged
	committed map[int64]bool    // those of them in the final ancestry
	unknown   bool              // an attempt ended with an unknown outcome

	committedHead    *head
	committedVersion int

	// Staged commits (snapshots.go) only.
	fast          bool
	commitID      uuid.UUID                       // names this Commit's manifests and lists
	snapIDs       map[string]int64                // batch id -> snapshot id, fixed for the Commit
	own           map[string]iceberg.ManifestFile // batch id -> manifest of its ADDED files
	manifestSeq   atomic.Int64
	mu            sync.Mutex          // guards written
	written       []string            // manifests and lists written, as URIs
	listRefs      map[string][]string // manifest list URI -> manifests it names
	lastList      string              // the newest attempt's last manifest list
	lastManifests []iceberg.ManifestFile
}

// unusedStaged returns the manifests and manifest lists a staged Commit
// wrote that no committed snapshot of ours names.
func (t *Table) unusedStaged(c *committer) []string {
	used := map[string]bool{}
	h, _ := t.loaded()
	for id := range c.committed {
		i, ok := h.byID[id]
		if !ok {
			continue
		}
		s, err := h.snapshot(i)
		if err != nil {
			return nil // keep every file rather than guess
		}
		used[s.ManifestList] = true
		for _, m := range c.listRefs[s.ManifestList] {
			used[m] = true
		}
	}
	var out []string
	for _, p := range c.written {
		if !used[p] {
			out = append(out, p)
		}
	}
	return out
}

func (c *committer) ours(id int64) bool {
	for _, s := range c.attempts {
		if s.SnapshotID == id {
			return true
		}
	}
	return false
}

// LoadTable loads the newest version.
func (c *committer) LoadTable(ctx context.Context, _ table.Identifier) (*table.Table, error) {
	t, err := c.lake.LoadTable(ctx, c.name)
	if err != nil {
		return nil, err
	}
	return t.iceberg(c), nil
}

// CommitTable validates reqs against the newest version, applies updates and
// writes v(N+1).metadata.json with a conditional create. A lost race (412 or
// 409) or a failed requirement wraps table.ErrCommitFailed.
func (c *committer) CommitTable(ctx context.Context, _ table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	// Record the staged snapshot first: its manifests are already written,
	// and must be cleaned up if this attempt does not win.
	for _, u := range updates {
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		var staged struct {
			Snapshot *table.Snapshot `json:"snapshot"`
		}
		if b, err := json.Marshal(u); err == nil && json.Unmarshal(b, &staged) == nil && staged.Snapshot != nil {
			c.attempts = append(c.attempts, staged.Snapshot)
		}
	}
	base, v, err := c.base(ctx)
	if err != nil {
		return nil, "", err
	}
	meta, err := base.metadata()
	if err != nil {
		return nil, "", err
	}
	for _, r := range reqs {
		if err := r.Validate(meta); err != nil {
			return nil, "", fmt.Errorf("%w: %v", table.ErrCommitFailed, err)
		}
	}
	if err := c.checkBatches(base, v); err != nil {
		return nil, "", err
	}
	next, err := table.UpdateTableMetadata(meta, updates, c.lake.metadataLocation(c.name, v))
	if err != nil {
		return nil, "", fmt.Errorf("apply updates: %w", err)
	}
	body, err := json.Marshal(next)
	if err != nil {
		return nil, "", fmt.Errorf("encode metadata: %w", err)
	}
	// Keep the metadata as read back from what was written: the builder's
	// result holds on to internal state that grows with every commit.
	h, err := parseHead(body)
	if err != nil {
		return nil, "", fmt.Errorf("metadata after the update: %w", err)
	}
	if err := c.put(ctx, v+1, body, h); err != nil {
		return nil, "", err
	}
	return h.full, c.lake.metadataLocation(c.name, v+1), nil
}

// commitStaged commits snaps (staged by Table.stage on top of parent) in
// one metadata write: it checks that the newest version is the same table
// (uuid) with parent still current and none of the batch ids committed,
// then appends the snapshots to that version (head.withSnapshots) and
// creates v(N+1).metadata.json conditionally. A lost race or a moved branch
// wraps table.ErrCommitFailed; a committed batch id is a
// *batchCommittedError.
func (c *committer) commitStaged(ctx context.Context, tableUUID uuid.UUID, parent *int64, snaps []table.Snapshot) error {
	for i := range snaps {
		c.attempts = append(c.attempts, &snaps[i])
	}
	base, v, err := c.base(ctx)
	if err != nil {
		return err
	}
	if base.write.TableUUID() != tableUUID {
		return fmt.Errorf("%w: table uuid changed to %s", table.ErrCommitFailed, base.write.TableUUID())
	}
	cur, ok := int64(0), base.current >= 0
	if ok {
		cur = base.snaps[base.current].id
	}
	if ok != (parent != nil) || (ok && cur != *parent) {
		return fmt.Errorf("%w: the main branch moved to snapshot %d", table.ErrCommitFailed, cur)
	}
	if err := c.checkBatches(base, v); err != nil {
		return err
	}
	next, body, err := base.withSnapshots(snaps, c.lake.metadataLocation(c.name, v))
	if err != nil {
		return fmt.Errorf("add snapshots: %w", err)
	}
	return c.put(ctx, v+1, body, next)
}

// base loads the newest version for a commit attempt.
func (c *committer) base(ctx context.Context) (*head, int, error) {
	base, v, err := c.lake.loadLatest(ctx, c.name)
	if err != nil {
		return nil, 0, err
	}
	if err := checkFormatVersion(base.props()); err != nil {
		return nil, 0, err
	}
	return base, v, nil
}

// checkBatches fails with *batchCommittedError when one of the batch ids
// being committed is in the current ancestry of base (version v).
func (c *committer) checkBatches(base *head, v int) error {
	for id := range c.batches {
		s, err := base.findBatch(id)
		if err != nil {
			return err
		}
		if s != nil {
			return &batchCommittedError{snapshot: s, head: base, version: v}
		}
	}
	return nil
}

// put creates version v (which h holds) with a conditional create.
func (c *committer) put(ctx context.Context, v int, body []byte, h *head) error {
	if _, err := c.lake.store.Put(ctx, metadataKey(c.name, v), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"}); err != nil {
		if errors.Is(err, storage.ErrPreconditionFailed) {
			return fmt.Errorf("%w: v%d.metadata.json was created by another writer", table.ErrCommitFailed, v)
		}
		return err
	}
	c.committedHead, c.committedVersion = h, v
	c.lake.remember(c.name, v, h)
	return nil
}
