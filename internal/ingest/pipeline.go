package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"golang.org/x/sync/semaphore"
)

// item is one landing file on its way through the pipeline.
type item struct {
	obj      storage.ObjectInfo
	res      FileResult
	start    time.Time
	src      *download      // size and checksum; its temp file is closed after prepare
	prepared *lake.Prepared // data files written, to commit
	done     bool           // res is final (already loaded, quarantined, dry run)
	gone     bool           // deleted by someone else since the listing: not reported
	err      error          // fatal: stop the run, leave the file in place
	deferred error          // could not create the table: retried once it exists
	// openEndNote says that the file's end is open and that it is loaded
	// as it is, past the open-end settle time (landing.Wait.Note): the
	// reason of its line once it is loaded.
	openEndNote string
}

// pipeline loads files with Parallel workers that download, decode and
// write data files, while this goroutine commits what is ready, up to
// FilesPerCommit snapshots per metadata write, and deletes the committed
// landing objects. The decoded bytes of files being decoded at once stay
// within MemoryBudget (admission); a worker takes its share only once its
// file is downloaded, so downloads overlap the decoding of other files.
//
// first, when not nil, is the file that created the table, still being
// written (creating): it holds its share of sem, and is committed with
// the others once ready.
func (r *runner) pipeline(ctx context.Context, files []storage.ObjectInfo, sem *semaphore.Weighted, first *creating) error {
	if len(files) == 0 && first == nil {
		return nil
	}
	workers, perCommit := r.cfg.Parallel, r.cfg.FilesPerCommit
	if workers <= 0 {
		workers = DefaultParallel
	}
	if perCommit <= 0 {
		perCommit = DefaultFilesPerCommit
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	jobs := make(chan storage.ObjectInfo)
	// Prepared items hold no decoded data (only the data files' metadata),
	// so up to a whole commit's worth may wait while the previous commit
	// runs: commits then carry many snapshots each.
	ready := make(chan *item, perCommit)
	go func() {
		defer close(jobs)
		for _, o := range files {
			select {
			case jobs <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	// A worker that meets a fatal error (the store refused a request, a
	// data file could not be written) stops the others at once: the next
	// files would most likely meet the same error.
	var stopOnce sync.Once
	var stopErr error
	stop := func(err error) {
		stopOnce.Do(func() { stopErr = err; cancel() })
	}
	var wg sync.WaitGroup
	deliver := func(it *item) {
		if it.err != nil && ctx.Err() == nil {
			stop(it.err)
		}
		ready <- it
	}
	if first != nil {
		// The file that created the table takes a worker's place (with
		// one worker, files still go one at a time): the worker starts
		// on the other files once it is written. Its context ends with
		// the pipeline's.
		context.AfterFunc(ctx, first.cancel)
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w == 0 && first != nil {
				deliver(<-first.done)
			}
			for o := range jobs {
				deliver(r.prepareAdmitted(ctx, o, sem))
			}
		}()
	}
	go func() { wg.Wait(); close(ready) }()

	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	wait := r.cfg.CommitWait
	if wait <= 0 {
		wait = DefaultCommitWait
	}
	ex := &runExpirer{start: time.Now()}
	var finishing chan error // the previous batch's finish, while it runs
	waitFinish := func() {
		if finishing != nil {
			if err := <-finishing; err != nil {
				fail(err)
			}
			finishing = nil
		}
	}
	for it := range ready {
		// Gather up to perCommit prepared files, waiting at most wait for
		// more: every metadata write rewrites the whole table history, so
		// fewer, fuller commits cost less; the wait ends at once when the
		// last file is ready.
		batch := []*item{it}
		timer := time.NewTimer(wait)
	gather:
		for len(batch) < perCommit && firstErr == nil {
			select {
			case more, ok := <-ready:
				if !ok {
					break gather
				}
				batch = append(batch, more)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		if firstErr != nil {
			r.discard(ctx, batch)
			continue
		}
		// The snapshots of one commit, and the report's lines, in key
		// order (the listing's), whichever file was ready first.
		slices.SortStableFunc(batch, func(a, b *item) int { return strings.Compare(a.obj.Key, b.obj.Key) })
		finish, err := r.commit(ctx, batch)
		waitFinish()
		if err != nil {
			if ferr := finish(); ferr != nil {
				fail(ferr)
			}
			fail(err)
			continue
		}
		// The deletes of this batch overlap the next commit; results are
		// still recorded batch by batch, in order.
		finishing = make(chan error, 1)
		go func(done chan<- error) { done <- finish() }(finishing)
		// A long run keeps its table small: the snapshots past their
		// retention expire between its commits.
		r.expireBetween(ctx, ex)
	}
	waitFinish()
	if stopErr != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
		return stopErr
	}
	return firstErr
}

// prepareAdmitted prepares o holding its share of the memory budget,
// taken from sem after the download and given back once its data files
// are written. The semaphore serves waiters in order, so a large file is
// not starved by smaller ones behind it.
func (r *runner) prepareAdmitted(ctx context.Context, o storage.ObjectInfo, sem *semaphore.Weighted) *item {
	var held int64
	it := r.prepare(ctx, o, func(share int64) error {
		if err := sem.Acquire(ctx, share); err != nil {
			return err
		}
		held = share
		return nil
	})
	if held > 0 {
		sem.Release(held)
	}
	return it
}

// discard deletes the data files of prepared items that will not be
// committed; their landing files stay for the next run.
func (r *runner) discard(ctx context.Context, items []*item) {
	// Runs on cancellation paths too: clean up within a bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, it := range items {
		if it.prepared != nil {
			r.tbl.Discard(ctx, it.prepared)
		}
	}
}

// admission is the share of the memory budget a file of the given decoded
// size (decode.DecodedSize: a compressed file by its decompressed bytes)
// holds while it is decoded and written: its size, or the whole budget for
// a file larger than it, which is decoded in pieces of the budget.
func admission(decoded, budget int64) int64 { return min(max(decoded, 1), budget) }
