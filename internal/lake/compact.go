package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake/datafile"
	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// Compaction rewrites the small data files of a partition into fewer,
// larger ones, sorted by the table contract (series key, then time), and
// commits them as one Iceberg replace snapshot through the commit protocol:
// the rows stay the same, only the files change, so appends committed
// meanwhile never conflict with it, and older snapshots (time travel) keep
// reading the old files until they expire.
//
// Which files: a fleet appends a small file per gateway per minute to
// today's partition, which is the one users query, so compaction cannot wait
// for the partition to go cold. Files are grouped in size tiers (each tier
// compact-min-files times the one below, from 64 KiB up to the target file
// size); once a tier of a partition holds compact-min-files files they are
// merged into one of the next tier (size-tiered, as an LSM tree merges
// runs), so a partition holds a few files per tier at any moment and each
// row is rewritten about once per tier. A partition whose files are all
// older than compact-cold-after is cold: its files below the target size
// are merged into as few as the target size allows.
//
// iceberg-go's RewriteDataFiles plans bin-packing without sorting and
// stamps snapshots with the wall clock; the rewrite here keeps the rows in
// the order appends write them (merging the group's sorted files, merge.go)
// and its snapshot is written by the producer of appends' (producer.go),
// with the lake's clock, so the fleet benchmark can simulate days.
// Manifests are encoded by iceberg-go.

// Snapshot summary properties of a compaction's snapshot.
const (
	// SummaryCompaction names why a replace snapshot rewrote its files:
	// "tiered" (small files of a live partition) or "cold".
	SummaryCompaction = "timelake.compaction"
	// SummaryReplacedRows counts the rows a compaction under
	// timelake.read-dedup left out: a newer batch has their series key and
	// time (its snapshot is an overwrite).
	SummaryReplacedRows = "timelake.replaced-rows"
)

// CompactOptions tune Compact. Zero values take the table's properties,
// then the defaults.
type CompactOptions struct {
	TargetFileSize int64         // timelake.target-file-size
	MinFiles       int           // timelake.compact-min-files
	ColdAfter      time.Duration // timelake.compact-cold-after
	// MaxBytes bounds the bytes of input files one call rewrites (the
	// rest waits for the next call); 0 means no bound.
	MaxBytes int64
	// Deadline, when set, is when the rewrites must have ended: a group
	// whose estimated rewrite (maintenance.RewriteEstimate) does not fit the time left
	// is not started (CompactResult.Deferred), and a rewrite still running
	// at Deadline is abandoned, its files deleted (Abandoned); the groups
	// written before it commit, under ctx. Zero: no deadline.
	Deadline time.Time
	// Clock reads the time Deadline is compared with; nil is time.Now.
	Clock func() time.Time
	// RewriteRate is the rows per second a rewrite is estimated to take;
	// 0 is the rate earlier rewrites of the table measured (the
	// maintenance state), else maintenance.DefaultRewriteRate.
	RewriteRate float64
	// DryRun plans and reports, and writes nothing.
	DryRun bool

	// state is the maintenance state Maintain already read (its
	// sequences date files whose snapshots expired); nil: Compact reads it.
	state *maintenanceState
}

// CompactionGroup is one set of files of a partition rewritten together
// (maintenance.Group).
type CompactionGroup = maintenance.Group

// CompactResult is what Compact did (maintenance.CompactResult).
type CompactResult = maintenance.CompactResult

// compactSettings are the resolved compaction settings of a table
// (maintenance.CompactSettings).
type compactSettings = maintenance.CompactSettings

func compactSettingsOf(props iceberg.Properties, opts CompactOptions) compactSettings {
	return maintenance.CompactSettingsOf(props, opts.TargetFileSize, opts.MinFiles, opts.ColdAfter)
}

// liveFile is a live data file of the current snapshot and its commit
// time (maintenance.File).
type liveFile = maintenance.File

// liveFiles reads the live data file entries of h's current snapshot with
// each file's commit time: its snapshot's timestamp, or, when that snapshot
// has expired, the earlier of the oldest snapshot's and the time seqs give
// for its data sequence number (the file is at least that old).
func (t *Table) liveFiles(ctx context.Context, h *tablemeta.Indexed, seqs []maintenance.SequenceTime) ([]liveFile, []iceberg.ManifestFile, error) {
	cur, err := h.CurrentSnapshot()
	if err != nil || cur == nil {
		return nil, nil, err
	}
	fs, err := t.fsF(ctx)
	if err != nil {
		return nil, nil, err
	}
	mfs, err := cur.Manifests(fs)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest list of snapshot %d: %w", cur.SnapshotID, err)
	}
	oldest := int64(0)
	times := make(map[int64]int64, len(h.Snaps()))
	for _, r := range h.Snaps() {
		times[r.ID] = r.Timestamp
		if oldest == 0 || r.Timestamp < oldest {
			oldest = r.Timestamp
		}
	}
	spec := h.Write().PartitionSpec()
	entries := make([][]iceberg.ManifestEntry, len(mfs))
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for i, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		g.Go(func() (err error) {
			if entries[i], err = manifestEntries(fs, mf, true); err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var out []liveFile
	for _, es := range entries {
		for _, e := range es {
			df := e.DataFile()
			ms, ok := times[e.SnapshotID()]
			if !ok {
				ms = oldest
				if at, ok := maintenance.CommittedBy(seqs, e.SequenceNum()); ok && at.UnixMilli() < ms {
					ms = at.UnixMilli()
				}
			}
			out = append(out, liveFile{Entry: e, Committed: time.UnixMilli(ms).UTC(),
				Partition: partitionPath(spec, h.Write().CurrentSchema(), df)})
		}
	}
	return out, mfs, nil
}

// partitionPath renders a data file's partition as in its folder name,
// e.g. time_day=2026-01-05; "" for an unpartitioned file.
func partitionPath(spec iceberg.PartitionSpec, sc *iceberg.Schema, df iceberg.DataFile) string {
	if df.SpecID() != int32(spec.ID()) || spec.NumFields() == 0 {
		return partitionKey(df.Partition())
	}
	rec := make(datafile.PartitionRecord, spec.NumFields())
	for i := range spec.NumFields() {
		rec[i] = df.Partition()[spec.Field(i).FieldID]
	}
	return spec.PartitionToPath(rec, sc)
}

// Compact plans and commits one round of compaction (see the package
// comment above): the groups of every partition that needs one, within
// MaxBytes, in one replace snapshot. A group whose input files another
// writer replaced meanwhile is dropped (its output deleted), the others
// commit. On success the Table holds the new version.
//
// Errors: reading or writing files, and those of the commit protocol.
func (t *Table) Compact(ctx context.Context, opts CompactOptions) (CompactResult, error) {
	if err := t.Refresh(ctx); err != nil {
		return CompactResult{}, err
	}
	h, v := t.loaded()
	res := CompactResult{Version: v.N}
	s := compactSettingsOf(h.Props(), opts)
	st := opts.state
	if st == nil {
		loaded, err := t.loadMaintenanceState(ctx)
		if err != nil {
			return res, err
		}
		st = &loaded
	}
	files, mfs, err := t.liveFiles(ctx, h, st.Sequences)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", t.name, err)
	}
	// A data file the metadata names outside the table is never read
	// (paths.go): it stays as it is, the others are compacted.
	files = slices.DeleteFunc(files, func(f liveFile) bool {
		p := f.Entry.DataFile().FilePath()
		if _, err := t.lake.tableRel(t.name, p); err != nil {
			t.lake.log.Warn("data file not compacted: outside the table's location", "table", t.name.String(), "path", p)
			return true
		}
		return false
	})
	// Rows deleted by position or equality delete files would come back
	// if their data files were rewritten without them (the scan of a
	// rewrite reads data files only): such tables are left to the engine
	// that wrote the deletes (e.g. Spark's rewrite_data_files).
	for _, mf := range mfs {
		if mf.ManifestContent() == iceberg.ManifestContentDeletes && mf.AddedDataFiles()+mf.ExistingDataFiles() > 0 {
			res.Skipped = "the table has row-level delete files, which compaction does not apply; " +
				"rewrite it with the engine that wrote them (e.g. Spark's rewrite_data_files)"
			return res, nil
		}
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	rate := opts.RewriteRate
	if rate <= 0 {
		rate = cmp.Or(st.RewriteRate, maintenance.DefaultRewriteRate)
	}
	var fits func(CompactionGroup) bool
	if !opts.Deadline.IsZero() {
		left := opts.Deadline.Sub(clock())
		fits = func(g CompactionGroup) bool {
			d := maintenance.RewriteEstimate(g.Rows, rate)
			if d > left {
				return false
			}
			left -= d
			return true
		}
	}
	spec := int32(h.Write().DefaultPartitionSpec())
	var groups []CompactionGroup
	var deferred int
	if s.Dedupe {
		// maintenance.DedupePlan takes the time left as it picks its groups.
		groups, deferred = maintenance.PlanCompaction(files, spec, s, t.lake.now(), opts.MaxBytes, nil)
		groups, deferred = maintenance.DedupePlan(boundColumns(h), files, groups, deferred, spec, s, t.lake.now(), opts.MaxBytes, fits)
	} else {
		groups, deferred = maintenance.PlanCompaction(files, spec, s, t.lake.now(), opts.MaxBytes, fits)
	}
	res.Deferred = deferred
	if len(groups) == 0 && deferred == 0 {
		res.Idle = maintenance.IdleReason(files, spec, s)
	}
	if opts.DryRun || len(groups) == 0 {
		res.Groups = groups
		return res, nil
	}
	// Write the groups' new files, each only while the deadline allows.
	rctx := ctx
	if !opts.Deadline.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, opts.Deadline.Sub(clock()))
		defer cancel()
	}
	var written []*CompactionGroup
	var m *rewriteMutation
	defer func() {
		if m != nil && m.unknown {
			// The commit may have landed: its outputs stay (orphan
			// removal takes them if it did not).
			return
		}
		// Outputs of groups that were not committed.
		var paths []string
		for _, g := range written {
			if g.FilesOut == 0 {
				paths = append(paths, dataFilePaths(g.Outputs)...)
			}
		}
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		t.removeFiles(cctx, paths)
	}()
	for i := range groups {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		g := &groups[i]
		if rctx.Err() != nil {
			res.Deferred += len(groups) - i
			break
		}
		t0 := clock()
		out, err := t.rewriteGroup(rctx, g)
		if err != nil && rctx.Err() != nil && ctx.Err() == nil {
			// Cut at the deadline: what it wrote is gone (removed, or
			// left to orphan removal), the groups before it commit.
			// It took longer than its estimate: the rate noted is at
			// most half the one it was planned with, so that later
			// rounds cut such a group smaller (maintenance.PlanCompaction) rather
			// than start and abandon it again.
			took := max(clock().Sub(t0)-maintenance.RewriteOverhead, maintenance.RateFloorTime)
			st.NoteRewriteRate(min(float64(g.Rows)/took.Seconds(), rate/2))
			res.Abandoned++
			res.Deferred += len(groups) - i - 1
			break
		}
		if errors.Is(err, storage.ErrSymlink) {
			// A file of a local table that is a symbolic link is never
			// read (paths.go): its group stays as it is, the others are
			// compacted.
			t.lake.log.Warn("data files not compacted: one is a symbolic link", "table", t.name.String(), "partition", g.Partition, "err", err)
			continue
		}
		if isNotExist(err) {
			if gone, lerr := t.replacedMeanwhile(ctx, g); lerr == nil && gone {
				res.Dropped++ // another round compacted these files and expired them first
				continue
			}
		}
		if err != nil {
			return res, fmt.Errorf("compact %s: %s: %w", t.name, g.Partition, err)
		}
		if g.Rows >= maintenance.RateSampleRows {
			// A rewrite quicker than the fixed cost counts as taking
			// maintenance.RateFloorTime beyond it: a fast machine's rate is noted
			// too (high, so later estimates are short).
			took := max(clock().Sub(t0)-maintenance.RewriteOverhead, maintenance.RateFloorTime)
			st.NoteRewriteRate(float64(g.Rows) / took.Seconds())
		}
		g.Outputs = out
		written = append(written, g)
	}
	if len(written) == 0 {
		return res, nil
	}
	m = &rewriteMutation{t: t, groups: written, attempts: map[int]*rewriteAttempt{}}
	cr, err := t.commit(ctx, m, CommitOptions{})
	// A commit that landed holds its groups' new files, also when the
	// Table could not hold the version after it (an error with
	// cr.Committed): they are not removed.
	if a := m.attempts[cr.Attempt]; a != nil && cr.Committed {
		res.SnapshotID = a.snapshotID
		for _, g := range a.groups {
			g.FilesOut = len(g.Outputs)
			for _, df := range g.Outputs {
				g.BytesOut += df.FileSizeBytes()
			}
			res.Groups = append(res.Groups, *g)
		}
	}
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", t.name, err)
	}
	res.Version = cr.Version
	res.Dropped = len(written) - len(res.Groups)
	return res, nil
}

// cleanupContext is ctx for deleting what an operation wrote and will not
// commit: not cancelled with ctx (a stopped round still cleans up), but
// ending at ctx's deadline (a round of maintenance ends by its budget and
// slack; what is left is orphan removal's).
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(cctx, dl)
	}
	return context.WithCancel(cctx)
}

// rewriteGroup writes the rows of g's input files as new data files,
// sorted as appends are: by merging the files (merge.go) when some are too
// large to hold at once, else by reading them whole and sorting (as an
// append does), which is also what a group with an out-of-order file falls
// back to.
func (t *Table) rewriteGroup(ctx context.Context, g *CompactionGroup) ([]iceberg.DataFile, error) {
	v := t.view()
	pooled, streamed := splitMergeInputs(g.Inputs)
	if len(streamed) == 0 && !g.Dedupe {
		return t.rewriteWhole(ctx, v, g)
	}
	files, err := t.mergeGroup(ctx, v, g, pooled, streamed)
	if errors.Is(err, errUnsortedRun) {
		if g.Dedupe {
			// Each file read whole and sorted as a run of its own.
			return t.mergeGroup(ctx, v, g, g.Inputs, nil)
		}
		return t.rewriteWhole(ctx, v, g)
	}
	return files, err
}

// replacedMeanwhile reports whether an input file of g is no longer live
// in the table's newest version: another writer replaced it since g was
// planned (and may have deleted it, which is why reading it failed).
func (t *Table) replacedMeanwhile(ctx context.Context, g *CompactionGroup) (bool, error) {
	h, _, err := t.lake.loadLatest(ctx, t.name)
	if err != nil {
		return false, err
	}
	files, _, err := t.liveFiles(ctx, h, nil)
	if err != nil {
		return false, err
	}
	live := livePaths(files)
	for _, df := range g.Inputs {
		if !live[df.FilePath()] {
			return true, nil
		}
	}
	return false, nil
}

// splitMergeInputs picks the files a merge reads whole into its pool and
// those it streams (maintenance.SplitMergeInputs).
func splitMergeInputs(inputs []iceberg.DataFile) (pooled []iceberg.DataFile, streamed []int) {
	return maintenance.SplitMergeInputs(inputs)
}

// rewriteWhole reads every row of g at once and writes them sorted.
func (t *Table) rewriteWhole(ctx context.Context, v tableView, g *CompactionGroup) ([]iceberg.DataFile, error) {
	recs, rows, err := t.readFiles(ctx, v, g.Inputs)
	defer decode.ReleaseAll(recs)
	if err != nil {
		return nil, err
	}
	if rows != g.Rows {
		return nil, fmt.Errorf("read %d rows from %d files whose manifests count %d", rows, len(g.Inputs), g.Rows)
	}
	files, _, _, err := t.writeDataFiles(ctx, v, recs, 0, nil)
	return files, err
}

// mergeGroup writes g's rows by merging its files as sorted runs: the
// pooled files read whole and sorted as one run, each streamed file (an
// index into g.Inputs) read mergeReadRows rows at a time. Errors wrap
// errUnsortedRun when a streamed file is out of order (its outputs
// removed).
func (t *Table) mergeGroup(ctx context.Context, v tableView, g *CompactionGroup, pooled []iceberg.DataFile, streamed []int) ([]iceberg.DataFile, error) {
	k, err := newSortKey(v.arrowSc, v.contract)
	if err != nil {
		return nil, err
	}
	var runs []*mergeRun
	defer func() {
		for _, r := range runs {
			r.stop() // stopping twice is harmless: mergeRuns stops them too
		}
	}()
	// The pooled files are one run, or, keeping the newest row of each
	// key, one run each: a row's batch is its file's.
	pools := [][]iceberg.DataFile{pooled}
	if g.Dedupe {
		pools = nil
		for _, df := range pooled {
			pools = append(pools, []iceberg.DataFile{df})
		}
	}
	for _, files := range pools {
		if len(files) == 0 {
			continue
		}
		recs, _, err := t.readFiles(ctx, v, files)
		defer decode.ReleaseAll(recs)
		if err != nil {
			return nil, err
		}
		sr, err := datafile.NewSortedRows(memory.DefaultAllocator, v.arrowSc, recs, v.contract.order())
		if err != nil {
			return nil, err
		}
		defer sr.Release()
		run := sortedRun(ctx, "small files", -1, sr)
		if g.Dedupe {
			run.name, run.order = files[0].FilePath(), int(g.Seqs[files[0].FilePath()])
		}
		runs = append(runs, run)
	}
	scan := t.Iceberg().Scan(table.WithArrowBatchSize(mergeReadRows), table.WithMaxConcurrency(1))
	for _, i := range streamed {
		df := g.Inputs[i]
		_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
		if err != nil {
			return nil, err
		}
		order := i
		if g.Dedupe {
			order = int(g.Seqs[df.FilePath()])
		}
		runs = append(runs, pullRun(df.FilePath(), order, conformed(it, v.arrowSc)))
	}
	merge := mergeRuns
	if g.Dedupe {
		merge = mergeRunsNewest
	}
	var rows atomic.Int64
	var mergeErr error
	merged := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range merge(ctx, memory.DefaultAllocator, v.arrowSc, k, runs, mergeOutRows) {
			if err != nil {
				mergeErr = err
				yield(nil, err)
				return
			}
			rows.Add(rec.NumRows())
			if !yield(rec, nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range t.writeRecords(ctx, v, merged) {
		if err != nil {
			t.removeFiles(context.WithoutCancel(ctx), dataFilePaths(files))
			if mergeErr != nil {
				return nil, fmt.Errorf("merge data files: %w", mergeErr)
			}
			return nil, fmt.Errorf("write data files: %w", err)
		}
		files = append(files, df)
	}
	if n := rows.Load(); n != g.Rows && !(g.Dedupe && n < g.Rows) {
		t.removeFiles(context.WithoutCancel(ctx), dataFilePaths(files))
		return nil, fmt.Errorf("merged %d rows from %d files whose manifests count %d", n, len(g.Inputs), g.Rows)
	}
	g.Replaced = g.Rows - rows.Load()
	return files, nil
}

// conformed passes on seq's batches as conformRecord makes them.
func conformed(seq iter.Seq2[arrow.RecordBatch, error], sc *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			c, err := conformRecord(rec, sc)
			rec.Release()
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// readFiles reads every row of files (through iceberg-go's scan: projected
// to the current schema by field id, so files written before a schema
// change read with the new columns null) as batches of v's schema, and
// their row count. The caller releases the batches, also on error.
// readConcurrency is how many data files readFiles reads at once.
const readConcurrency = 16

func (t *Table) readFiles(ctx context.Context, v tableView, files []iceberg.DataFile) ([]arrow.RecordBatch, int64, error) {
	tasks := make([]table.FileScanTask, len(files))
	for i, df := range files {
		tasks[i] = table.FileScanTask{File: df, Start: 0, Length: df.FileSizeBytes()}
	}
	// Many small files are read at once: on object storage each costs a
	// request or two of 10 to 30 ms, far more than its decoding. The
	// files read here are held whole anyway (the group, or the merge's
	// pool, bounded by its rows), so reading them in parallel holds no
	// more.
	_, it, err := t.Iceberg().Scan(table.WithMaxConcurrency(readConcurrency)).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, 0, err
	}
	var recs []arrow.RecordBatch
	var rows int64
	for rec, err := range it {
		if err != nil {
			return recs, 0, err
		}
		conformed, err := conformRecord(rec, v.arrowSc)
		rec.Release()
		if err != nil {
			return recs, 0, err
		}
		// The scan's batches keep the buffers its reader reserved for a
		// whole batch (64 Ki rows per column), however few rows a small
		// file gave them: copied to their size, a group of many small
		// files holds no more than its rows (800 files of 300 rows: the
		// process's peak 18 MB lower).
		sized, err := datafile.SizedRecord(conformed)
		conformed.Release()
		if err != nil {
			return recs, 0, err
		}
		recs = append(recs, sized)
		rows += sized.NumRows()
	}
	return recs, rows, nil
}

// conformRecord returns rec with exactly schema sc (the table's Arrow
// schema, field ids in metadata): the scan's schema carries the same
// columns and types.
func conformRecord(rec arrow.RecordBatch, sc *arrow.Schema) (arrow.RecordBatch, error) {
	if rec.Schema().Equal(sc) {
		rec.Retain()
		return rec, nil
	}
	if int(rec.NumCols()) != sc.NumFields() {
		return nil, fmt.Errorf("scan schema %s does not match table schema %s", rec.Schema(), sc)
	}
	for i, f := range sc.Fields() {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) || rec.Schema().Field(i).Name != f.Name {
			return nil, fmt.Errorf("scan column %s %s does not match table column %s %s",
				rec.Schema().Field(i).Name, rec.Column(i).DataType(), f.Name, f.Type)
		}
	}
	return array.NewRecordBatch(sc, rec.Columns(), rec.NumRows()), nil
}

// rewriteMutation commits the rewritten groups as one replace snapshot on
// the newest version. Its requirement, checked at every attempt: each
// group's input files are still live in the current snapshot (another
// compaction may have replaced them; appends never do). Groups that fail
// it are left out; when none is left, nothing is committed.
type rewriteMutation struct {
	t        *Table
	groups   []*CompactionGroup
	attempts map[int]*rewriteAttempt
	producer *snapshotProducer // writes the manifests and manifest lists, every attempt
	// unknown: the commit ended without learning whether a write landed;
	// the groups' outputs may be referenced, and are kept.
	unknown bool
	// seen: a version an attempt built on holds what an earlier attempt
	// wrote (heldOwnFiles); cleanUp then keeps every file.
	seen bool
	// before: the ids of the snapshots of the version the first attempt
	// built on; checked: the later ones heldOwnFiles has read.
	before, checked map[int64]bool
}

// heldOwnFiles notes (m.seen) whether base, whose current snapshot has the
// live data files live and the manifests mfs, holds files an earlier
// attempt of m wrote: one of outputs, or a manifest. That attempt's commit
// landed although it was not recognised as committed: its version was
// deleted as an old one, and its snapshot expired (timelake.max-snapshots
// expires young snapshots too), before this writer looked again. Its files
// are the table's, and none may be deleted. The current snapshot may no
// longer name them (a later append merged the manifest, a later
// compaction replaced the outputs) while a later snapshot the table keeps
// still does: every snapshot committed since the first attempt's version
// is read too. When one cannot be read, every file is kept as well.
func (m *rewriteMutation) heldOwnFiles(ctx context.Context, base *tablemeta.Indexed, live map[string]bool, mfs []iceberg.ManifestFile, outputs []iceberg.DataFile) (err error) {
	m.started(base)
	defer func() {
		if err != nil {
			m.seen = true
		}
	}()
	for _, df := range outputs {
		m.seen = m.seen || live[df.FilePath()]
	}
	if m.seen {
		return nil
	}
	written := map[string]bool{}
	for _, f := range m.producer.writtenFiles() {
		written[f] = true
	}
	for _, mf := range mfs {
		m.seen = m.seen || written[mf.FilePath()]
	}
	if m.seen || len(written) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, df := range outputs {
		out[df.FilePath()] = true
	}
	fs, err := m.t.fsF(ctx)
	if err != nil {
		return err
	}
	read := map[string]bool{}
	for i, r := range base.Snaps() {
		if m.before[r.ID] || m.checked[r.ID] {
			continue
		}
		s, err := base.Snapshot(i)
		if err != nil {
			return err
		}
		if written[s.ManifestList] {
			m.seen = true
			return nil
		}
		smfs, err := s.Manifests(fs)
		if err != nil {
			return fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, mf := range smfs {
			if written[mf.FilePath()] {
				m.seen = true
				return nil
			}
			if len(out) == 0 || read[mf.FilePath()] || m.before[mf.SnapshotID()] {
				continue
			}
			read[mf.FilePath()] = true
			entries, err := manifestEntries(fs, mf, true)
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			for _, e := range entries {
				if out[e.DataFile().FilePath()] {
					m.seen = true
					return nil
				}
			}
		}
		m.checked[r.ID] = true
	}
	return nil
}

// started notes the snapshots of base, the version the first attempt
// builds on (m.before), once.
func (m *rewriteMutation) started(base *tablemeta.Indexed) {
	if m.before != nil {
		return
	}
	m.before, m.checked = map[int64]bool{}, map[int64]bool{}
	for _, r := range base.Snaps() {
		m.before[r.ID] = true
	}
}

type rewriteAttempt struct {
	groups     []*CompactionGroup
	snapshotID int64
	refs       []string // files of this attempt its version references
}

func (m *rewriteMutation) build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	if m.producer == nil {
		m.producer = newReplaceProducer(t)
	}
	parent, err := base.CurrentSnapshot()
	if err != nil {
		return nil, err
	}
	if parent == nil {
		return nil, errNothingToCommit
	}
	files, mfs, err := t.liveFiles(ctx, base, nil)
	if err != nil {
		return nil, err
	}
	live := livePaths(files)
	var outputs []iceberg.DataFile
	for _, g := range m.groups {
		outputs = append(outputs, g.Outputs...)
	}
	if err := m.heldOwnFiles(ctx, base, live, mfs, outputs); err != nil {
		return nil, err
	}
	a := &rewriteAttempt{}
	deleted := map[string]bool{}
	for _, g := range m.groups {
		ok := true
		for _, df := range g.Inputs {
			ok = ok && live[df.FilePath()]
		}
		if ok {
			a.groups = append(a.groups, g)
			for _, df := range g.Inputs {
				deleted[df.FilePath()] = true
			}
		}
	}
	if len(a.groups) == 0 {
		return nil, errNothingToCommit
	}
	m.attempts[attempt] = a
	a.snapshotID = newSnapshotID(base, nil)
	// The new files, in a manifest of their own; each manifest naming a
	// replaced file rewritten with that entry DELETED; the others kept.
	change := compactionChange(a.groups)
	change.deleted = deleted
	snap, refs, err := m.producer.rewrite(ctx, base, parent, mfs, a.snapshotID, attempt, change)
	if err != nil {
		return nil, err
	}
	a.refs = append(a.refs, refs...)
	return tablemeta.AddSnapshots(nil, snap), nil
}

// compactionChange is what the replace snapshot of groups adds: each
// group's new files, those of a deduplicated group with the data sequence
// number of its newest input, which orders their rows against the batches
// of other files (dedupe.go), the others with the snapshot's. Its summary
// names the groups' reason and the rows they left out; a snapshot that
// left rows out changes the table's data (Iceberg spec, "Snapshots":
// overwrite), others replace the same rows (the replace producer's
// operation).
func compactionChange(groups []*CompactionGroup) fileChange {
	change := fileChange{props: iceberg.Properties{}}
	var added []iceberg.DataFile
	var replaced int64
	reason := groups[0].Reason
	for _, g := range groups {
		var dataSeq *int64
		if g.Dedupe {
			dataSeq = &g.DataSeq
		}
		change.added = append(change.added, addedFiles{files: g.Outputs, dataSeq: dataSeq})
		added = append(added, g.Outputs...)
		replaced += g.Replaced
		if g.Reason != reason {
			reason = "tiered,cold"
		}
	}
	change.changedParts = changedPartitions(added)
	change.props[SummaryCompaction] = reason
	if replaced > 0 {
		change.props[SummaryReplacedRows] = strconv.FormatInt(replaced, 10)
		change.op = table.OpOverwrite
	}
	return change
}

// cleanUp deletes the manifests and lists the losing attempts wrote (the
// new data files of groups not committed are deleted by Compact). With an
// unknown outcome, or files of an earlier attempt held by the table
// (heldOwnFiles), every file is kept (m.unknown).
func (m *rewriteMutation) cleanUp(ctx context.Context, won int, unknown bool) {
	if unknown || m.seen {
		m.unknown = true
		return
	}
	var refs []string
	if a := m.attempts[won]; a != nil {
		refs = a.refs
	}
	m.t.removeFiles(ctx, without(m.producer.writtenFiles(), refs))
	if won == 0 {
		for _, g := range m.groups {
			g.FilesOut = 0
		}
	}
}
