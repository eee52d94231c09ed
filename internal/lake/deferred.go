package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// then the records. A record lost or not written leaves its files to
// orphan removal, as the files of any expiry cut short are.

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
	if _, err := t.lake.store.Put(ctx, t.lake.ownKey(t.name, name), bytes.NewReader(body), storage.PutOptions{}); err != nil {
		return fmt.Errorf("record the files of snapshots expired before their retention: %w", err)
	}
	return nil
}

// deleteDeferred deletes the files of the deferred-deletes records whose
// snapshots committed before cutoff, then the records, and returns how
// many files it deleted. A record that cannot be read is left to orphan
// removal with its files.
func (t *Table) deleteDeferred(ctx context.Context, cutoff time.Time) (int, error) {
	prefix := t.lake.ownKey(t.name, deferredRecordPrefix)
	var due []string
	err := t.lake.store.List(ctx, prefix, func(o storage.ObjectInfo) error {
		stem, _, _ := strings.Cut(strings.TrimPrefix(o.Key, prefix), "-")
		if ms, err := strconv.ParseInt(stem, 10, 64); err == nil && time.UnixMilli(ms).Before(cutoff) {
			due = append(due, o.Key)
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list the files of snapshots expired before their retention: %w", err)
	}
	deleted := 0
	var errs []error
	for _, key := range due {
		b, _, err := storage.ReadAll(ctx, t.lake.store, key)
		if errors.Is(err, storage.ErrNotExist) {
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
		}
	}
	return deleted, errors.Join(errs...)
}
