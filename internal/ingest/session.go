package ingest

import (
	"context"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// Session is a table open for loading under its ingest lease, for as long
// as its owner runs: `timelake serve` loads the files that object
// notifications announce and those its sweeps list, one Load at a time,
// with the machinery of Run (the already-loaded and content checks,
// quarantine, commits of up to FilesPerCommit files, deletes after the
// commit, OnFile results, table creation from the first file) and one
// table kept open between loads.
type Session struct {
	r       *runner
	ctx     context.Context // the lease's: cancelled with ErrLeaseLost when a renewal fails
	release func()
}

// Open opens cfg's table (none until the first file that decodes creates
// it, unless NoCreate), checks that the landing bucket exists and takes the
// table's ingest lease as a serve (landing.HolderServe), renewing it every
// third of LeaseTTL until Close.
// DryRun and MaxFiles do not apply to a session. ctx bounds the session:
// once it is done the lease is no longer renewed, so give it a context that
// outlives the loading and call Close to stop.
//
// Errors: those of Run before its first file: ErrLeaseHeld (a
// *landing.LeaseHeldError naming the holder), ErrNoTable, a landing bucket
// or table that cannot be read.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	cfg.DryRun, cfg.MaxFiles = false, 0
	r := newRunner(cfg, landing.HolderServe)
	lctx, release, err := r.open(ctx)
	if err != nil {
		return nil, withCause(lctx, err)
	}
	return &Session{r: r, ctx: lctx, release: release}, nil
}

// Done is closed when the session can load no more: its lease was lost or
// Open's context is done (Err says which).
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session lasts, then why it ended: an error wrapping
// ErrLeaseLost, or the error of Open's context.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// Table is the open table, nil until a file created it. Not to be called
// during a Load.
func (s *Session) Table() *lake.Table { return s.r.tbl }

// List lists the files to load below cfg.Prefix, in key order, skipping
// what the landing bucket's listing skips (landing.Bucket.Skipped). A
// folder of a local landing folder that cannot be read is left out with a
// warning naming it and the fix; the others are listed.
func (s *Session) List(ctx context.Context) ([]storage.ObjectInfo, error) {
	ctx, stop := s.bind(ctx)
	defer stop()
	files, _, err := s.r.list(ctx) // a folder that cannot be listed is logged, with the fix
	return files, withCause(ctx, err)
}

// Load loads files in the order given, as Run loads its listing, and
// returns the report of this load alone: its files in key order, the
// counts, the table if this load created it, the table's version after it.
// A file that no longer exists is left out of the report (and logged); one
// of a local folder that is not complete yet is waiting, with its
// FileResult.ReadyAt. Loads run one at a time.
//
// Errors: those of Run (files not finished stay in the landing bucket and
// the report has those that were); an error wrapping ErrLeaseLost when the
// lease was lost.
func (s *Session) Load(ctx context.Context, files []storage.ObjectInfo) (*Report, error) {
	return s.LoadBy(ctx, files, nil)
}

// LoadBy is Load, noting in each snapshot summary (and outcome record) how
// each key reached the session: by(key) is lake.LoadedByNotification,
// lake.LoadedBySweep, or "" for nothing (timelake.loaded-by). by is called
// from the pipeline's goroutines; nil notes nothing.
func (s *Session) LoadBy(ctx context.Context, files []storage.ObjectInfo, by func(key string) string) (*Report, error) {
	start := time.Now()
	r := s.r
	r.newReport()
	r.contents = nil                           // "this run" of content dedupe is one load
	r.probeOnce, r.probeErr = sync.Once{}, nil // and so is the lease read of fetchStopsRun
	r.loadedBy = by
	ctx, stop := s.bind(ctx)
	defer stop()
	err := withCause(ctx, r.load(ctx, files))
	r.recordOutcomes(ctx)
	r.finishReport(start)
	return r.rep, err
}

// Close stops renewing the lease and releases it (with its own deadline,
// whatever the state of Open's context). Call it once, after the last Load
// returned.
func (s *Session) Close() { s.release() }

// bind returns ctx, also cancelled (with the same cause) when the
// session's context is.
func (s *Session) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return ctx, func() { stop(); cancel(nil) }
}
