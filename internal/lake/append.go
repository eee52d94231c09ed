package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	iofs "io/fs"

	"github.com/timelake/timelake/internal/storage"
)

// ErrEmptyBatch is returned when an append has no rows.
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
	// MaxAttempts bounds commit attempts after lost races; 0 means 20.
	MaxAttempts int
	// BatchRows is the record batch size used when writing; 0 means 65,536.
	BatchRows int
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

// Append writes recs (each with ArrowSchema()) as one snapshot whose summary
// carries timelake.batch-id = batchID, sorted per timelake-format.md, and
// commits it with the catalog-free protocol: conditional create of the next
// vN.metadata.json, reload and retry with backoff on a lost race, the batch
// id checked against the current ancestry on every attempt. A batch id that
// is already committed commits nothing (Duplicate, Rows 0). Files written by
// attempts that did not win are deleted. recs are not released.
//
// Errors: ErrEmptyBatch, ErrRequiredNull, schema mismatches, I/O errors, and
// table.ErrCommitFailed after MaxAttempts lost races.
func (t *Table) Append(ctx context.Context, batchID string, recs []arrow.RecordBatch, opts AppendOptions) (AppendResult, error) {
	res := AppendResult{BatchID: batchID}
	if batchID == "" {
		return res, errors.New("append: empty batch id")
	}
	if b, ok := t.FindBatch(batchID); ok {
		res.Duplicate, res.SnapshotID, res.Version, res.Existing = true, b.SnapshotID, t.version, &b
		return res, nil
	}
	var rows int64
	for _, r := range recs {
		if !r.Schema().Equal(t.arrowSc) {
			return res, fmt.Errorf("append %s to %s: record schema %s does not match table schema %s", batchID, t.name, r.Schema(), t.arrowSc)
		}
		if err := checkRequired(r); err != nil {
			return res, fmt.Errorf("append %s to %s: %w", batchID, t.name, err)
		}
		rows += r.NumRows()
	}
	if rows == 0 {
		return res, fmt.Errorf("append %s to %s: %w", batchID, t.name, ErrEmptyBatch)
	}
	if t.contract.TimeColumn == "" {
		return res, fmt.Errorf("append %s to %s: the table has no time column (set %s)", batchID, t.name, PropTimeColumn)
	}

	files, bytesAdded, err := t.writeDataFiles(ctx, recs, opts.BatchRows)
	if err != nil {
		return res, fmt.Errorf("append %s to %s: %w", batchID, t.name, err)
	}
	res.DataFiles, res.Bytes = len(files), bytesAdded

	props := iceberg.Properties{SummaryBatchID: batchID}
	for k, v := range opts.Summary {
		props[k] = v
	}
	c := &committer{lake: t.lake, name: t.name, batchID: batchID}
	err = t.commitLoop(ctx, c, files, props, opts, &res)
	t.cleanup(ctx, c, files, err, &res)
	if err != nil {
		return res, fmt.Errorf("append %s to %s: %w", batchID, t.name, err)
	}
	if !res.Duplicate {
		res.Rows = rows
	} else {
		res.DataFiles, res.Bytes = 0, 0
	}
	return res, nil
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
// more per partition, without committing.
func (t *Table) writeDataFiles(ctx context.Context, recs []arrow.RecordBatch, batchRows int) ([]iceberg.DataFile, int64, error) {
	sorted, err := sortRows(ctx, memory.DefaultAllocator, t.arrowSc, recs,
		t.contract.TimeColumn, t.contract.SeriesKey, t.contract.Chunk, batchRows)
	if err != nil {
		return nil, 0, err
	}
	// WriteRecords releases every batch it is given; hand each over once
	// and release the ones never handed over.
	next := 0
	defer func() {
		for _, r := range sorted[next:] {
			r.Release()
		}
	}()
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for next < len(sorted) {
			r := sorted[next]
			next++
			if !yield(r, nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	var size int64
	// Sorted by partition first, so the clustered writer keeps one
	// partition open at a time: memory stays bounded however many days an
	// append spans.
	for df, err := range table.WriteRecords(ctx, t.iceberg(&committer{lake: t.lake, name: t.name}),
		t.arrowSc, iter.Seq2[arrow.RecordBatch, error](seq), table.WithClusteredWrite()) {
		if err != nil {
			t.removeFiles(ctx, dataFilePaths(files))
			return nil, 0, fmt.Errorf("write data files: %w", err)
		}
		files = append(files, df)
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

// commitLoop commits files, reloading and retrying after lost races.
func (t *Table) commitLoop(ctx context.Context, c *committer, files []iceberg.DataFile,
	props iceberg.Properties, opts AppendOptions, res *AppendResult,
) error {
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 20
	}
	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		res.Attempts = attempt
		if attempt > 1 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
			if err := t.Refresh(ctx); err != nil {
				return err
			}
		}
		// The batch id may have been committed since the last load, by
		// another writer or by one of our own attempts whose response was
		// lost (a retried PUT then reads 412 although it succeeded).
		if s := findBatch(t.meta, c.batchID); s != nil {
			return t.settleDuplicate(c, s, res)
		}
		if opts.BeforeCommit != nil {
			if err := opts.BeforeCommit(attempt); err != nil {
				return err
			}
		}
		txn := t.iceberg(c).NewTransaction()
		if err := txn.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
			return fmt.Errorf("stage snapshot: %w", err)
		}
		_, err := txn.Commit(ctx)
		if err == nil {
			if err := t.set(c.committedMeta, c.committedVersion); err != nil {
				return err
			}
			res.SnapshotID = c.committedSnapshot
			res.Version = c.committedVersion
			t.afterCommit(ctx)
			return nil
		}
		var dup *batchCommittedError
		switch {
		case errors.As(err, &dup):
			if err := t.set(dup.meta, dup.version); err != nil {
				return err
			}
			return t.settleDuplicate(c, dup.snapshot, res)
		case errors.Is(err, table.ErrCommitFailed):
			lastErr = err
			continue
		default:
			// Unknown outcome (e.g. the PUT's response was lost): reload and
			// let the batch-id check decide.
			lastErr = err
			c.unknown = true
			if ctx.Err() != nil {
				return err
			}
		}
	}
	return fmt.Errorf("gave up after %d commit attempts: %w", maxAttempts, lastErr)
}

// settleDuplicate reports a batch found in the ancestry: our own earlier
// attempt (success) or another commit (duplicate).
func (t *Table) settleDuplicate(c *committer, s *table.Snapshot, res *AppendResult) error {
	res.Version = t.version
	res.SnapshotID = s.SnapshotID
	if c.ours(s.SnapshotID) {
		c.committedSnapshot = s.SnapshotID
		return nil
	}
	b := batchInfo(c.batchID, s)
	res.Duplicate, res.Existing = true, &b
	return nil
}

// afterCommit does the best-effort chores after a successful commit.
func (t *Table) afterCommit(ctx context.Context) {
	t.lake.writeVersionHint(ctx, t.name, t.version)
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

// cleanup deletes what the losing attempts wrote (manifest lists and their
// own manifests) and, when nothing of ours was committed, the data files.
// Attempts whose outcome is unknown are only cleaned once a later version
// has been committed: their vN slot is then taken, so they can never land.
func (t *Table) cleanup(ctx context.Context, c *committer, files []iceberg.DataFile, commitErr error, res *AppendResult) {
	settled := commitErr == nil || !c.unknown
	if !settled {
		t.lake.log.Warn("commit outcome unknown: keeping written files", "table", t.name.String(), "batch", c.batchID)
		return
	}
	fs, err := t.lake.fsF(ctx)
	if err != nil {
		return
	}
	var paths []string
	for _, s := range c.attempts {
		if s.SnapshotID == c.committedSnapshot {
			continue
		}
		mfs, err := s.Manifests(fs)
		if err == nil {
			for _, m := range mfs {
				if m.SnapshotID() == s.SnapshotID {
					paths = append(paths, m.FilePath())
				}
			}
		}
		paths = append(paths, s.ManifestList)
	}
	if commitErr != nil || res.Duplicate {
		paths = append(paths, dataFilePaths(files)...)
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
	meta     table.Metadata
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
	batchID string

	attempts []*table.Snapshot // snapshots this append tried to commit
	unknown  bool              // an attempt ended with an unknown outcome

	committedMeta     table.Metadata
	committedVersion  int
	committedSnapshot int64
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
	base, v, err := c.lake.loadLatest(ctx, c.name)
	if err != nil {
		return nil, "", err
	}
	if err := checkFormatVersion(base.Properties()); err != nil {
		return nil, "", err
	}
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			return nil, "", fmt.Errorf("%w: %v", table.ErrCommitFailed, err)
		}
	}
	if c.batchID != "" {
		if s := findBatch(base, c.batchID); s != nil {
			return nil, "", &batchCommittedError{snapshot: s, meta: base, version: v}
		}
	}
	baseLoc := c.lake.tableLocation(c.name) + "/metadata/v" + strconv.Itoa(v) + ".metadata.json"
	next, err := table.UpdateTableMetadata(base, updates, baseLoc)
	if err != nil {
		return nil, "", fmt.Errorf("apply updates: %w", err)
	}
	body, err := json.Marshal(next)
	if err != nil {
		return nil, "", fmt.Errorf("encode metadata: %w", err)
	}
	if _, err := c.lake.store.Put(ctx, metadataKey(c.name, v+1), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"}); err != nil {
		if errors.Is(err, storage.ErrPreconditionFailed) {
			return nil, "", fmt.Errorf("%w: v%d.metadata.json was created by another writer", table.ErrCommitFailed, v+1)
		}
		return nil, "", err
	}
	c.committedMeta, c.committedVersion = next, v+1
	if s := next.CurrentSnapshot(); s != nil {
		c.committedSnapshot = s.SnapshotID
	}
	loc := c.lake.tableLocation(c.name) + "/metadata/v" + strconv.Itoa(v+1) + ".metadata.json"
	return next, loc, nil
}
