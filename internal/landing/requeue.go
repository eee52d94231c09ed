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
	// Reason, Row, Column, Value and Hint are the report's.
	Reason string `json:"reason"`
	Row    int64  `json:"row,omitempty"`
	Column string `json:"column,omitempty"`
	Value  string `json:"value,omitempty"`
	Hint   string `json:"hint,omitempty"`
	Table  string `json:"table,omitempty"`
	// Report is the key of the report; "" when there is none (an
	// interrupted quarantine), when Key comes from the copy's key.
	Report string `json:"report,omitempty"`
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
		r := Rejected{Key: copySuffix.ReplaceAllString(strings.TrimPrefix(c.Key, prefix), ""), QuarantinedTo: c.Key,
			Size: c.Size, At: c.LastModified.UTC()}
		unknown := ""
		if b.hashedCopy(c.Key) {
			r.Key, unknown = "", "; the copy's name is a hash of its landing key, which only the report held"
		}
		if !reports[c.Key+reportSuffix] {
			r.Reason = "no report (the quarantine was interrupted before it was written)" + unknown
			out = append(out, r)
			continue
		}
		r.Report = c.Key + reportSuffix
		body, _, err := storage.ReadAll(ctx, b.Store, r.Report)
		if errors.Is(err, storage.ErrNotExist) {
			r.Report, r.Reason = "", "no report (it was removed)"+unknown
			out = append(out, r)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.Report, err)
		}
		var rep Report
		err = json.Unmarshal(body, &rep)
		if len(rep.KeyBytes) > 0 {
			rep.Key = string(rep.KeyBytes)
		}
		if err != nil || storage.ValidateObjectKey(rep.Key) != nil {
			r.Reason = "the report does not read as a quarantine report" + unknown
			out = append(out, r)
			continue
		}
		r.Key, r.Reason, r.Row, r.Column, r.Value, r.Hint, r.Table = rep.Key, rep.Reason, rep.Row, rep.Column, rep.Value, rep.Hint, rep.Table
		if !rep.At.IsZero() {
			r.At = rep.At.UTC()
		}
		out = append(out, r)
	}
	return out, nil
}

// Requeue outcomes (RequeueResult.Status).
const (
	// Requeued: the file is back under its key; the next ingest run loads
	// it.
	Requeued = "requeued"
	// NotRequeued: a file is under the key already (a gateway sent it
	// again, or an earlier requeue put it there): it is not overwritten,
	// and the quarantined copy stays.
	NotRequeued = "not-requeued"
)

// RequeueResult is what Requeue did with one quarantined file.
type RequeueResult struct {
	Key           string `json:"key"`
	QuarantinedTo string `json:"quarantined_to"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
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
	if r.Key == "" {
		return res, fmt.Errorf("requeue %s: its landing key is unknown (%s); move the copy back by hand", r.QuarantinedTo, r.Reason)
	}
	if err := storage.ValidateObjectKey(r.Key); err != nil || b.Skipped(r.Key) {
		return res, fmt.Errorf("requeue %s: %q is not a landing key ingest loads", r.QuarantinedTo, r.Key)
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
	_, err = b.Store.Put(ctx, r.Key, tmp, storage.PutOptions{IfAbsent: true})
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
