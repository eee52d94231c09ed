package lake

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// Undoing a row delete (timelake tables rollback, docs/tables.md): the
// rows a delete removed are written again and appended in a snapshot of
// their own, so that everything committed since the delete stays (an
// Iceberg rollback to the delete's parent would drop the batches loaded
// since, whose landing files are gone). The rows are those of the files
// the delete replaced (its snapshot's DELETED manifest entries, readable
// while the snapshot before the delete is kept) that its recorded
// predicate (SummaryDeletePredicateJSON) matches; their count must be the
// delete's recorded one. When a later delete of the ancestry, itself not
// undone, matches some of them too, the undo is refused: that delete is
// undone first (the deletes that overlap are undone newest first, so that
// no row is withheld by a delete undone afterwards). Under timelake.read-dedup the
// new files keep the data sequence number of the file each row came from,
// so that a newer batch's row of the same series and time still wins.

// Snapshot summary properties of the snapshot that undoes a delete.
const (
	// SummaryUndoneDelete is the id of the delete's snapshot.
	SummaryUndoneDelete = "timelake.undone-delete"
	// SummaryRestoredRows counts the rows written again.
	SummaryRestoredRows = "timelake.restored-rows"
)

// ErrNotUndoable refuses to undo a snapshot that is not a delete of the
// current ancestry whose rows can be selected again.
var ErrNotUndoable = errors.New("cannot undo")

// UndoDeleteOptions tune UndoDelete.
type UndoDeleteOptions struct {
	// DryRun reads the files the delete replaced and reports the rows
	// that would come back; it writes nothing.
	DryRun bool

	commit CommitOptions // tests: another writer's commit before the write
}

// UndoDeleteResult is what UndoDelete did (or would do, in a dry run).
type UndoDeleteResult struct {
	Delete Deletion // the delete undone
	// Rows counts the rows written again.
	Rows int64
	// Read counts the files the delete replaced, read again; Written the
	// data files written.
	Read, Written int
	SnapshotID    int64 // the snapshot that restored the rows; 0 when none was committed
	Version       int
}

// UndoDelete brings back the rows the delete of snapshot deleteID
// removed (see above); with DryRun it only reports them. On success the
// Table holds the new version.
//
// Errors (ErrNotUndoable): deleteID is not a row delete of the current
// ancestry, was undone already, or the files it replaced are gone (the
// snapshot before it expired); and those of reading and writing files and
// of the commit protocol.
func (t *Table) UndoDelete(ctx context.Context, deleteID int64, opts UndoDeleteOptions) (res UndoDeleteResult, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("undo the delete of snapshot %d of %s: %w", deleteID, t.name, err)
		}
	}()
	if err := t.Refresh(ctx); err != nil {
		return res, err
	}
	v := t.view()
	res.Version = t.Version()
	meta := t.Metadata()
	target, later, err := findUndoable(meta, deleteID)
	if err != nil {
		return res, err
	}
	props := target.Summary.Properties
	res.Delete = deletionOf(target)
	pred, err := parseDeleteRecord(props[SummaryDeletePredicateJSON])
	if err != nil {
		return res, err
	}
	// A batch selected by its data files: the delete's inputs were those
	// files, so the other conditions select the rows.
	pred.BatchIDs = nil
	f, err := newRowFilter(v, pred)
	if err != nil {
		return res, fmt.Errorf("%w: the delete's predicate %s: %v", ErrNotUndoable, res.Delete.Predicate, err)
	}
	var laterFilters []*rowFilter
	for _, d := range later {
		// A later delete by a batch's data files matches none of these
		// rows: those files were live at its time, so none was an input
		// of this delete.
		if len(d.predicate.BatchIDs) > 0 {
			continue
		}
		lf, err := newRowFilter(v, d.predicate)
		if err != nil {
			return res, fmt.Errorf("%w: the predicate of the later delete of snapshot %d: %v", ErrNotUndoable, d.snapshotID, err)
		}
		laterFilters = append(laterFilters, lf)
	}
	overlap := make([]int64, len(laterFilters))
	if target.ParentSnapshotID == nil {
		return res, fmt.Errorf("%w: snapshot %d has no parent", ErrNotUndoable, deleteID)
	}
	if meta.SnapshotByID(*target.ParentSnapshotID) == nil {
		return res, fmt.Errorf("%w: the snapshot before it (%d) expired, and with it the files the delete replaced", ErrNotUndoable, *target.ParentSnapshotID)
	}
	removed, err := t.replacedFiles(ctx, target)
	if err != nil {
		return res, err
	}
	m := &undoMutation{rewriteMutation: rewriteMutation{t: t, attempts: map[int]*rewriteAttempt{}}, deleteID: deleteID}
	defer func() {
		var paths []string
		for _, a := range m.added {
			paths = append(paths, dataFilePaths(a.files)...)
		}
		m.removeUncommitted(ctx, res.SnapshotID != 0, paths)
	}()
	dedupe := readDedup(v.meta.Props())
	var matched int64
	for _, e := range removed {
		df := e.DataFile()
		res.Read++
		outputs, err := t.filterFile(ctx, v, df, func(rec arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
			return f.runs(rec, func(times *array.Timestamp, i int) bool {
				if !f.matches(rec, times, i) {
					return false
				}
				matched++
				for j, lf := range laterFilters {
					if lf.matches(rec, times, i) {
						overlap[j]++
					}
				}
				res.Rows++
				return true
			})
		}, !opts.DryRun)
		if len(outputs) > 0 {
			a := addedFiles{files: outputs}
			if dedupe {
				seq := e.SequenceNum()
				a.dataSeq = &seq
			}
			m.added = append(m.added, a)
			res.Written += len(outputs)
		}
		if err != nil {
			return res, fmt.Errorf("%w: a file the delete replaced: %v", ErrNotUndoable, err)
		}
	}
	for j, n := range overlap {
		if n > 0 {
			return res, fmt.Errorf("%w: %d of its rows match the later delete of snapshot %d (%s) too: undo that one first",
				ErrNotUndoable, n, later[j].snapshotID, later[j].formatted)
		}
	}
	if want := summaryInt(props, SummaryDeletedRows); matched != want {
		return res, fmt.Errorf("%w: the delete's predicate selects %d rows of the %d files it replaced, where it recorded %d deleted",
			ErrNotUndoable, matched, len(removed), want)
	}
	if opts.DryRun || res.Rows == 0 {
		return res, nil
	}
	m.rows = res.Rows
	res.SnapshotID, res.Version, err = m.commit(ctx, m, opts.commit)
	return res, err
}

// Restore is the undo of a delete in the current ancestry (tables
// history): the snapshot that brought the rows back.
type Restore struct {
	SnapshotID int64
	At         time.Time // the snapshot's commit, UTC
	Delete     int64     // the delete's snapshot
	Predicate  string    // the delete's; "" once its snapshot expired
	Rows       int64     // SummaryRestoredRows
}

// Restores returns the undos of deletes of the current ancestry, newest
// first.
func (t *Table) Restores() []Restore {
	meta := t.Metadata()
	var out []Restore
	for _, s := range ancestry(meta) {
		if s.Summary == nil {
			continue
		}
		id, ok := s.Summary.Properties[SummaryUndoneDelete]
		if !ok {
			continue
		}
		r := Restore{SnapshotID: s.SnapshotID, At: time.UnixMilli(s.TimestampMs).UTC(), Rows: summaryInt(s.Summary.Properties, SummaryRestoredRows)}
		r.Delete, _ = strconv.ParseInt(id, 10, 64)
		if d := meta.SnapshotByID(r.Delete); d != nil && d.Summary != nil {
			r.Predicate = d.Summary.Properties[SummaryDeletePredicate]
		}
		out = append(out, r)
	}
	return out
}

// findUndoable returns snapshot deleteID of meta's current ancestry, a row
// delete that records its predicate and was not undone, and the predicates
// of the deletes after it, not undone, oldest last. Errors: ErrNotUndoable,
// saying why.
func findUndoable(meta table.Metadata, deleteID int64) (*table.Snapshot, []laterDelete, error) {
	undone := map[int64]int64{} // delete -> the snapshot that undid it
	var later []laterDelete
	for _, s := range ancestry(meta) {
		var props iceberg.Properties
		if s.Summary != nil {
			props = s.Summary.Properties
		}
		if s.SnapshotID == deleteID {
			if _, ok := props[SummaryDeletePredicate]; !ok {
				op := "without a summary"
				if s.Summary != nil {
					op = string(s.Summary.Operation)
					if strings.IndexByte("aeiou", op[0]) >= 0 {
						op = "an " + op
					} else {
						op = "a " + op
					}
					if id, ok := props[SummaryBatchID]; ok {
						op += " (the load of " + id + ")"
					}
					if id, ok := props[SummaryUndoneDelete]; ok {
						op += " (the undo of the delete of snapshot " + id + ")"
					}
				}
				return nil, nil, fmt.Errorf("%w: snapshot %d is %s, not a delete of rows by timelake tables delete", ErrNotUndoable, deleteID, op)
			}
			if by, ok := undone[deleteID]; ok {
				return nil, nil, fmt.Errorf("%w: snapshot %d undid it already", ErrNotUndoable, by)
			}
			if _, ok := props[SummaryDeletePredicateJSON]; !ok {
				return nil, nil, fmt.Errorf("%w: its snapshot does not record the predicate in full (%s)", ErrNotUndoable, SummaryDeletePredicateJSON)
			}
			return &s, later, nil
		}
		if id, ok := props[SummaryUndoneDelete]; ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				undone[n] = s.SnapshotID
			}
		}
		if _, ok := props[SummaryDeletePredicate]; !ok {
			continue
		}
		if _, ok := undone[s.SnapshotID]; ok {
			continue
		}
		rec, ok := props[SummaryDeletePredicateJSON]
		if !ok {
			return nil, nil, fmt.Errorf("%w: the later delete of snapshot %d does not record its predicate in full (%s), so the rows it removed are not known",
				ErrNotUndoable, s.SnapshotID, SummaryDeletePredicateJSON)
		}
		p, err := parseDeleteRecord(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: the later delete of snapshot %d: %v", ErrNotUndoable, s.SnapshotID, err)
		}
		later = append(later, laterDelete{snapshotID: s.SnapshotID, predicate: p, formatted: props[SummaryDeletePredicate]})
	}
	if meta.SnapshotByID(deleteID) != nil {
		return nil, nil, fmt.Errorf("%w: snapshot %d is not in the current ancestry (a rollback left it)", ErrNotUndoable, deleteID)
	}
	return nil, nil, fmt.Errorf("%w: the table has no snapshot %d (it expired, or it is another table's); tables history --status deleted lists the deletes",
		ErrNotUndoable, deleteID)
}

// laterDelete is a delete after the one undone.
type laterDelete struct {
	snapshotID int64
	predicate  DeletePredicate
	formatted  string // SummaryDeletePredicate
}

// replacedFiles returns the DELETED manifest entries of snapshot s: the
// data files it removed.
func (t *Table) replacedFiles(ctx context.Context, s *table.Snapshot) ([]iceberg.ManifestEntry, error) {
	fs, err := t.fsF(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := s.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	var out []iceberg.ManifestEntry
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData || mf.SnapshotID() != s.SnapshotID || mf.DeletedDataFiles() == 0 {
			continue
		}
		entries, err := manifestEntries(fs, mf, false)
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED && e.SnapshotID() == s.SnapshotID && e.DataFile().ContentType() == iceberg.EntryContentData {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// undoMutation appends the restored rows' files, on the condition that
// the delete is still in the current ancestry and not undone (two undos
// of one delete would bring its rows back twice).
type undoMutation struct {
	rewriteMutation
	deleteID int64
	added    []addedFiles
	rows     int64
}

func (m *undoMutation) build(ctx context.Context, base *tablemeta.Indexed, _ versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	if m.producer == nil {
		m.producer = newSnapshotProducer(t, table.OpAppend)
	}
	m.started(base)
	if attempt > 1 {
		// An earlier attempt whose commit landed unrecognised (its
		// version deleted as an old one, its snapshot expired) left its
		// restored files live: the change is held, and its files stay.
		files, mfs, err := t.liveFiles(ctx, base, nil)
		if err != nil {
			return nil, err
		}
		var restored []iceberg.DataFile
		for _, ad := range m.added {
			restored = append(restored, ad.files...)
		}
		if err := m.heldOwnFiles(ctx, base, livePaths(files), mfs, restored); err != nil {
			return nil, err
		}
		if m.seen {
			return nil, errNothingToCommit
		}
	}
	meta, err := base.Metadata()
	if err != nil {
		return nil, err
	}
	if _, _, err := findUndoable(meta, m.deleteID); err != nil {
		return nil, err
	}
	parent, err := base.CurrentSnapshot()
	if err != nil {
		return nil, err
	}
	mfs, err := t.parentManifests(ctx, parent)
	if err != nil {
		return nil, err
	}
	a := &rewriteAttempt{snapshotID: newSnapshotID(base, nil)}
	m.attempts[attempt] = a
	var files []iceberg.DataFile
	for _, ad := range m.added {
		files = append(files, ad.files...)
	}
	change := fileChange{added: m.added, changedParts: changedPartitions(files), props: iceberg.Properties{
		SummaryUndoneDelete: strconv.FormatInt(m.deleteID, 10),
		SummaryRestoredRows: strconv.FormatInt(m.rows, 10),
	}}
	snap, refs, err := m.producer.rewrite(ctx, base, parent, mfs, a.snapshotID, attempt, change)
	if err != nil {
		return nil, err
	}
	a.refs = append(a.refs, refs...)
	return tablemeta.AddSnapshots(nil, snap), nil
}
