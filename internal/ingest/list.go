package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"golang.org/x/sync/semaphore"
)

// staleTempAge is the age after which a temporary file of a write to a
// local landing folder (storage.LocalStore's .tl-tmp-* files: an upload
// into the folder, a quarantine copy and its report, a requeue, a lease
// write) and a lock file of its compare-and-swaps (*.tl-lock) are left by
// a process that died: a write keeps its temporary file's modification
// time fresh while it copies (from a local file or memory, without pauses),
// and a lock is held for the microseconds of a stat and a rename (a lock
// older than 30 seconds is broken by the next writer anyway). An hour is
// far beyond both: no write under way, timelake's or another run's, loses
// its file. Names of other writers (.name.tmp, rsync's .name.XXXXXX) are
// never touched.
const staleTempAge = time.Hour

// removeStaleTemp removes, in a local landing folder, the temporary and
// lock files older than staleTempAge that killed processes left below the
// run's prefix, below the quarantine of that prefix, and in the lease
// folder (storage.LocalStore.StaleTemp; orphan removal does the same for
// a local table). It runs once per run, at most every staleTempAge/6 in a
// session, only under the lease; it is best effort: a failure is logged.
func (r *runner) removeStaleTemp(ctx context.Context) {
	if r.cfg.DryRun || r.leaseKey == "" || time.Since(r.tempSwept) < staleTempAge/6 {
		return
	}
	r.tempSwept = time.Now()
	before := time.Now().Add(-staleTempAge)
	type sweep struct {
		store  storage.Store
		prefix string
	}
	q := r.bucket.QuarantineFolder()
	sweeps := []sweep{{r.cfg.Landing, r.cfg.Prefix}}
	if r.cfg.Prefix != "" { // else the first sweep covers them
		sweeps = append(sweeps, sweep{r.cfg.Landing, q + r.cfg.Prefix}, sweep{r.cfg.Landing, q + landing.HashedFolder})
	}
	if r.cfg.LeaseStore != r.cfg.Landing || r.cfg.Prefix != "" {
		sweeps = append(sweeps, sweep{r.cfg.LeaseStore, landing.ReservedPrefix + "lease/"})
	}
	removed := 0
	for _, sw := range sweeps {
		st, ok := sw.store.(*storage.LocalStore)
		if !ok {
			continue
		}
		gone, err := st.StaleTemp(ctx, sw.prefix, before, false)
		removed += len(gone)
		if err != nil {
			r.log.Warn("temporary files of killed writes not removed", "folder", st.URI(), "prefix", sw.prefix, "err", err)
		}
	}
	if removed > 0 {
		r.log.Info("removed temporary and lock files that killed writes left in the landing folder", "files", removed)
	}
}

// list lists the files to load, in key order, up to MaxFiles (Remaining
// is set when more wait). A folder of a local landing folder that cannot
// be read (storage.UnlistedError) fails alone: the others are listed, and
// each gap is logged and returned as a failed result (unlisted) naming it
// and the fix.
func (r *runner) list(ctx context.Context) (files []storage.ObjectInfo, unlisted []FileResult, err error) {
	r.removeStaleTemp(ctx)
	errEnough := errors.New("enough")
	err = r.bucket.List(ctx, r.cfg.Prefix, func(o storage.ObjectInfo) error {
		if r.cfg.Accept != nil && !r.cfg.Accept(o.Key) {
			return nil
		}
		if r.cfg.MaxFiles > 0 && len(files) == r.cfg.MaxFiles {
			r.rep.Remaining = true
			return errEnough
		}
		files = append(files, o)
		return nil
	})
	var gaps *storage.UnlistedError
	if errors.As(err, &gaps) {
		for _, g := range gaps.Gaps {
			if r.bucket.Skipped(g.Key) {
				continue // a hidden folder, the quarantine: nothing there is loaded anyway
			}
			res := unlistedResult(r.cfg.Landing, g)
			r.log.Warn("a landing folder could not be listed: its files are not loaded until it can be", "key", g.Key, "err", g.Err, "fix", unlistedFix(r.cfg.Landing, g))
			unlisted = append(unlisted, res)
		}
		err = nil
	}
	if err != nil && !errors.Is(err, errEnough) {
		return nil, nil, r.landingErr(fmt.Errorf("list landing %s: %w", r.cfg.Landing.URI(), err))
	}
	return files, unlisted, nil
}

// unlistedResult is the failed result of a gap of a local landing folder's
// listing: the folder (its key ends in "/") or the file, why, and the fix.
func unlistedResult(st storage.Store, g storage.Unlisted) FileResult {
	what := "folder"
	if !strings.HasSuffix(g.Key, "/") {
		what = "file"
	}
	return FileResult{Key: g.Key, Status: Failed,
		Reason: fmt.Sprintf("this %s could not be listed (%v): %s; its files stay in the landing folder and a later run lists it again",
			what, g.Err, unlistedFix(st, g))}
}

// unlistedFix says how to let timelake list a gap of a listing.
func unlistedFix(st storage.Store, g storage.Unlisted) string {
	path := g.Key
	if ls, ok := st.(interface{ Path(string) string }); ok {
		path = ls.Path(strings.TrimSuffix(g.Key, "/"))
	}
	if errors.Is(g.Err, fs.ErrPermission) {
		return "let the user that runs timelake read " + path + " (a folder also needs execute permission: chmod, chown)"
	}
	return "check " + path + " and its disk"
}

// load loads files in the order given: one by one until the table exists
// (the first file that decodes creates it), then through the pipeline,
// which starts as soon as the table is created, while the file that
// created it is still being written.
func (r *runner) load(ctx context.Context, files []storage.ObjectInfo) error {
	files, err := r.holdIncomplete(ctx, files)
	if err != nil {
		return err
	}
	// The decoded bytes of every file in flight, the first included, stay
	// within the memory budget (admission).
	sem := semaphore.NewWeighted(r.memoryBudget())
	i := 0
	// Until the table exists, files go one by one: the first one that
	// decodes creates it. A file that cannot create the table is not
	// quarantined yet: the settings (--time-column, --series-key) may be
	// what is wrong. Once a table exists such files are tried again
	// against it; if none can create it, the run fails and moves nothing.
	var deferred []storage.ObjectInfo
	var firstCause error
	for ; i < len(files) && (r.tbl == nil || r.cfg.DryRun); i++ {
		var it *item
		if r.tbl == nil && !r.cfg.DryRun {
			c := r.startCreating(ctx, files[i], sem)
			select {
			case it = <-c.done:
				c.cancel()
			case <-c.created:
				// The table exists: the file goes on being written
				// while the pipeline loads the others.
				return r.pipeline(ctx, append(deferred, files[i+1:]...), sem, c)
			}
		} else {
			it = r.prepare(ctx, files[i], func(int64) error { return nil }) // one at a time
		}
		if it.deferred != nil {
			deferred = append(deferred, files[i])
			if firstCause == nil {
				firstCause = it.deferred
			}
			continue
		}
		finish, err := r.commit(ctx, []*item{it})
		if ferr := finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if r.tbl == nil && firstCause != nil {
		return fmt.Errorf("%w: no file of this run could create table %s; first problem: %w (check --time-column and --series-key; the files stay in the landing bucket)",
			ErrCannotCreate, r.cfg.Table, firstCause)
	}
	return r.pipeline(ctx, append(deferred, files[i:]...), sem, nil)
}

// creating is a file that may create the table, being prepared on a
// goroutine of its own (startCreating): created is closed once the table
// exists (created from it, or by another writer meanwhile), done receives
// the prepared item, cancel stops it.
type creating struct {
	created <-chan struct{}
	done    <-chan *item
	cancel  context.CancelFunc
}

// startCreating prepares o, with its share of the memory budget taken
// from sem, on a goroutine of its own.
func (r *runner) startCreating(ctx context.Context, o storage.ObjectInfo, sem *semaphore.Weighted) *creating {
	ctx, cancel := context.WithCancel(ctx)
	created, done := make(chan struct{}), make(chan *item, 1)
	r.tableReady = sync.OnceFunc(func() { close(created) })
	go func() { done <- r.prepareAdmitted(ctx, o, sem) }()
	return &creating{created: created, done: done, cancel: cancel}
}

// holdIncomplete holds back the files of a local folder that may still be being
// written: those modified within the holdIncomplete time (landing.Settle.ByAge;
// the rest of the rule applies once a file is read, in prepare). It waits
// for those complete within MaxSettleWait (not in a dry run), looks at them
// again and keeps those that did not change meanwhile; the others are
// reported as waiting at the end of the run and stay for a later one.
func (r *runner) holdIncomplete(ctx context.Context, files []storage.ObjectInfo) ([]storage.ObjectInfo, error) {
	if r.complete.Time <= 0 {
		return files, nil
	}
	now := time.Now()
	waiting := map[string]landing.Wait{}
	soon := map[string]storage.ObjectInfo{} // complete within MaxSettleWait
	var last time.Time
	for _, f := range files {
		if ahead := landing.ClockAhead(f.LastModified, now); ahead > 0 {
			r.noteClockAhead(f.Key, ahead)
		}
		w := r.complete.ByAge(landing.AgeFrom(f.LastModified, f.Changed, now), now)
		switch {
		case !w.Waiting():
		case !r.cfg.DryRun && w.Until.Sub(now) <= MaxSettleWait:
			soon[f.Key] = f
			last = maxTime(last, w.Until)
		default:
			waiting[f.Key] = w
		}
	}
	if len(soon) > 0 {
		t := time.NewTimer(time.Until(last))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		now = time.Now()
		for key, f := range soon {
			info, err := r.cfg.Landing.Stat(ctx, key)
			switch {
			case errors.Is(err, storage.ErrNotExist):
				waiting[key] = landing.Wait{} // gone (renamed, moved): not ours to report
			case err != nil:
				return nil, r.landingErr(err)
			case info.ETag != f.ETag:
				if w := r.complete.ByAge(landing.AgeFrom(info.LastModified, info.Changed, now), now); w.Waiting() {
					waiting[key] = w
				}
			}
		}
	}
	ready := files[:0:0]
	for _, f := range files {
		w, ok := waiting[f.Key]
		switch {
		case !ok:
			ready = append(ready, f)
		case w.Waiting():
			r.waiting = append(r.waiting, FileResult{Key: f.Key, Status: Waiting, Size: f.Size,
				Reason: w.Reason + "; a later run loads it", ReadyAt: w.Until})
		}
	}
	return ready, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
