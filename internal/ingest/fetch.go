package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/timelake/timelake/internal/storage"
)

// A landing file that cannot be fetched is that file's problem, not the
// run's (docs/ingest.md, "When one file cannot be loaded"): it is
// reported as failed with its reason, stays in the landing bucket for a
// later run, and the run goes on with the others. What stops the run is
// what every other file would meet too: the download folder is missing or
// not writable, or the landing bucket refuses reads for a setup reason
// (credentials, permissions, an unreachable endpoint), which a read of the
// run's own lease tells apart from a refusal of one object.

// notFetched settles an item whose download failed with err: waiting (it
// changed while it was read), gone (deleted since the listing: not
// reported), failed, or a fatal item error.
func (r *runner) notFetched(ctx context.Context, it *item, err error) {
	key := it.obj.Key
	var wd *workDirError
	switch {
	case ctx.Err() != nil:
		it.err = ctx.Err()
	case errors.Is(err, errChanging):
		it.res.Status, it.res.Reason, it.done = Waiting, "it changed while it was read: it may still be being written; a later run loads it", true
	case errors.As(err, &wd) && !wd.fits():
		it.err = err
	case errors.As(err, &wd):
		r.fail(it, err)
	case errors.Is(err, storage.ErrNotExist):
		listed, lerr := r.stillListed(ctx, key)
		switch {
		case lerr != nil:
			it.err = r.landingErr(lerr)
		case listed && strings.ContainsRune(key, utf8.RuneError):
			r.fail(it, fmt.Errorf("listed in the landing bucket as %q but cannot be fetched under that name: %w; "+
				"the listing has U+FFFD in the key, which a server writes for a character its XML listing cannot carry (a control character such as ESC) "+
				"when it does not url-encode listings: rename the object to a key without control characters", key, err))
		case listed:
			r.fail(it, fmt.Errorf("listed in the landing bucket but cannot be fetched: %w", err))
		default:
			// Deleted since the listing, by something else than this run
			// (a person, a run whose lease expired): nothing was loaded.
			r.log.Warn("a listed file was gone before it was read: not loaded by this run", "key", key)
			it.gone, it.done = true, true
		}
	case r.fetchStopsRun(ctx, err):
		it.err = r.landingErr(err)
	default:
		r.fail(it, fmt.Errorf("cannot be fetched: %w", err))
	}
}

// fail reports an item as failed: left in the landing bucket for a later
// run.
func (r *runner) fail(it *item, err error) {
	r.log.Info("a landing file could not be loaded; it stays for a later run", "key", it.obj.Key, "err", err)
	it.res.Status, it.done = Failed, true
	it.res.Reason = err.Error() + "; it stays in the landing bucket and a later run tries again"
}

// stopsRun reports whether a failed write or delete of the landing bucket
// about one file stops the run: ctx is done, or the store refused it for a
// setup reason (storage.Diagnose: credentials, permissions, a read-only
// disk), which the other files would meet too.
func (r *runner) stopsRun(ctx context.Context, err error) bool {
	return ctx.Err() != nil || storage.Diagnose(err, r.cfg.Explain.Landing, r.cfg.Explain.Names) != nil
}

// fetchStopsRun is stopsRun for a read of one file: a refusal for a setup
// reason stops the run only when a read of the run's own lease meets it
// too (checked once per run). A refusal of one object (an object another
// account wrote, an archived object, a local file of another user) leaves
// the others to load.
func (r *runner) fetchStopsRun(ctx context.Context, err error) bool {
	if !r.stopsRun(ctx, err) {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	r.probeOnce.Do(func() { r.probeErr = r.probeLandingRead(ctx) })
	return r.probeErr != nil
}

// probeLandingRead reads the run's lease back: it fails when the landing
// bucket refuses every read.
func (r *runner) probeLandingRead(ctx context.Context) error {
	if r.leaseKey == "" {
		return errors.New("no lease to read")
	}
	_, _, err := storage.ReadAll(ctx, r.cfg.LeaseStore, r.leaseKey)
	return err
}

// stillListed reports whether the landing bucket still has key, listed
// by this run, whose GET said it does not exist: a HEAD finds it, or a
// second listing names it again as the first did. Only a key that both
// miss is gone (deleted since the listing). The listing starts at the
// longest prefix of the key that is printable ASCII (listablePrefix), so
// that a key the server's listing changed (a character it cannot write
// replaced by U+FFFD) is found again as it was listed, and stops past key.
func (r *runner) stillListed(ctx context.Context, key string) (bool, error) {
	_, err := r.cfg.Landing.Stat(ctx, key)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, storage.ErrNotExist) {
		return false, err
	}
	errFound, errPast := errors.New("found"), errors.New("past the key")
	err = r.cfg.Landing.List(ctx, listablePrefix(key), func(o storage.ObjectInfo) error {
		switch {
		case o.Key == key:
			return errFound
		case o.Key > key:
			return errPast
		}
		return nil
	})
	var gaps *storage.UnlistedError
	switch {
	case errors.Is(err, errFound):
		return true, nil
	case err == nil, errors.Is(err, errPast), errors.As(err, &gaps):
		return false, nil
	}
	return false, err
}

// listablePrefix is the longest prefix of key made of printable ASCII,
// which every listing writes as it is.
func listablePrefix(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return key[:i]
		}
	}
	return key
}

// workDir is the download folder.
func (r *runner) workDir() string {
	if r.cfg.WorkDir != "" {
		return r.cfg.WorkDir
	}
	return os.TempDir()
}

// workDirError is a download that the download folder cannot take: the
// folder cannot hold a file at all (missing, not writable: every file
// would fail, the run stops), or has too little free space for this one
// (size > 0: that file fails).
type workDirError struct {
	dir  string
	key  string
	size int64 // bytes of the file; 0 when the folder takes no file
	free int64 // bytes free in dir; -1 when unknown
	err  error
}

// fits reports whether the folder takes files, only not this one.
func (e *workDirError) fits() bool { return e.size > 0 }

func (e *workDirError) Error() string {
	if !e.fits() {
		return fmt.Sprintf("download folder %s: %v (set TMPDIR to a folder timelake can write)", e.dir, e.err)
	}
	free := "free space unknown"
	if e.free >= 0 {
		free = mebibytes(e.free) + " free"
	}
	return fmt.Sprintf("%s (%s) does not fit in the download folder %s (%s); free space there, or set TMPDIR to a folder on a larger disk",
		e.key, mebibytes(e.size), e.dir, free)
}

// mebibytes renders a size for a message about disk space (12.3 MiB).
func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (e *workDirError) Unwrap() error { return e.err }

// freeBytes is the free space of a folder (diskFree; tests replace it).
var freeBytes = diskFree

// roomFor checks, before a download, that the download folder has room
// for the object (its free space, where the system tells it).
func (r *runner) roomFor(o storage.ObjectInfo) error {
	free, err := freeBytes(r.workDir())
	if err != nil || o.Size <= free {
		return nil // unknown: the copy tells
	}
	return &workDirError{dir: r.workDir(), key: o.Key, size: o.Size, free: free, err: io.ErrShortWrite}
}

// noRoom is the error of a download the disk ran out of space for (other
// downloads may have filled it meanwhile).
func (r *runner) noRoom(key string, size int64, err error) error {
	free, ferr := freeBytes(r.workDir())
	if ferr != nil {
		free = -1
	}
	return &workDirError{dir: r.workDir(), key: key, size: max(size, 1), free: free, err: err}
}
