package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/timelake/timelake/internal/storage"
)

// Deferred deletes: the files of snapshots expired before their retention
// (ExpireOptions.RetainAtMost) may still be read by a query that planned
// one of those snapshots, so they are deleted only once past it. Each
// expiry that leaves such files writes a record of them next to the
// table's metadata, in the folder of timelake's own files (Lake.ownKey):
// _timelake-deferred-<ms>-<uuid>.json, <ms> the newest of those snapshots'
// commit times, holding the files' paths. Every expiry, in whatever
// process (the next cron run's maintenance, the same run's next expiry),
// deletes the files of the records whose snapshots are past the retention,
// then the records; a Table lists the records at its first expiry and
// every minute after, and knows its own in between (a long run expires
// every few seconds, and a local folder can only be listed whole). A
// record lost or not written leaves its files to orphan removal, as the
// files of any expiry cut short are.

// deferredRecordPrefix starts the name of a deferred-deletes record.
const deferredRecordPrefix = "_timelake-deferred-"

// deferredRecord is the content of a deferred-deletes record.
type deferredRecord struct {
	Paths []string `json:"paths"`
}

// deferDeletes records paths, files of snapshots expired before their
// retention (the newest committed at newest), for an expiry to delete
// once they are past it.
func (t *Table) deferDeletes(ctx context.Context, newest time.Time, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	body, err := json.Marshal(deferredRecord{Paths: paths})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s%d-%s.json", deferredRecordPrefix, newest.UnixMilli(), uuid.New())
	key := t.lake.ownKey(t.name, name)
	if _, err := t.lake.store.Put(ctx, key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
		return fmt.Errorf("record the files of snapshots expired before their retention: %w", err)
	}
	t.deferredMu.Lock()
	defer t.deferredMu.Unlock()
	if t.deferredRecords == nil {
		t.deferredRecords = map[string]time.Time{}
	}
	t.deferredRecords[key] = newest
	return nil
}

// deferredRelist is how often a Table lists the deferred-deletes records
// again (those of other processes): between listings it knows its own. A
// long run expires every few seconds, and a local folder is listed whole.
const deferredRelist = time.Minute

// dueRecords returns the keys of the deferred-deletes records whose
// snapshots committed before cutoff: from a listing on the Table's first
// call and every deferredRelist, from what it knows in between.
func (t *Table) dueRecords(ctx context.Context, cutoff time.Time) ([]string, error) {
	now := time.Now()
	t.deferredMu.Lock()
	relist := t.deferredListedAt.IsZero() || now.Sub(t.deferredListedAt) >= deferredRelist
	t.deferredMu.Unlock()
	if relist { // no lock held over the request
		prefix := t.lake.ownKey(t.name, deferredRecordPrefix)
		found := map[string]time.Time{}
		err := t.lake.store.List(ctx, prefix, func(o storage.ObjectInfo) error {
			stem, _, _ := strings.Cut(strings.TrimPrefix(o.Key, prefix), "-")
			if ms, err := strconv.ParseInt(stem, 10, 64); err == nil {
				found[o.Key] = time.UnixMilli(ms)
			}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("list the files of snapshots expired before their retention: %w", err)
		}
		t.deferredMu.Lock()
		t.deferredRecords, t.deferredListedAt = found, now
		t.deferredMu.Unlock()
	}
	t.deferredMu.Lock()
	defer t.deferredMu.Unlock()
	var due []string
	for key, at := range t.deferredRecords {
		if at.Before(cutoff) {
			due = append(due, key)
		}
	}
	return due, nil
}

// deleteDeferred deletes the files of the deferred-deletes records whose
// snapshots committed before cutoff, then the records, and returns how
// many files it deleted. A record that cannot be read is left to orphan
// removal with its files.
func (t *Table) deleteDeferred(ctx context.Context, cutoff time.Time) (int, error) {
	due, err := t.dueRecords(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	slices.Sort(due) // oldest first
	deleted := 0
	var errs []error
	for _, key := range due {
		b, _, err := storage.ReadAll(ctx, t.lake.store, key)
		if errors.Is(err, storage.ErrNotExist) {
			t.forgetRecord(key)
			continue // another round took it
		}
		var rec deferredRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", key, err))
			continue
		}
		n, err := t.deleteFiles(ctx, rec.Paths)
		deleted += n
		if err == nil {
			err = t.lake.store.Delete(ctx, key)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.forgetRecord(key)
	}
	return deleted, errors.Join(errs...)
}

// forgetRecord drops a deferred-deletes record the Table knew of.
func (t *Table) forgetRecord(key string) {
	t.deferredMu.Lock()
	defer t.deferredMu.Unlock()
	delete(t.deferredRecords, key)
}
