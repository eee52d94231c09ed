package ingest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

func (r *runner) record(res FileResult) {
	r.rep.Files = append(r.rep.Files, res)
	r.noteOutcome(res)
	switch res.Status {
	case Loaded:
		r.rep.Loaded++
		r.rep.Rows += res.Rows
		r.rep.RejectedRows += res.RejectedRows
	case AlreadyLoaded:
		r.rep.AlreadyLoaded++
	case Quarantined:
		r.rep.Quarantined++
	case Waiting:
		r.rep.Waiting++
	case Failed:
		r.rep.Failed++
	}
	if r.cfg.OnFile != nil {
		r.cfg.OnFile(res)
	}
}

// alreadyLoaded handles a key whose batch id is already committed: the same
// content is a retry (delete it); different content is quarantined, since
// corrections must come as new files.
func (r *runner) alreadyLoaded(ctx context.Context, res FileResult, d *download, b lake.BatchInfo) (FileResult, error) {
	if reason := differs(b.Summary, d); reason != "" {
		if was, ok := grewSince(b.Summary, d); ok {
			return r.reject(ctx, res, d, &otherContentError{fmt.Sprintf("%s was loaded in snapshot %d while it was still being written: it has grown since (%d bytes then, the same bytes and %d more now), and the rows written after the load are not in the table; load them as a new file with a new key, and give writers that pause longer a longer --settle-time or --open-end-settle-time (docs/ingest.md)",
				d.info.Key, b.SnapshotID, was, d.info.Size-was)})
		}
		return r.reject(ctx, res, d, &otherContentError{fmt.Sprintf("%s was already loaded in snapshot %d with different content (%s); send corrections as a new file with a new key",
			d.info.Key, b.SnapshotID, reason)})
	}
	res.Status, res.SnapshotID, res.Rows = AlreadyLoaded, b.SnapshotID, 0
	err := r.cfg.Landing.DeleteIfMatch(ctx, d.info.Key, d.info.ETag)
	if err != nil && !errors.Is(err, storage.ErrPreconditionFailed) { // changed since: the next run looks again
		err = fmt.Errorf("delete already loaded %s: %w", d.info.Key, err)
		if r.stopsRun(ctx, err) {
			return res, r.landingErr(err)
		}
		r.log.Info("could not delete a file already loaded; the next run tries again", "key", d.info.Key, "err", err)
		res.Reason = fmt.Sprintf("loaded in snapshot %d; not deleted (%v): the next run tries again", b.SnapshotID, err)
	}
	return res, nil
}

// grewSince reports whether the downloaded file is the file a batch loaded
// with bytes appended: its first timelake.source-size bytes have the
// loaded file's SHA-256. was is that size.
func grewSince(summary map[string]string, d *download) (was int64, ok bool) {
	was, err := strconv.ParseInt(summary[lake.SummarySourceSize], 10, 64)
	sum := summary[lake.SummarySourceSHA256]
	if err != nil || sum == "" || was <= 0 || was >= d.info.Size {
		return 0, false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(d.f, 0, was)); err != nil {
		return 0, false // the load's own read of the file says what is wrong
	}
	return was, hex.EncodeToString(h.Sum(nil)) == sum
}

// differs compares the source identity recorded in a snapshot summary with
// a downloaded file. Snapshots written without it (other writers) count as
// the same file, as the public poller's "skip loaded keys" rule does.
func differs(summary map[string]string, d *download) string {
	// The same content, compressed or not, is the same file.
	if was := cmp.Or(summary[lake.SummaryContentSHA256], summary[lake.SummarySourceSHA256]); was != "" && was == d.content {
		return ""
	}
	if s := summary[lake.SummarySourceSize]; s != "" && s != strconv.FormatInt(d.info.Size, 10) {
		return "size " + s + " then, " + strconv.FormatInt(d.info.Size, 10) + " now"
	}
	if h := summary[lake.SummarySourceSHA256]; h != "" && h != d.sha256 {
		return "sha256 differs"
	}
	return ""
}

// reject quarantines a file with a report built from cause.
func (r *runner) reject(ctx context.Context, res FileResult, d *download, cause error) (FileResult, error) {
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if decode.IsPanic(cause) {
		var pe *decode.PanicError
		errors.As(cause, &pe)
		r.log.Debug("a reader or writer panicked on a file", "key", d.info.Key, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	rep := landing.Report{Table: r.cfg.Table.String(), Reason: cause.Error(), Size: d.info.Size,
		ETag: d.info.ETag, SHA256: d.sha256, At: r.cfg.Now().UTC(), LandedAt: res.landed.UTC(), Hint: hint(cause), Kind: rejectionKind(cause)}
	var fe *decode.FileError
	if errors.As(cause, &fe) {
		rep.Row, rep.Column, rep.Value = fe.Row, fe.Column, fe.Value
	}
	dst, err := r.bucket.Quarantine(ctx, d.info.Key, rep)
	if err != nil {
		if r.stopsRun(ctx, err) {
			return res, r.landingErr(err) // the landing bucket refuses writes: stop
		}
		r.log.Info("could not quarantine a file; it stays in the landing bucket", "key", d.info.Key, "err", err)
		res.Status = Failed
		res.Reason = fmt.Sprintf("could not be quarantined (%v); it stays in the landing bucket and a later run tries again; it is refused because %v", err, cause)
		return res, nil
	}
	res.Status, res.Reason, res.QuarantinedTo = Quarantined, cause.Error(), dst
	return res, nil
}

// errNameNotUTF8 refuses a landing file whose name is not UTF-8.
var errNameNotUTF8 = errors.New("the file name is not UTF-8, which batch ids must be")

// hint says how to fix the most common rejections.
func hint(err error) string {
	var we *lake.WidthError
	switch {
	case errors.Is(err, errNameNotUTF8):
		return "rename the file with a UTF-8 name (convmv converts names from another encoding), then put it into the landing folder again"
	case errors.Is(err, lake.ErrRequiredNull):
		return "fill the required column in every row, then upload the file again under a new key"
	case errors.Is(err, lake.ErrPartitionName):
		return "rename the column in the file (its partition field keeps its name), then upload it again under a new key"
	case errors.Is(err, lake.ErrTooManyPartitions):
		return fmt.Sprintf("look at the file's times: a gateway whose clock is far off spreads its rows over years; fix them and upload the file again under a new key, or, if the rows are right, split the file or raise %s (timelake tables alter --set %s=N) and put it back with timelake landing requeue",
			lake.PropMaxFilePartitions, lake.PropMaxFilePartitions)
	case errors.As(err, &we) && we.SchemaBytes == 0:
		return fmt.Sprintf("split the file into files of at most %d columns, each with the time and series key columns, or send its values in long form (a column naming the measurement, one of its value), and upload those under new keys; or, if the table is meant to be that wide, raise --max-columns (TIMELAKE_MAX_COLUMNS) and put the file back with timelake landing requeue",
			we.Max)
	case errors.Is(err, lake.ErrTooWide):
		return "no table can take the file as it is: split it into files of fewer columns (their names shorter), each with the time and series key columns, or send its values in long form (a column naming the measurement, one of its value), and upload those under new keys; then discard this one with timelake landing discard"
	case decode.IsNewColumns(err):
		return "to add the new columns, let ingest evolve the table (--evolve add-columns, or timelake tables alter --set timelake.evolve=add-columns), then put the file back with timelake landing requeue"
	case decode.IsPanic(err):
		return "timelake's reader or writer crashed on this file (--log-level debug logs where): write the file again, with another writer if the same one made it, and upload it under a new key; or put it back with timelake landing requeue once timelake reads it"
	case errors.As(err, new(*profileError)):
		return "fix the table's source profiles (timelake tables show lists them; timelake tables alter changes them), then put the file back with timelake landing requeue"
	}
	var fe *decode.FileError
	if decode.IsBrokenRecord(err) {
		return "fix the file and upload it again under a new key (the quarantined copy and this report can then be deleted); no setting loads it as it is, though --on-error skip-rows loads its other rows and sets the broken ones aside"
	}
	if decode.IsUnreadable(err) {
		return "fix the file and upload it again under a new key (the quarantined copy and this report can then be deleted); no setting loads it as it is"
	}
	if errors.As(err, &fe) {
		return "fix the file and upload it again under a new key (the quarantined copy and this report can then be deleted); or, when a setting was wrong (--csv-delimiter, --csv-decimal-comma, --csv-null, --time-unit), fix it and put the file back with timelake landing requeue"
	}
	return "send corrections as a new file with a new key"
}
