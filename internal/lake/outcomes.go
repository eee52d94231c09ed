package lake

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// The outcome log keeps, for the dedupe window, the landing files that
// ingest settled without loading them: those found duplicates (their key,
// or with content dedupe their content, was loaded already) and those it
// rejected into the quarantine, with the reason. With the snapshots and
// the load history it answers "what happened to file X" for every file
// (`timelake tables history`).
//
// It is a second list of segments beside the load history, named by
// timelake.load-outcomes (_load-outcomes-<newest, ms>-<records>-<uuid>.parquet,
// the load history's columns), kept apart so that no look-up of loaded
// keys ever reads it: a rejected key is not loaded, and a timelake that
// predates the log ignores it. Its segments are merged and trimmed to the
// dedupe window as the load history's are (history.go). A missing outcome
// segment loses only what it told: readers skip it and say so, and the
// next merge of its tier drops it.

// PropLoadOutcomes names the outcome log's segments (comma-separated file
// names in the table's metadata folder).
const PropLoadOutcomes = "timelake.load-outcomes"

var outcomeLog = recordLog{prop: PropLoadOutcomes, prefix: loadhistory.OutcomePrefix}

// RecordOutcomes adds recs (Status OutcomeDuplicate or OutcomeRejected;
// LoadedAt is when the file was settled) to the table's outcome log, in one
// commit through the commit protocol: a new segment, merged with those of
// its size tier when the tier is full, records past the dedupe window
// dropped; when a REST catalog applied it on top of another writer's
// change of the list, the other's segments are named again
// (reconcileHistory). On success the Table holds the new version.
//
// Errors: a record of a loaded file (empty Status), I/O errors, and
// table.ErrCommitFailed after the commit's attempts were all lost races.
func (t *Table) RecordOutcomes(ctx context.Context, recs []LoadRecord) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if r.Status == "" {
			return fmt.Errorf("record outcomes of %s: %s is loaded: loaded keys enter the load history with their snapshot", t.name, r.Key)
		}
	}
	m := &outcomesMutation{t: t, recs: recs, bases: map[int]outcomeAttempt{}}
	res, err := t.commit(ctx, m, CommitOptions{})
	if err != nil {
		return fmt.Errorf("record outcomes of %s: %w", t.name, err)
	}
	return t.reconcileHistory(ctx, res.rebased)
}

// outcomesMutation writes a segment of the outcome log and names it in
// timelake.load-outcomes.
type outcomesMutation struct {
	t       *Table
	recs    []LoadRecord
	bases   map[int]outcomeAttempt
	written []string // segments written, by every attempt
}

type outcomeAttempt struct {
	segment  string   // the segment it wrote
	replaced []string // segments its list no longer names (merged, past the window)
}

// indexOnly: the properties are all an attempt needs.
func (m *outcomesMutation) indexOnly() bool { return true }

func (m *outcomesMutation) build(ctx context.Context, base *tablemeta.Indexed, _ versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	props := base.Props()
	now := t.lake.now()
	window := dedupeWindow(props)
	plan := loadhistory.PlanSegments(outcomeLog.segments(props), m.recs, now, window)
	segs, name, err := t.lake.writeSegment(ctx, t.name, outcomeLog, plan, now, window)
	if err != nil {
		return nil, err
	}
	a := outcomeAttempt{segment: name}
	if name != "" {
		m.written = append(m.written, name)
	}
	for _, s := range slices.Concat(plan.Merge, plan.Dropped) {
		if !t.lake.linkedSegment(t.name, s.Name) { // a link is never deleted
			a.replaced = append(a.replaced, s.Name)
		}
	}
	m.bases[attempt] = a
	return outcomeLog.withSegments(base, segs, now), nil
}

// cleanUp deletes the segments written by attempts that did not win, and
// those the winner replaced (a reader of an older version that misses one
// skips it). What is left (a kill, an error) is orphan file removal's.
func (m *outcomesMutation) cleanUp(ctx context.Context, won int, unknown bool) {
	if unknown {
		return
	}
	var paths []string
	for _, name := range m.written {
		if name != m.bases[won].segment {
			paths = append(paths, m.t.lake.ownLocation(m.t.name, name))
		}
	}
	if won > 0 {
		for _, name := range m.bases[won].replaced {
			paths = append(paths, m.t.lake.ownLocation(m.t.name, name))
			m.t.lake.uncache(m.t.name, name)
		}
	}
	m.t.removeFiles(ctx, paths)
}

// ScanHistory calls fn with every record the loaded version remembers: the
// loaded batches of the current ancestry's snapshots (as load records,
// whatever their age), then those of the load history and the outcome log
// within the dedupe window; a loaded key once, an outcome once each. It
// holds one batch of a segment's records at a time, whatever the size of
// the history.
//
// A segment gone from the store (or, in a local table, a symbolic link,
// which is never read) is skipped: missing names those the newest version
// still names (deleted by hand or by another tool: the keys of a load
// history segment are then no longer recognised), while one the newest
// version no longer names was merged away during the scan and is skipped
// silently. Errors: fn's, reading a segment, refreshing the table.
func (t *Table) ScanHistory(ctx context.Context, fn func(LoadRecord) error) (missing []string, err error) {
	h, _ := t.loaded()
	props := h.Props()
	inSnapshots := make(map[string]bool, len(h.Batches()))
	for batch, i := range h.Batches() {
		s, err := h.Snapshot(i)
		if err != nil {
			return nil, err
		}
		var summary map[string]string
		if s.Summary != nil {
			summary = s.Summary.Properties
		}
		inSnapshots[batch] = true
		if err := fn(loadRecordOf(batch, s.SnapshotID, s.TimestampMs, summary)); err != nil {
			return nil, err
		}
	}
	cutoff := t.lake.now().Add(-dedupeWindow(props))
	var gone []string
	for _, g := range []recordLog{loadHistoryLog, outcomeLog} {
		for _, seg := range g.segments(props) {
			body, err := t.lake.segmentBytes(ctx, t.name, seg.Name)
			if errors.Is(err, storage.ErrSymlink) {
				t.lake.noteLinked(t.name, seg.Name) // never read: as good as missing
			}
			if errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrSymlink) {
				gone = append(gone, seg.Name)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read load history of %s: %w", t.name, err)
			}
			err = loadhistory.ScanSegment(ctx, body, func(r LoadRecord) error {
				if r.LoadedAt.Before(cutoff) || (r.Status == "" && inSnapshots[r.Key]) {
					return nil
				}
				return fn(r)
			})
			if err != nil {
				return nil, fmt.Errorf("read load history of %s: %s: %w", t.name, seg.Name, err)
			}
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	if err := t.Refresh(ctx); err != nil {
		return nil, err
	}
	nh, _ := t.loaded()
	named := map[string]bool{}
	for _, s := range slices.Concat(historySegments(nh.Props()), outcomeLog.segments(nh.Props())) {
		named[s.Name] = true
	}
	for _, name := range gone {
		if named[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
}
