package lake

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// Row deletes (timelake tables delete, docs/tables.md): the rows a
// predicate matches are removed by copy-on-write, in one snapshot
// committed through the commit protocol like every change (Table.commit).
// A data file with matching rows is rewritten without them (as compaction
// writes files: writeRecords, its rows read in order and written in
// order), a file whose rows all match is dropped, and a file whose
// partition or column statistics exclude the predicate is not read. The
// snapshot is an overwrite when it adds files, a delete when it only drops
// them (Iceberg spec, "Snapshots"); no delete files are written, so every
// reader sees the rows gone. The input files must still be live when the
// snapshot commits: a commit that lost the race to another writer is
// built again on the newest version (appends never conflict), and when
// another writer replaced an input meanwhile (a compaction), the delete is
// planned and written again on the newest version.

// Snapshot summary properties of a delete's snapshot.
const (
	// SummaryDeletePredicate is the predicate the rows matched, e.g.
	// device = "d1" AND time >= 2026-01-05T10:00:00Z.
	SummaryDeletePredicate = "timelake.delete-predicate"
	// SummaryDeletedRows counts the rows removed (deleted-records counts
	// every row of the files the snapshot removes, as the Iceberg spec
	// has it, including those written again).
	SummaryDeletedRows = "timelake.deleted-rows"
	// SummaryDeletePredicateJSON is the predicate as JSON (deleteRecord),
	// which UndoDelete reads to select the rows again.
	SummaryDeletePredicateJSON = "timelake.delete-predicate-json"
)

// deleteRounds bounds how often a delete is planned again after another
// writer replaced one of its input files.
const deleteRounds = 3

// ErrNoPredicate refuses a delete without a predicate: it would remove
// every row.
var ErrNoPredicate = errors.New("a delete needs a predicate (--where, --from, --to or --batch-id)")

// ErrBatchNotApart refuses a delete by batch id from a table without a
// source column (PropSourceColumn) whose batch's data files cannot be
// dropped whole (its snapshot expired, or a compaction or a delete
// rewrote them): once compacted, a file holds the rows of several batches.
var ErrBatchNotApart = errors.New("the table has no source column; the rows of a batch cannot be told apart once compacted")

// ErrBatchNotLoaded refuses a delete by batch id from a table without a
// source column when the key was never loaded (or is past the dedupe
// window): a misspelt key, most likely.
var ErrBatchNotLoaded = errors.New("no such batch")

// sourceColumnHint ends an ErrBatchNotApart.
const sourceColumnHint = "set the table property " + PropSourceColumn + " (timelake tables alter NAME --set " + PropSourceColumn + "=_source) to tell apart the batches loaded from then on; ingest's --source-column fills the column without setting the property on a table that exists"

// errDeleteInputGone ends an attempt of a delete whose input files are no
// longer all live: another writer replaced one.
var errDeleteInputGone = errors.New("an input file of the delete was replaced meanwhile")

// errDeleteLanded ends an attempt of a delete whose input files are gone
// because an earlier attempt of the same delete removed them: its commit
// landed although it was not recognised as committed (heldOwnFiles). The
// delete is done; planning it again would find no row to delete.
var errDeleteLanded = errors.New("an earlier attempt of the delete landed")

// WhereColumn is one column of a delete predicate and the values a row's
// value must be one of.
type WhereColumn struct {
	Column string   `json:"column"`
	Values []string `json:"values"`
}

// DeletePredicate selects the rows a delete removes: every Where column
// holds one of its values, the time column is within [From, To) (a zero
// bound is open), and, with BatchIDs, the row came from the landing file
// of that key: the table's source column holds it, or, without one, the
// row is in a data file the batch's snapshot added, while the snapshot is
// in the current ancestry and all of its files are live (else
// ErrBatchNotApart). A null value matches nothing.
type DeletePredicate struct {
	Where    []WhereColumn
	From, To time.Time
	BatchIDs []string
}

// ParseWhere reads COLUMN=VALUE terms: the same column again adds a value
// it may hold, different columns must all match (in the order they first
// appear).
func ParseWhere(terms []string) ([]WhereColumn, error) {
	var out []WhereColumn
	for _, term := range terms {
		col, val, ok := strings.Cut(term, "=")
		col = strings.TrimSpace(col)
		if !ok || col == "" {
			return nil, fmt.Errorf("expected COLUMN=VALUE such as device=gw-7, got %q", term)
		}
		i := slices.IndexFunc(out, func(w WhereColumn) bool { return w.Column == col })
		if i < 0 {
			out = append(out, WhereColumn{Column: col})
			i = len(out) - 1
		}
		if !slices.Contains(out[i].Values, val) {
			out[i].Values = append(out[i].Values, val)
		}
	}
	return out, nil
}

// Empty reports whether p selects every row.
func (p DeletePredicate) Empty() bool {
	return len(p.Where) == 0 && p.From.IsZero() && p.To.IsZero() && len(p.BatchIDs) == 0
}

// withBatch returns p with its BatchIDs as a Where term on the source
// column of v's table; the BatchIDs stay when the table has none (the
// batch's files select its rows: batchFiles). Errors: a source column no
// row holds yet.
func (p DeletePredicate) withBatch(v tableView) (DeletePredicate, error) {
	col := v.meta.Props()[PropSourceColumn]
	if len(p.BatchIDs) == 0 || col == "" {
		return p, nil
	}
	if len(v.arrowSc.FieldIndices(col)) != 1 {
		return p, fmt.Errorf("the table's source column %q (%s) is not in its schema yet: no batch loaded holds its key there", col, PropSourceColumn)
	}
	p.Where = append(slices.Clone(p.Where), WhereColumn{Column: col, Values: slices.Clone(p.BatchIDs)})
	p.BatchIDs = nil
	return p, nil
}

// Format renders p with timeCol as the time column's name, e.g.
// (device = "d1" OR device = "d2") AND time >= 2026-01-05T10:00:00Z; the
// values of the columns quoted reports true of are quoted (strings), the
// others written as given (numbers, dates). A nil quoted quotes them all.
func (p DeletePredicate) Format(timeCol string, quoted func(column string) bool) string {
	var terms []string
	anyOf := func(column string, values []string, quote bool) {
		var vs []string
		for _, v := range values {
			if quote {
				v = strconv.Quote(v)
			}
			vs = append(vs, column+" = "+v)
		}
		t := strings.Join(vs, " OR ")
		if len(vs) > 1 {
			t = "(" + t + ")"
		}
		terms = append(terms, t)
	}
	for _, w := range p.Where {
		anyOf(w.Column, w.Values, quoted == nil || quoted(w.Column))
	}
	if !p.From.IsZero() {
		terms = append(terms, timeCol+" >= "+p.From.UTC().Format(time.RFC3339Nano))
	}
	if !p.To.IsZero() {
		terms = append(terms, timeCol+" < "+p.To.UTC().Format(time.RFC3339Nano))
	}
	if len(p.BatchIDs) > 0 {
		anyOf("batch-id", p.BatchIDs, true)
	}
	return strings.Join(terms, " AND ")
}

// stringColumns reports whether a column of v's schema holds text (its
// values are quoted in a predicate's text).
func stringColumns(v tableView) func(string) bool {
	sc := v.meta.Write().CurrentSchema()
	return func(column string) bool {
		f, ok := sc.FindFieldByName(column)
		if !ok {
			return true
		}
		switch f.Type.(type) {
		case iceberg.StringType, iceberg.UUIDType, iceberg.BinaryType:
			return true
		}
		return false
	}
}

// deleteRecord is a predicate as SummaryDeletePredicateJSON records it.
// BatchIDs are only set for batches selected by their data files (a table
// without a source column), which were all of the delete's inputs.
type deleteRecord struct {
	Where    []WhereColumn `json:"where,omitempty"`
	From     *time.Time    `json:"from,omitempty"`
	To       *time.Time    `json:"to,omitempty"`
	BatchIDs []string      `json:"batch_ids,omitempty"`
}

// record is p as SummaryDeletePredicateJSON holds it.
func (p DeletePredicate) record() (string, error) {
	r := deleteRecord{Where: p.Where, BatchIDs: p.BatchIDs}
	if !p.From.IsZero() {
		at := p.From.UTC()
		r.From = &at
	}
	if !p.To.IsZero() {
		at := p.To.UTC()
		r.To = &at
	}
	b, err := json.Marshal(r)
	return string(b), err
}

// parseDeleteRecord reads a SummaryDeletePredicateJSON value.
func parseDeleteRecord(s string) (DeletePredicate, error) {
	var r deleteRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return DeletePredicate{}, fmt.Errorf("%s: %w", SummaryDeletePredicateJSON, err)
	}
	p := DeletePredicate{Where: r.Where, BatchIDs: r.BatchIDs}
	if r.From != nil {
		p.From = *r.From
	}
	if r.To != nil {
		p.To = *r.To
	}
	return p, nil
}

// DeleteOptions tune Delete.
type DeleteOptions struct {
	Predicate DeletePredicate
	// DryRun reads the files the predicate may match and reports what
	// would be removed; it writes nothing.
	DryRun bool
	// Progress, when set, is called once the files to read are known and
	// after each file.
	Progress func(DeleteProgress)

	commit CommitOptions // tests: another writer's commit before the write
}

// DeleteProgress is how far a delete is: of the Files (Bytes) it reads
// (those its partition and column statistics do not rule out), it has
// read FilesRead (BytesRead), in which Rows matched.
type DeleteProgress struct {
	FilesRead, Files int
	BytesRead, Bytes int64
	Rows             int64
}

// DeleteResult is what Delete did (or would do, in a dry run).
type DeleteResult struct {
	Predicate string // as the snapshot summary records it
	// Rewritten are the files written again without their matching rows,
	// Dropped those whose rows all matched; Bytes is their size (what is
	// rewritten or dropped). Rows counts the rows removed.
	Rewritten, Dropped int
	Rows, Bytes        int64
	// Read counts the data files read; Skipped those their partition or
	// column statistics excluded (not read).
	Read, Skipped int
	SnapshotID    int64 // 0 when nothing was committed
	// NotLoaded are the batch ids of the predicate that no snapshot of the
	// current ancestry and no record of the load history (its dedupe
	// window) knows: misspelt, never loaded, or loaded long ago.
	NotLoaded []string
	Version   int
}

// Delete removes the rows opts.Predicate matches (see above), in one
// snapshot; with DryRun it only reports them. On success the Table holds
// the new version.
//
// Errors: ErrNoPredicate, a predicate naming an unknown column or a value
// its type cannot hold, a table of another format version than 2 or with
// row-level delete files, reading or writing files, and those of the
// commit protocol.
func (t *Table) Delete(ctx context.Context, opts DeleteOptions) (DeleteResult, error) {
	if opts.Predicate.Empty() {
		return DeleteResult{}, ErrNoPredicate
	}
	for round := 1; ; round++ {
		res, err := t.deleteRound(ctx, opts)
		if errors.Is(err, errDeleteInputGone) && round < deleteRounds {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("delete from %s: %w", t.name, err)
		}
		return res, nil
	}
}

// deleteRewrite is one input file of a delete: its rows matched, and the
// files written with the others.
type deleteRewrite struct {
	input   iceberg.DataFile
	seq     int64 // the input's data sequence number
	matched int64
	outputs []iceberg.DataFile
}

// deleteRound plans the delete on the newest version, writes the new
// files and commits them.
func (t *Table) deleteRound(ctx context.Context, opts DeleteOptions) (res DeleteResult, err error) {
	if err := t.Refresh(ctx); err != nil {
		return res, err
	}
	v := t.view()
	h := v.meta
	res.Version = t.Version()
	for _, key := range opts.Predicate.BatchIDs {
		if _, ok, err := t.FindLoaded(ctx, key); err != nil {
			return res, err
		} else if !ok {
			res.NotLoaded = append(res.NotLoaded, key)
		}
	}
	pred, err := opts.Predicate.withBatch(v)
	if err != nil {
		return res, err
	}
	if len(pred.BatchIDs) > 0 && len(res.NotLoaded) > 0 {
		return res, fmt.Errorf("%w: %s: no snapshot loaded it, and the load history (timelake.dedupe-window) does not know it; tables history lists what was loaded",
			ErrBatchNotLoaded, strings.Join(res.NotLoaded, ", "))
	}
	res.Predicate = pred.Format(v.contract.TimeColumn, stringColumns(v))
	if h.Write().Version() != 2 {
		return res, fmt.Errorf("rows are deleted from tables of format version 2 only, not %d", h.Write().Version())
	}
	f, err := newRowFilter(v, pred)
	if err != nil {
		return res, err
	}
	files, mfs, err := t.liveFiles(ctx, h, nil)
	if err != nil {
		return res, err
	}
	if len(pred.BatchIDs) > 0 {
		f.files = map[string]bool{}
		for _, key := range pred.BatchIDs {
			of, err := batchFiles(h, files, key)
			if err != nil {
				return res, err
			}
			maps.Copy(f.files, of)
		}
	}
	for _, mf := range mfs {
		if mf.ManifestContent() == iceberg.ManifestContentDeletes && mf.AddedDataFiles()+mf.ExistingDataFiles() > 0 {
			return res, errors.New("the table has row-level delete files, whose rows a rewrite would bring back; " +
				"rewrite it with the engine that wrote them first (e.g. Spark's rewrite_data_files)")
		}
	}
	var rewrites []deleteRewrite
	record, err := pred.record()
	if err != nil {
		return res, err
	}
	m := &deleteMutation{rewriteMutation: rewriteMutation{t: t, attempts: map[int]*rewriteAttempt{}},
		predicate: res.Predicate, record: record, dedupe: readDedup(h.Props())}
	defer func() {
		var paths []string
		for _, r := range rewrites {
			paths = append(paths, dataFilePaths(r.outputs)...)
		}
		m.removeUncommitted(ctx, res.SnapshotID != 0, paths)
	}()
	specs := map[int]iceberg.PartitionSpec{}
	for _, s := range h.Write().PartitionSpecs() {
		specs[s.ID()] = s
	}
	var candidates []liveFile
	var progress DeleteProgress
	for _, lf := range files {
		df := lf.Entry.DataFile()
		if df.ContentType() != iceberg.EntryContentData {
			continue
		}
		if f.excludes(specs[int(df.SpecID())], df) {
			res.Skipped++
			continue
		}
		candidates = append(candidates, lf)
		progress.Files++
		progress.Bytes += df.FileSizeBytes()
	}
	report := func() {
		if opts.Progress != nil {
			opts.Progress(progress)
		}
	}
	report()
	for _, lf := range candidates {
		df := lf.Entry.DataFile()
		res.Read++
		r := deleteRewrite{input: df, seq: lf.Entry.SequenceNum()}
		// The predicate's columns first: a file is written again only
		// when a row matches and not all do (then it is dropped whole).
		if r.matched, err = t.countMatches(ctx, df, f); err != nil {
			return res, err
		}
		if r.matched > 0 && r.matched < df.Count() && !opts.DryRun {
			var again int64
			r.outputs, err = t.filterFile(ctx, v, df, func(rec arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
				return f.runs(rec, func(times *array.Timestamp, i int) bool {
					if f.matches(rec, times, i) {
						again++
						return false
					}
					return true
				})
			}, true)
			rewrites = append(rewrites, r)
			if err == nil && again != r.matched {
				err = fmt.Errorf("%s: %d rows matched reading the predicate's columns, %d reading all", df.FilePath(), r.matched, again)
			}
			if err != nil {
				return res, err
			}
		} else if r.matched > 0 {
			rewrites = append(rewrites, r)
		}
		progress.FilesRead++
		progress.BytesRead += df.FileSizeBytes()
		progress.Rows += r.matched
		report()
	}
	for _, r := range rewrites {
		if r.matched == 0 {
			continue
		}
		res.Rows += r.matched
		res.Bytes += r.input.FileSizeBytes()
		if r.matched == r.input.Count() {
			res.Dropped++
		} else {
			res.Rewritten++
		}
	}
	if opts.DryRun || res.Rows == 0 {
		return res, nil
	}
	m.deleted = map[string]bool{}
	for _, r := range rewrites {
		if r.matched > 0 {
			m.deleted[r.input.FilePath()] = true
			m.inputs = append(m.inputs, r.input)
			m.added = append(m.added, r.outputs...)
			if len(r.outputs) > 0 {
				m.rewrites = append(m.rewrites, r)
			}
		}
	}
	m.rows = res.Rows
	res.SnapshotID, res.Version, err = m.commit(ctx, m, opts.commit)
	if errors.Is(err, errDeleteLanded) {
		// Done by the attempt that landed: the newest version, and that
		// attempt's snapshot when the table still has it.
		if err := t.Refresh(ctx); err != nil {
			return res, err
		}
		res.SnapshotID, res.Version = 0, t.Version()
		for _, a := range m.attempts {
			if a != nil && t.view().meta.SnapshotIDTaken(a.snapshotID) {
				res.SnapshotID = a.snapshotID
			}
		}
		return res, nil
	}
	return res, err
}

// removeUncommitted deletes the data files paths an operation wrote for
// its commit when the commit did not happen (committed false), unless the
// commit ended without learning whether a write landed (m.unknown: they may
// be referenced). It runs on cancellation paths too, within a bounded time.
func (m *rewriteMutation) removeUncommitted(ctx context.Context, committed bool, paths []string) {
	if m.unknown || committed {
		return
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	m.t.removeFiles(cctx, paths)
}

// commit commits outer (the mutation that embeds m) and returns the
// snapshot of the attempt that won (0 when none did) and the version after.
// A commit that landed returns its snapshot also with an error (the Table
// could not hold the version after it): the files it wrote are the
// table's.
func (m *rewriteMutation) commit(ctx context.Context, outer mutation, opts CommitOptions) (snapshotID int64, version int, err error) {
	cr, err := m.t.commit(ctx, outer, opts)
	if a := m.attempts[cr.Attempt]; a != nil && cr.Committed {
		snapshotID = a.snapshotID
	}
	if err != nil {
		return snapshotID, 0, err
	}
	return snapshotID, cr.Version, nil
}

// filterFile reads df and passes each batch of its rows to pick, which
// yields the runs of rows to keep; with write, the kept rows are written
// as new data files (in the order read: a file's rows are sorted, and so
// is what is left of them), which it returns. It checks that the rows
// read are those df's manifest entry counts.
func (t *Table) filterFile(ctx context.Context, v tableView, df iceberg.DataFile,
	pick func(arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error], write bool,
) ([]iceberg.DataFile, error) {
	scan := t.Iceberg().Scan(table.WithArrowBatchSize(mergeReadRows), table.WithMaxConcurrency(1))
	_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", df.FilePath(), err)
	}
	var read int64
	kept := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range conformed(it, v.arrowSc) {
			if err != nil {
				yield(nil, err)
				return
			}
			read += rec.NumRows()
			stop := false
			for part, err := range pick(rec) {
				if stop = !yield(part, err) || err != nil; stop {
					break
				}
			}
			rec.Release()
			if stop {
				return
			}
		}
	}
	var outputs []iceberg.DataFile
	if !write {
		for rec, err := range kept {
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", df.FilePath(), err)
			}
			rec.Release()
		}
	} else {
		for out, err := range t.writeRecords(ctx, v, kept) {
			if err != nil {
				return outputs, fmt.Errorf("rewrite %s: %w", df.FilePath(), err)
			}
			outputs = append(outputs, out)
		}
	}
	if read != df.Count() {
		return outputs, fmt.Errorf("read %d rows from %s whose manifest counts %d", read, df.FilePath(), df.Count())
	}
	return outputs, nil
}

// deleteMutation commits a delete's snapshot on the newest version: its
// input files removed, the files written without the matching rows added.
// Its requirement, checked at every attempt: every input file is still
// live (errDeleteInputGone). The files of attempts that lost are deleted
// as a compaction's are (rewriteMutation.cleanUp).
type deleteMutation struct {
	rewriteMutation
	predicate string
	record    string // SummaryDeletePredicateJSON
	inputs    []iceberg.DataFile
	deleted   map[string]bool
	added     []iceberg.DataFile
	rewrites  []deleteRewrite // the inputs rewritten (with outputs)
	rows      int64
	// dedupe: the table sets timelake.read-dedup; each input's new files
	// keep its data sequence number, which orders their rows against the
	// batches of other files (dedupe.go), as a compaction's do.
	dedupe bool
}

func (m *deleteMutation) build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	if m.producer == nil {
		m.producer = newDeleteProducer(t)
		if len(m.added) > 0 {
			m.producer = newSnapshotProducer(t, table.OpOverwrite)
		}
	}
	parent, err := base.CurrentSnapshot()
	if err != nil {
		return nil, err
	}
	if parent == nil {
		return nil, errDeleteInputGone
	}
	files, mfs, err := t.liveFiles(ctx, base, nil)
	if err != nil {
		return nil, err
	}
	live := livePaths(files)
	if err := m.heldOwnFiles(ctx, base, live, mfs, m.added); err != nil {
		return nil, err
	}
	for _, df := range m.inputs {
		if !live[df.FilePath()] {
			if m.seen {
				return nil, errDeleteLanded
			}
			return nil, errDeleteInputGone
		}
	}
	a := &rewriteAttempt{snapshotID: newSnapshotID(base, nil)}
	m.attempts[attempt] = a
	change := fileChange{deleted: m.deleted, changedParts: changedPartitions(m.inputs),
		props: iceberg.Properties{SummaryDeletePredicate: m.predicate, SummaryDeletedRows: strconv.FormatInt(m.rows, 10),
			SummaryDeletePredicateJSON: m.record}}
	switch {
	case len(m.added) == 0:
	case m.dedupe:
		for _, r := range m.rewrites {
			change.added = append(change.added, addedFiles{files: r.outputs, dataSeq: &r.seq})
		}
	default:
		change.added = []addedFiles{{files: m.added}}
	}
	snap, refs, err := m.producer.rewrite(ctx, base, parent, mfs, a.snapshotID, attempt, change)
	if err != nil {
		return nil, err
	}
	a.refs = append(a.refs, refs...)
	return tablemeta.AddSnapshots(nil, snap), nil
}

// livePaths is the set of the paths of files.
func livePaths(files []liveFile) map[string]bool {
	live := make(map[string]bool, len(files))
	for _, f := range files {
		live[f.Entry.DataFile().FilePath()] = true
	}
	return live
}

// rowFilter is a delete predicate resolved against a table's schema.
type rowFilter struct {
	timeCol    int // in the Arrow schema
	timeName   string
	timeID     int // field id
	timeType   iceberg.Type
	unit       arrow.TimeUnit
	from, to   *arrow.Timestamp
	fromB, toB []byte // the bounds as column statistics hold them
	where      []whereFilter
	// files, when not nil, are the only data files that may hold a
	// selected row (a batch's: batchFiles).
	files map[string]bool
}

// batchFiles returns the paths of the data files the snapshot of batch
// key added, in the current ancestry of h, when all of them are among the
// live files; else ErrBatchNotApart, saying why.
func batchFiles(h *tablemeta.Indexed, live []liveFile, key string) (map[string]bool, error) {
	i, ok := h.Batches()[key]
	if !ok {
		return nil, fmt.Errorf("%w: no snapshot of the current ancestry loaded %s (it expired, or the file was never loaded); %s",
			ErrBatchNotApart, key, sourceColumnHint)
	}
	s, err := h.Snapshot(i)
	if err != nil {
		return nil, err
	}
	var added int64
	if s.Summary != nil {
		added = summaryInt(s.Summary.Properties, summaryAddedDataFiles)
	}
	files := map[string]bool{}
	for _, lf := range live {
		if id := lf.Entry.SnapshotID(); id == s.SnapshotID && lf.Entry.DataFile().ContentType() == iceberg.EntryContentData {
			files[lf.Entry.DataFile().FilePath()] = true
		}
	}
	if added == 0 || int64(len(files)) != added {
		return nil, fmt.Errorf("%w: %d of the %d data files snapshot %d added for %s are live (a compaction or a delete rewrote the others); %s",
			ErrBatchNotApart, len(files), added, s.SnapshotID, key, sourceColumnHint)
	}
	return files, nil
}

// whereFilter is one column of the predicate: its values as the rows hold
// them (rowKey) and as column statistics do.
type whereFilter struct {
	col     int
	name    string
	id      int
	keys    map[any]bool
	bounds  [][]byte
	compare func(a, b []byte) int
}

func newRowFilter(v tableView, p DeletePredicate) (*rowFilter, error) {
	sc := v.meta.Write().CurrentSchema()
	tf, ok := sc.FindFieldByName(v.contract.TimeColumn)
	idx := v.arrowSc.FieldIndices(v.contract.TimeColumn)
	if !ok || len(idx) != 1 {
		return nil, fmt.Errorf("the table has no time column %q", v.contract.TimeColumn)
	}
	ts, ok := v.arrowSc.Field(idx[0]).Type.(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("time column %s is %s, not a timestamp", tf.Name, tf.Type)
	}
	f := &rowFilter{timeCol: idx[0], timeName: tf.Name, timeID: tf.ID, timeType: tf.Type, unit: ts.Unit}
	bound := func(at time.Time) (*arrow.Timestamp, []byte, error) {
		if at.IsZero() {
			return nil, nil, nil
		}
		v, err := arrow.TimestampFromTime(at, ts.Unit)
		if err != nil {
			return nil, nil, err
		}
		return &v, binary.LittleEndian.AppendUint64(nil, uint64(v)), nil
	}
	var err error
	if f.from, f.fromB, err = bound(p.From); err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	if f.to, f.toB, err = bound(p.To); err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	if f.from != nil && f.to != nil && *f.to <= *f.from {
		return nil, fmt.Errorf("--to %s is not after --from %s", p.To.Format(time.RFC3339), p.From.Format(time.RFC3339))
	}
	for _, w := range p.Where {
		field, ok := sc.FindFieldByName(w.Column)
		idx := v.arrowSc.FieldIndices(w.Column)
		if !ok || len(idx) != 1 {
			return nil, fmt.Errorf("--where: the table has no column %q", w.Column)
		}
		wf := whereFilter{col: idx[0], name: field.Name, id: field.ID, keys: map[any]bool{}, compare: boundComparator(field.Type)}
		for _, s := range w.Values {
			lit, err := iceberg.StringLiteral(s).To(field.Type)
			if err != nil {
				return nil, fmt.Errorf("--where %s=%s: column %s is %s: expected %s", w.Column, s, w.Column, field.Type, expectedValue(field.Type))
			}
			key, ok := literalKey(lit.Any())
			if !ok {
				return nil, fmt.Errorf("--where %s: columns of type %s cannot be matched", w.Column, field.Type)
			}
			b, err := lit.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("--where %s=%s: %w", w.Column, s, err)
			}
			wf.keys[key] = true
			wf.bounds = append(wf.bounds, b)
		}
		f.where = append(f.where, wf)
	}
	return f, nil
}

// expectedValue says what a value of type t is written as.
func expectedValue(t iceberg.Type) string {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		return "an integer such as 42"
	case iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		return "a number such as 21.5"
	case iceberg.BooleanType:
		return "true or false"
	case iceberg.DateType:
		return "a date such as 2026-01-05"
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return "an RFC 3339 time with its zone such as 2026-01-05T10:00:00Z"
	}
	return "a value of type " + t.String()
}

// literalKey is an Iceberg literal's value as rowKey gives a row's.
func literalKey(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool:
		return x, true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case iceberg.Date:
		return int64(x), true
	case iceberg.Timestamp:
		return int64(x), true
	}
	return nil, false
}

// rowKey is row i of a as a comparable value; false for a null or a type
// no predicate matches.
func rowKey(a arrow.Array, i int) (any, bool) {
	if a.IsNull(i) {
		return nil, false
	}
	switch c := a.(type) {
	case *array.String:
		return c.Value(i), true
	case *array.Boolean:
		return c.Value(i), true
	case *array.Int32:
		return int64(c.Value(i)), true
	case *array.Int64:
		return c.Value(i), true
	case *array.Float32:
		return float64(c.Value(i)), true
	case *array.Float64:
		return c.Value(i), true
	case *array.Date32:
		return int64(c.Value(i)), true
	case *array.Timestamp:
		return int64(c.Value(i)), true
	}
	return nil, false
}

// matches reports whether row i of rec is one the predicate selects.
func (f *rowFilter) matches(rec arrow.RecordBatch, times *array.Timestamp, i int) bool {
	if f.from != nil || f.to != nil {
		if times.IsNull(i) {
			return false
		}
		ts := times.Value(i)
		if f.from != nil && ts < *f.from || f.to != nil && ts >= *f.to {
			return false
		}
	}
	for _, w := range f.where {
		k, ok := rowKey(rec.Column(w.col), i)
		if !ok || !w.keys[k] {
			return false
		}
	}
	return true
}

// columns are the names of the columns f reads.
func (f *rowFilter) columns() []string {
	cols := []string{f.timeName}
	for _, w := range f.where {
		if !slices.Contains(cols, w.name) {
			cols = append(cols, w.name)
		}
	}
	return cols
}

// on returns f with its column indexes in sc, which holds its columns
// (a projection of the table's).
func (f *rowFilter) on(sc *arrow.Schema) (*rowFilter, error) {
	index := func(name string) (int, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("column %q not read", name)
		}
		return idx[0], nil
	}
	g := *f
	var err error
	if g.timeCol, err = index(f.timeName); err != nil {
		return nil, err
	}
	g.where = slices.Clone(f.where)
	for i := range g.where {
		if g.where[i].col, err = index(g.where[i].name); err != nil {
			return nil, err
		}
	}
	return &g, nil
}

// countMatches reads only the columns of df that f looks at and counts
// the rows it matches: a delete writes a file again only when one does.
func (t *Table) countMatches(ctx context.Context, df iceberg.DataFile, f *rowFilter) (int64, error) {
	scan := t.Iceberg().Scan(table.WithSelectedFields(f.columns()...), table.WithArrowBatchSize(mergeReadRows), table.WithMaxConcurrency(1))
	_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", df.FilePath(), err)
	}
	var read, matched int64
	var on *rowFilter
	for rec, err := range it {
		if err == nil && on == nil {
			on, err = f.on(rec.Schema())
		}
		if err != nil {
			if rec != nil {
				rec.Release()
			}
			return 0, fmt.Errorf("read %s: %w", df.FilePath(), err)
		}
		read += rec.NumRows()
		times, ok := rec.Column(on.timeCol).(*array.Timestamp)
		if !ok {
			err := fmt.Errorf("read %s: time column is %s, expected a timestamp", df.FilePath(), rec.Column(on.timeCol).DataType())
			rec.Release()
			return 0, err
		}
		for i := range int(rec.NumRows()) {
			if on.matches(rec, times, i) {
				matched++
			}
		}
		rec.Release()
	}
	if read != df.Count() {
		return 0, fmt.Errorf("read %d rows from %s whose manifest counts %d", read, df.FilePath(), df.Count())
	}
	return matched, nil
}

// runs yields the runs of rec's rows keep selects (given the time
// column and a row), as slices of rec.
func (f *rowFilter) runs(rec arrow.RecordBatch, keep func(times *array.Timestamp, i int) bool) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		times, ok := rec.Column(f.timeCol).(*array.Timestamp)
		if !ok {
			yield(nil, fmt.Errorf("time column is %s, expected a timestamp", rec.Column(f.timeCol).DataType()))
			return
		}
		n := int(rec.NumRows())
		start := 0
		for i := 0; i <= n; i++ {
			if i < n && keep(times, i) {
				continue
			}
			if i > start && !yield(rec.NewSlice(int64(start), int64(i)), nil) {
				return
			}
			start = i + 1
		}
	}
}

// excludes reports whether df (written with partition spec spec) holds no
// row the predicate selects, by its partition and column statistics; a
// missing statistic excludes nothing.
func (f *rowFilter) excludes(spec iceberg.PartitionSpec, df iceberg.DataFile) bool {
	if f.files != nil && !f.files[df.FilePath()] {
		return true
	}
	if f.from != nil {
		if end, ok := maintenance.PartitionEnd(spec, f.timeID, df.Partition()); ok && !end.After(f.from.ToTime(f.unit)) {
			return true
		}
	}
	lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
	timeCmp := boundComparator(f.timeType)
	if lo, hi := lower[f.timeID], upper[f.timeID]; timeCmp != nil {
		if f.fromB != nil && hi != nil && timeCmp(hi, f.fromB) < 0 {
			return true
		}
		if f.toB != nil && lo != nil && timeCmp(lo, f.toB) >= 0 {
			return true
		}
	}
	for _, w := range f.where {
		lo, hi := lower[w.id], upper[w.id]
		if w.compare == nil || lo == nil || hi == nil {
			continue
		}
		outside := true
		for _, b := range w.bounds {
			outside = outside && (w.compare(b, lo) < 0 || w.compare(b, hi) > 0)
		}
		if outside {
			return true
		}
	}
	return false
}

// Deletion is a delete's snapshot in the current ancestry (tables history).
type Deletion struct {
	SnapshotID int64
	At         time.Time // the snapshot's commit, UTC
	Predicate  string    // SummaryDeletePredicate
	Rows       int64     // SummaryDeletedRows
}

// Deletions returns the deletes of the current ancestry, newest first: the
// snapshots whose summary records a delete predicate. A delete undone by a
// rollback is not in the ancestry, and one undone by UndoDelete is left
// out: neither is listed.
func (t *Table) Deletions() []Deletion {
	var out []Deletion
	undone := map[string]bool{}
	for _, s := range ancestry(t.Metadata()) {
		if s.Summary == nil {
			continue
		}
		if id, ok := s.Summary.Properties[SummaryUndoneDelete]; ok {
			undone[id] = true
		}
		if _, ok := s.Summary.Properties[SummaryDeletePredicate]; !ok || undone[strconv.FormatInt(s.SnapshotID, 10)] {
			continue
		}
		out = append(out, deletionOf(&s))
	}
	return out
}

// deletionOf describes the delete of snapshot s.
func deletionOf(s *table.Snapshot) Deletion {
	props := s.Summary.Properties
	return Deletion{SnapshotID: s.SnapshotID, At: time.UnixMilli(s.TimestampMs).UTC(), Predicate: props[SummaryDeletePredicate],
		Rows: summaryInt(props, SummaryDeletedRows)}
}
