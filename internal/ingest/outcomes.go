package ingest

import (
	"context"

	"github.com/timelake/timelake/internal/lake"
)

// noteOutcome keeps a file that was settled without being loaded for the
// table's outcome log: a duplicate (its key, or its content, was loaded:
// it was deleted) or a rejection (quarantined, with the reason). A file
// gone before it was read, or left waiting, is not an outcome.
func (r *runner) noteOutcome(res FileResult) {
	rec := lake.LoadRecord{Key: res.Key, Size: res.Size, SHA256: res.sha256, LoadedAt: r.cfg.Now().UTC(),
		LandedAt: res.landed.UTC(), LoadedBy: r.loadedByOf(res.Key), Reason: res.Reason}
	switch {
	case res.Status == Quarantined:
		rec.Status, rec.QuarantinedTo = lake.OutcomeRejected, res.QuarantinedTo
	case res.Status == AlreadyLoaded && (res.SnapshotID != 0 || res.SameAs != ""):
		rec.Status, rec.SnapshotID, rec.SameAs = lake.OutcomeDuplicate, res.SnapshotID, res.SameAs
	default:
		return
	}
	r.outcomes = append(r.outcomes, rec)
}

// loadedByOf says how key reached this run or load ("": not said).
func (r *runner) loadedByOf(key string) string {
	if r.loadedBy == nil {
		return ""
	}
	return r.loadedBy(key)
}

// recordOutcomes writes the outcomes noted so far to the table's outcome
// log, in one commit (lake.Table.RecordOutcomes). A failure does not undo
// the files' results: it is logged and reported (Report.OutcomesError).
// Nothing is written in a dry run, without a table, or once ctx is done.
func (r *runner) recordOutcomes(ctx context.Context) {
	recs := r.outcomes
	r.outcomes = nil
	if len(recs) == 0 || r.tbl == nil || r.cfg.DryRun || ctx.Err() != nil {
		return
	}
	if err := r.tbl.RecordOutcomes(ctx, recs); err != nil {
		r.rep.OutcomesError = r.lakeErr(err).Error()
		r.log.Warn("duplicates and rejections not written to the table's outcome log (the files are settled)",
			"files", len(recs), "err", err)
	}
}
