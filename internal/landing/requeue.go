package landing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// reportSuffix ends the key of the report written beside a quarantined file.
const reportSuffix = ".error.json"

// Rejected is one quarantined file: the kept copy and what its report says
// (docs/ingest.md, "Quarantine").
type Rejected struct {
	// Key is the landing key the file was quarantined from (the report's),
	// where Requeue puts it back.
	Key string `json:"key"`
	// QuarantinedTo is the key of the kept copy.
	QuarantinedTo string `json:"quarantined_to"`
	// Size is the copy's size in bytes.
	Size int64 `json:"size"`
	// At is when it was quarantined: the report's time, else the copy's
	// modification time.
	At time.Time `json:"at"`
	// LandedAt is when the file landed, before it was quarantined (the
	// report's; zero in reports of earlier versions).
	LandedAt time.Time `json:"landed_at,omitzero"`
	// Reason, Row, Column, Value and Hint are the report's.
	Reason string `json:"reason"`
	Row    int64  `json:"row,omitempty"`
	Column string `json:"column,omitempty"`
	Value  string `json:"value,omitempty"`
	Hint   string `json:"hint,omitempty"`
	Table  string `json:"table,omitempty"`
	// Kind is the report's: KindFile, KindSetting, KindRows, or "" (no
	// report, or one of an earlier version).
	Kind string `json:"kind,omitempty"`
	// SourceKey and RejectedRows are a rejects file's (KindRows): the
	// landing key its rows were refused from, and how many.
	SourceKey    string `json:"source_key,omitempty"`
	RejectedRows int    `json:"rejected_rows,omitempty"`
	// Loaded is set (by MarkLoaded) when the table loaded the key: a
	// requeued copy would be quarantined again or deleted.
	Loaded *Loaded `json:"loaded,omitempty"`
	// Report is the key of the report; "" when there is none (an
	// interrupted quarantine), when Key comes from the copy's key.
	Report string `json:"report,omitempty"`
}

// Report kinds (Report.Kind): what refused a file, which decides whether
// requeueing it in bulk can help (docs/schema.md, "Putting quarantined
// files back").
const (
	// KindFile: the file itself is broken, and no setting can load it:
	// it cannot be read (corrupt compression, not the format its name
	// says, empty, invalid UTF-8), it breaks the table's contract (a null
	// in a required column), or its key was loaded with other content.
	// requeue --all and filters skip it; a KEY named requeues it anyway.
	KindFile = "file"
	// KindSetting: a setting refused it (a delimiter, a decimal comma, a
	// time unit, a column type, the schema changes allowed): requeued once
	// the setting is fixed.
	KindSetting = "setting"
	// KindRow: a row of the file is broken in its structure (the wrong
	// number of fields, a bare or unclosed quote, a carriage return
	// outside quotes), which no setting reads: requeued, the file loads
	// only under --on-error skip-rows (its other rows; the broken ones set
	// aside). requeue --all and filters skip it; a KEY named requeues it.
	KindRow = "row"
	// KindRows: a rejects file, the rows of a landing file refused under
	// --on-error skip-rows (the file's other rows loaded); its key is a
	// new one (RejectsKey). requeue --all and filters skip it, as its rows
	// may be broken; a KEY named requeues it.
	KindRows = "rows"
)

// Loaded says that the key of a quarantined copy was loaded into the
// table (lake.Table.FindLoaded): in which snapshot and when, and whether
// after the copy was quarantined (a corrected file sent under the same
// key) or before (the copy was refused because the key was loaded).
type Loaded struct {
	SnapshotID int64     `json:"snapshot_id"`
	At         time.Time `json:"at"`
	Since      bool      `json:"since"`
}

// FindLoaded reports whether the table loaded key, with its snapshot and
// commit time (lake.Table.FindLoaded, adapted by the caller).
type FindLoaded func(ctx context.Context, key string) (snapshotID int64, at time.Time, ok bool, err error)

// MarkLoaded sets Loaded on each row whose key find reports loaded.
// Errors: find's.
func MarkLoaded(ctx context.Context, rows []Rejected, find FindLoaded) error {
	for i := range rows {
		id, at, ok, err := find(ctx, rows[i].Key)
		if err != nil {
			return fmt.Errorf("is %s loaded: %w", rows[i].Key, err)
		}
		if ok {
			rows[i].Loaded = &Loaded{SnapshotID: id, At: at.UTC(), Since: !at.Before(rows[i].At)}
		}
	}
	return nil
}

// RejectedFilter selects quarantined copies; a zero field matches every
// copy, and a copy must match every field set.
type RejectedFilter struct {
	// Prefix: the original landing key starts with it.
	Prefix string
	// Reason: the reason holds it, in any case.
	Reason string
	// Since: quarantined at or after it.
	Since time.Time
}

// Empty reports whether f selects every copy.
func (f RejectedFilter) Empty() bool { return f == RejectedFilter{} }

// Match reports whether r is selected.
func (f RejectedFilter) Match(r Rejected) bool {
	return strings.HasPrefix(r.Key, f.Prefix) &&
		strings.Contains(strings.ToLower(r.Reason), strings.ToLower(f.Reason)) &&
		(f.Since.IsZero() || !r.At.Before(f.Since))
}

// Filter returns the rows f selects, in order.
func (f RejectedFilter) Filter(rows []Rejected) []Rejected {
	out := []Rejected{}
	for _, r := range rows {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out
}

// copySuffix is the UTC time Quarantine adds to the key of a second copy
// of the same landing key (copyTimeLayout).
var copySuffix = regexp.MustCompile(`\.\d{8}T\d{6}\.\d{9}Z$`)

// Rejected lists the quarantined files below the quarantine prefix, in key
// order, each with its report, whose Key is the landing key (the copy's
// name may be a hash of it: QuarantineKey). A report that cannot be read
// or parsed is not an error: the file is listed with a reason saying so,
// and its original key is worked out from the copy's key; for a hashed
// copy it is unknown (""), and Requeue refuses it. Errors: listing or
// reading the store.
func (b *Bucket) Rejected(ctx context.Context) ([]Rejected, error) {
	prefix := b.quarantinePrefix()
	var copies []storage.ObjectInfo
	reports := map[string]bool{}
	err := b.Store.List(ctx, prefix, func(o storage.ObjectInfo) error {
		if strings.HasSuffix(o.Key, reportSuffix) {
			reports[o.Key] = true
		} else {
			copies = append(copies, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", prefix, b.Store.URI(), err)
	}
	out := make([]Rejected, 0, len(copies))
	for _, c := range copies {
		noReport := ""
		if !reports[c.Key+reportSuffix] {
			noReport = "no report (the quarantine was interrupted before it was written)"
		}
		r, err := b.rejectedCopy(ctx, c, noReport, "no report (it was removed)")
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// rejectedCopy reads the report of the quarantined copy c. noReport, when
// set, says that the listing found no report (none is read); gone is the
// reason when the report cannot be found. Errors: reading the report.
func (b *Bucket) rejectedCopy(ctx context.Context, c storage.ObjectInfo, noReport, gone string) (Rejected, error) {
	r := Rejected{Key: copySuffix.ReplaceAllString(strings.TrimPrefix(c.Key, b.quarantinePrefix()), ""), QuarantinedTo: c.Key,
		Size: c.Size, At: c.LastModified.UTC()}
	unknown := ""
	if b.hashedCopy(c.Key) {
		r.Key, unknown = "", "; the copy's name is a hash of its landing key, which only the report held"
	}
	if noReport != "" {
		r.Reason = noReport + unknown
		return r, nil
	}
	r.Report = c.Key + reportSuffix
	body, _, err := storage.ReadAll(ctx, b.Store, r.Report)
	if errors.Is(err, storage.ErrNotExist) {
		r.Report, r.Reason = "", gone+unknown
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("read %s: %w", r.Report, err)
	}
	var rep Report
	err = json.Unmarshal(body, &rep)
	if len(rep.KeyBytes) > 0 {
		rep.Key = string(rep.KeyBytes)
	}
	if err != nil || storage.ValidateObjectKey(rep.Key) != nil {
		r.Reason = "the report does not read as a quarantine report" + unknown
		return r, nil
	}
	r.Key, r.Reason, r.Row, r.Column, r.Value, r.Hint, r.Table, r.Kind = rep.Key, rep.Reason, rep.Row, rep.Column, rep.Value, rep.Hint, rep.Table, rep.Kind
	r.SourceKey, r.RejectedRows = rep.SourceKey, len(rep.Rows)
	if !rep.At.IsZero() {
		r.At = rep.At.UTC()
	}
	if !rep.LandedAt.IsZero() {
		r.LandedAt = rep.LandedAt.UTC()
	}
	return r, nil
}

// Requeue outcomes (RequeueResult.Status).
const (
	// Skipped: not tried (RequeueSkip says why): its key was loaded, or
	// the file itself is broken and it was not named.
	Skipped = "skipped"
	// WouldRequeue: a dry run found the key free.
	WouldRequeue = "would-requeue"
	// Requeued: the file is back under its key; the next ingest run loads
	// it.
	Requeued = "requeued"
	// NotRequeued: a file is under the key already (a gateway sent it
	// again, or an earlier requeue put it there): it is not overwritten,
	// and the quarantined copy stays.
	NotRequeued = "not-requeued"
	// RequeueFailed: Requeue (or its dry run) could not act on this file;
	// the reason says why, and the quarantined copy stays.
	RequeueFailed = "failed"
)

// RequeueResult is what Requeue did with one quarantined file.
type RequeueResult struct {
	Key           string `json:"key"`
	QuarantinedTo string `json:"quarantined_to"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
}

// RequeueSkip returns why r is not requeued, or "": its key was loaded
// (Loaded: requeued, it would be quarantined again as loaded with other
// content, or deleted as already loaded), or, when it was not named but
// picked by --all or a filter (bulk), its report says the file itself is
// broken (KindFile), so it would be refused again whatever the settings.
func RequeueSkip(r Rejected, bulk bool) string {
	switch {
	case r.Loaded != nil:
		when := "since it was quarantined"
		if !r.Loaded.Since {
			when = "before it was quarantined"
		}
		return fmt.Sprintf("its key was loaded %s (snapshot %d at %s): requeued, it would be refused again as loaded, or deleted; send corrections under a new key, and discard this copy",
			when, r.Loaded.SnapshotID, r.Loaded.At.Format(time.RFC3339))
	case bulk && r.Kind == KindFile:
		return "its report says the file itself is broken, so no setting can load it: send a corrected file under a new key and discard this copy (name the key to requeue it anyway)"
	case bulk && r.Kind == KindRow:
		return "a row of it is broken (" + r.Reason + "), which no setting reads: requeued, it is refused again unless ingest runs with --on-error skip-rows (or the table's timelake.on-error=skip-rows), which loads its other rows and sets that one aside; name the key to requeue it then, or send a corrected file under a new key"
	case bulk && r.Kind == KindRows:
		return "it holds rows refused from " + r.SourceKey + " (--on-error skip-rows), which may be broken themselves: fix them, or the setting that refused them, and name the key to requeue it"
	}
	return ""
}

// CheckRequeue is a dry run of Requeue: WouldRequeue when r's key is free
// in the landing bucket, NotRequeued when a file is under it. It refuses
// what Requeue refuses (requeueTarget), and nothing else. Errors: those
// refusals, or the store's.
func (b *Bucket) CheckRequeue(ctx context.Context, r Rejected) (RequeueResult, error) {
	res := RequeueResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo}
	if err := b.requeueTarget(r); err != nil {
		return res, err
	}
	_, err := b.Store.Stat(ctx, r.Key)
	switch {
	case err == nil:
		res.Status, res.Reason = NotRequeued, "a file is under this key in the landing bucket already: it would not be overwritten"
	case errors.Is(err, storage.ErrNotExist):
		res.Status = WouldRequeue
	default:
		return res, fmt.Errorf("requeue %s: %w", r.Key, err)
	}
	return res, nil
}

// requeueTarget refuses to put r back when its landing key is unknown (a
// hashed copy without its report) or is not one ingest loads (the
// quarantine itself, a hidden or partial name: Skipped). Any key the store
// can hold is one (storage.ValidateObjectKey): a quarantined file goes back
// under the key it came from, a tab or a newline in it included, since
// the store listed it there.
func (b *Bucket) requeueTarget(r Rejected) error {
	if r.Key == "" {
		return fmt.Errorf("requeue %s: its landing key is unknown (%s); move the copy back by hand", r.QuarantinedTo, r.Reason)
	}
	if err := storage.ValidateObjectKey(r.Key); err != nil || b.Skipped(r.Key) {
		return fmt.Errorf("requeue %s: %q is not a landing key ingest loads", r.QuarantinedTo, r.Key)
	}
	return nil
}

// Requeue puts a quarantined file back under its original key, so that the
// next ingest run loads it again (after the setting that refused it was
// fixed). The copy is written there with a conditional create (S3
// If-None-Match: *; an exclusive create in a folder): a newer file under the
// same key is never overwritten, and the result is then NotRequeued. Only
// after the create are the quarantined copy and its report deleted, the
// copy only while it is the one read (a conditional delete): a crash in
// between leaves the file in both places, and the next ingest loads the
// one under its key. dir holds the copy while it is written ("" is
// os.TempDir()).
//
// Errors: reading the copy, writing the key, deleting the copy (the file is
// then requeued and still quarantined: listed by Rejected, a second Requeue
// finds the key taken).
func (b *Bucket) Requeue(ctx context.Context, r Rejected, dir string) (RequeueResult, error) {
	res := RequeueResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo}
	if err := b.requeueTarget(r); err != nil {
		return res, err
	}
	rc, info, err := b.Store.Get(ctx, r.QuarantinedTo)
	if err != nil {
		return res, fmt.Errorf("requeue %s: %w", r.QuarantinedTo, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(dir, "timelake-requeue-*")
	if err != nil {
		return res, fmt.Errorf("requeue %s: temp file: %w", r.QuarantinedTo, err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if _, err := io.Copy(tmp, storage.ContextReader(ctx, rc)); err != nil {
		return res, fmt.Errorf("requeue %s: read: %w", r.QuarantinedTo, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("requeue %s: %w", r.QuarantinedTo, err)
	}
	_, err = b.Store.Put(ctx, r.Key, tmp, requeuePut(r))
	if errors.Is(err, storage.ErrPreconditionFailed) {
		res.Status = NotRequeued
		res.Reason = "a file is under this key in the landing bucket already: it is not overwritten; the quarantined copy stays"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("requeue %s to %s: %w", r.QuarantinedTo, r.Key, err)
	}
	res.Status = Requeued
	err = b.Store.DeleteIfMatch(ctx, r.QuarantinedTo, info.ETag)
	if errors.Is(err, storage.ErrPreconditionFailed) {
		return res, nil // replaced since it was read: that copy and its report stay
	}
	if err != nil {
		return res, fmt.Errorf("requeued %s to %s, but could not delete the quarantined copy: %w", r.QuarantinedTo, r.Key, err)
	}
	if r.Report != "" {
		if err := b.Store.Delete(ctx, r.Report); err != nil {
			return res, fmt.Errorf("requeued %s to %s, but could not delete its report: %w", r.QuarantinedTo, r.Key, err)
		}
	}
	return res, nil
}

// MetaLandedAt is the user metadata (x-amz-meta-timelake-landed-at, RFC
// 3339) of a file a requeue put back in an S3 landing bucket: when it
// first landed, which its LastModified (the requeue's time) no longer says.
const MetaLandedAt = "timelake-landed-at"

// requeuePut is how Requeue writes r back: a conditional create that keeps
// the time it first landed (in a folder, as the file's modification time;
// on S3, as MetaLandedAt), so that freshness and the load history say
// when the gateway sent it, not when it was put back.
func requeuePut(r Rejected) storage.PutOptions {
	opts := storage.PutOptions{IfAbsent: true}
	if !r.LandedAt.IsZero() {
		opts.ModTime = r.LandedAt
		opts.Metadata = map[string]string{MetaLandedAt: r.LandedAt.UTC().Format(time.RFC3339Nano)}
	}
	return opts
}

// LandedAt is when the landing object o landed: the time a requeue kept
// (MetaLandedAt, of an object Get returned), else its modification time.
func LandedAt(o storage.ObjectInfo) time.Time {
	if v := o.Metadata[MetaLandedAt]; v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && !t.After(o.LastModified) {
			return t.UTC()
		}
	}
	return o.LastModified
}

// ArchivePrefix is where Discard keeps the quarantined copies it archives:
// below timelake's reserved prefix, which ingest never lists, with the
// copy's path below the quarantine prefix (docs/schema.md, "Discarding
// quarantined files").
const ArchivePrefix = ReservedPrefix + "discarded/"

// Discard outcomes (DiscardResult.Status).
const (
	Archived     = "archived"      // moved below ArchivePrefix with its report
	Deleted      = "deleted"       // removed with its report (--delete)
	WouldArchive = "would-archive" // dry run
	WouldDelete  = "would-delete"  // dry run with --delete
	// DiscardFailed: Discard (or its dry run) could not act on this copy;
	// the reason says why, and the copy stays.
	DiscardFailed = "failed"
)

// DiscardResult is what Discard did with one quarantined copy.
type DiscardResult struct {
	Key           string `json:"key"`
	QuarantinedTo string `json:"quarantined_to"`
	Status        string `json:"status"`
	// ArchivedTo is the key of the archived copy (its report beside it,
	// with .error.json), when archived.
	ArchivedTo string `json:"archived_to,omitempty"`
	// Reason says why it failed (DiscardFailed).
	Reason string `json:"reason,omitempty"`
}

// Discard takes a quarantined copy and its report out of the quarantine:
// archived (moved below ArchivePrefix, a second archive of the same path
// getting a UTC time suffix as Quarantine does) or, with del, deleted. It
// copies before it deletes, and deletes the copy only while it is the one
// read (a conditional delete): a crash in between leaves the file in both
// places, never in neither. dryRun only says what it would do. now stamps
// a second archive. Errors: the store's; a copy gone meanwhile is not one.
func (b *Bucket) Discard(ctx context.Context, r Rejected, del, dryRun bool, now time.Time) (DiscardResult, error) {
	res := DiscardResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo, Status: Deleted}
	if !del {
		res.Status, res.ArchivedTo = Archived, ArchivePrefix+strings.TrimPrefix(r.QuarantinedTo, b.quarantinePrefix())
	}
	info, err := b.Store.Stat(ctx, r.QuarantinedTo)
	if err != nil {
		return res, fmt.Errorf("discard %s: %w", r.QuarantinedTo, err)
	}
	if !del {
		if _, err := b.Store.Stat(ctx, res.ArchivedTo); err == nil {
			res.ArchivedTo += "." + now.UTC().Format("20060102T150405.000000000Z")
		} else if !errors.Is(err, storage.ErrNotExist) {
			return res, fmt.Errorf("discard %s: %w", r.QuarantinedTo, err)
		}
		if err := storage.ValidateKey(res.ArchivedTo); err != nil {
			return res, fmt.Errorf("discard %s: cannot archive it under %s (%v): discard it with --delete", r.QuarantinedTo, ArchivePrefix, err)
		}
	}
	if dryRun {
		res.Status = map[string]string{Archived: WouldArchive, Deleted: WouldDelete}[res.Status]
		return res, nil
	}
	if !del {
		if err := b.Store.Copy(ctx, r.QuarantinedTo, res.ArchivedTo); err != nil {
			return res, fmt.Errorf("archive %s: %w", r.QuarantinedTo, err)
		}
		if r.Report != "" {
			if err := b.Store.Copy(ctx, r.Report, res.ArchivedTo+reportSuffix); err != nil && !errors.Is(err, storage.ErrNotExist) {
				return res, fmt.Errorf("archive %s: %w", r.Report, err)
			}
		}
	}
	if err := b.Store.DeleteIfMatch(ctx, r.QuarantinedTo, info.ETag); err != nil {
		return res, fmt.Errorf("discard %s: %w", r.QuarantinedTo, err)
	}
	if r.Report != "" {
		if err := b.Store.Delete(ctx, r.Report); err != nil {
			return res, fmt.Errorf("discard %s: delete its report: %w", r.QuarantinedTo, err)
		}
	}
	return res, nil
}
