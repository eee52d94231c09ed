package lake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// CommitRetryBase is the first backoff between commit attempts after a lost
// race; it doubles per attempt up to CommitRetryMax, with ±50% jitter
// (retry.Exponential). Tests may
// lower it.
var (
	CommitRetryBase = 25 * time.Millisecond
	CommitRetryMax  = 2 * time.Second
)

// DefaultCommitAttempts bounds the attempts of one commit when
// CommitOptions.MaxAttempts is 0.
const DefaultCommitAttempts = 20

// CommitOptions tune a commit (of appends, an expiry, a rollback, a
// rewrite or a property change: every change of a table goes through the
// same protocol).
type CommitOptions struct {
	// MaxAttempts bounds commit attempts after lost races; 0 means
	// DefaultCommitAttempts.
	MaxAttempts int
	// BeforeCommit, when set, runs before each attempt's conditional write
	// (fault injection in tests: another writer commits first).
	BeforeCommit func(attempt int) error
}

// mutation is one change to a table. The commit protocol (Table.commit)
// builds it again on the newest version at every attempt: Iceberg's
// optimistic concurrency, where a writer that loses the race for the next
// version refreshes, re-checks its requirements and retries (Iceberg spec,
// "Optimistic Concurrency").
type mutation interface {
	// build checks the mutation's requirements against base (at v, the
	// newest version), writes what the next version needs besides its
	// metadata (manifests, manifest lists, files of its own) and returns
	// the change that makes the next version (tablemeta.Change). It returns:
	//   - errNothingToCommit, or an empty change, when base already holds
	//     the change (e.g. every batch id is already in the ancestry): the
	//     commit ends without a write;
	//   - any other error when a requirement no longer holds or I/O
	//     failed: the commit gives up with that error.
	build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error)
	// cleanUp runs once when the commit ends: won is the attempt whose
	// version was committed (0 for none), unknown reports that some
	// attempt's outcome could not be learnt (its files must then be kept:
	// they may be referenced). It deletes what the other attempts wrote.
	cleanUp(ctx context.Context, won int, unknown bool)
}

// errNothingToCommit ends a commit whose change base already holds.
var errNothingToCommit = errors.New("nothing to commit")

// commitResult says how a commit ended.
type commitResult struct {
	// Committed is false when the mutation found nothing to write.
	Committed bool
	// Attempt is the attempt whose version was committed, or the last one.
	Attempt int
	// Attempts is how many attempts were made (more than Attempt when an
	// earlier attempt's write turned out to have landed).
	Attempts int
	// Version is the table's version after the commit (the committed one,
	// or the newest one read).
	Version int
	// rebased is set when a REST catalog applied the change to a newer
	// version than the one it was built on.
	rebased *rebase
}

// attemptWrite is one commit whose outcome is not known to have failed:
// the version it was built on, its change, the version it wrote (the file
// catalog's: the metadata and its encoding; nil with a REST catalog)
// (catalog.Write), and the attempt.
type attemptWrite struct {
	catalog.Write
	attempt int
}

// rebase is a commit a REST catalog applied to a newer version than the
// one the mutation built on: the requirements let the other writer's
// changes through (catalog.Catalog.Commit). Mutations that depend on more
// of their base than the requirements assert (the load history's segment
// list) make good the overlap (Table.reconcileHistory).
type rebase struct {
	base    *tablemeta.Indexed
	applied string // the location of the version the change was applied to
}

// commit is the commit protocol: every change of a table goes through it,
// whichever catalog holds the table's versions. Each attempt loads the
// newest version N, first recognises a commit of an earlier attempt that
// did land (a lost response: catalog.Catalog.Landed), then has m build the
// next version on N (checking its requirements there) and commits it
// (catalog.Catalog.Commit: the conditional create of N+1, or a REST
// updateTable with requirements). A lost race, and a commit whose outcome is unknown
// (connection lost, a 5xx after the SDK's retries, a REST 5xx or timeout),
// is retried after a backoff with jitter, up to MaxAttempts attempts; the
// next attempt learns which it was. When it ends, m.cleanUp deletes what
// the losing attempts wrote, only when no commit that may still land is
// left (its files may be referenced). On success the Table holds the
// committed version.
//
// Errors: m's (a requirement that no longer holds), I/O errors of loading,
// a permanent error of the commit (isPermanent: not retried), ctx's, and,
// after MaxAttempts lost races, an error wrapping table.ErrCommitFailed.
func (t *Table) commit(ctx context.Context, m mutation, opts CommitOptions) (res commitResult, err error) {
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultCommitAttempts
	}
	cat := t.lake.cat
	var writes []attemptWrite // commits that may have landed
	won := 0
	defer func() { m.cleanUp(ctx, won, len(writes) > 0) }()

	parse := tablemeta.Parse
	if lo, ok := m.(interface{ indexOnly() bool }); ok && lo.indexOnly() {
		parse = tablemeta.Index
	}
	var lastErr error
	wait := retry.Exponential(CommitRetryBase, CommitRetryMax, 0.5)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		res.Attempt, res.Attempts = attempt, attempt
		if attempt > 1 {
			if err := retry.Sleep(ctx, wait.NextBackOff()); err != nil {
				return res, err
			}
		}
		base, bv, err := cat.Latest(ctx, t.name, parse)
		if err != nil {
			return res, err
		}
		if err := checkFormatVersion(base.Props()); err != nil {
			return res, fmt.Errorf("table %s: %w", t.name, err)
		}
		// Did an earlier attempt land after all?
		w, hold, still, err := t.landed(ctx, writes, base, bv)
		switch {
		case errors.Is(err, catalog.ErrOutcomeUnknown):
			return res, err
		case err != nil:
			lastErr = err
			continue
		case w != nil:
			won, writes = w.attempt, still
			res.Committed, res.Attempt, res.Version = true, w.attempt, hold.Ref.N
			return res, t.committed(ctx, *hold)
		}
		writes = still

		ch, err := m.build(ctx, base, bv, attempt)
		if err == nil && ch.Empty() {
			err = errNothingToCommit
		}
		if errors.Is(err, errNothingToCommit) {
			if err := t.set(base, bv); err != nil {
				return res, err
			}
			res.Version = bv.N
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if opts.BeforeCommit != nil {
			if err := opts.BeforeCommit(attempt); err != nil {
				return res, err
			}
		}
		aw := attemptWrite{Write: catalog.Write{BaseRef: bv, Base: base, Change: ch}, attempt: attempt}
		cv, applied, err := cat.Commit(ctx, t.name, &aw.Write)
		switch {
		case err == nil:
			won = attempt
			res.Committed, res.Version = true, cv.Ref.N
			if applied != bv.Location {
				res.rebased = &rebase{base: base, applied: applied}
			}
			if len(writes) > 0 {
				// Earlier commits that this one makes impossible (it took
				// their version, it moved the branch they asserted) are
				// settled; the others may still land.
				if _, _, still, err := t.landed(ctx, writes, cv.Meta, cv.Ref); err == nil {
					writes = still
				}
			}
			return res, t.committed(ctx, cv)
		case errors.Is(err, catalog.ErrOutcomeUnknown):
			writes = append(writes, aw)
			return res, err
		case errors.Is(err, catalog.ErrRaceLost):
			lastErr = err
			continue
		case ctx.Err() != nil:
			// Cancelled mid-commit: the outcome is unknown, and stays so.
			writes = append(writes, aw)
			return res, err
		case isPermanent(err):
			// Refused (access denied, a read-only disk, a request the
			// catalog rejects): nothing was written, and no retry can
			// change that.
			return res, err
		}
		// An unknown outcome (a 412 for our own create is one): the next
		// attempt reads the newest version and learns whether it landed.
		writes = append(writes, aw)
		lastErr = err
	}
	// A last look: the final attempt's commit may have landed after all.
	if len(writes) > 0 {
		if base, bv, err := cat.Latest(ctx, t.name, parse); err == nil {
			if w, hold, still, err := t.landed(ctx, writes, base, bv); err == nil {
				writes = still
				if w != nil {
					won = w.attempt
					res.Committed, res.Attempt, res.Version = true, w.attempt, hold.Ref.N
					return res, t.committed(ctx, *hold)
				}
			}
		}
	}
	return res, fmt.Errorf("gave up after %d commit attempts: %w: %w", maxAttempts, table.ErrCommitFailed, lastErr)
}

// landed asks the catalog about the commits of earlier attempts, against
// the newest version (base at bv): the one that landed is returned with
// the version the Table then holds; still are the others that may yet
// land.
func (t *Table) landed(ctx context.Context, writes []attemptWrite, base *tablemeta.Indexed, bv versionRef) (w *attemptWrite, hold *committedVersion, still []attemptWrite, err error) {
	for i := range writes {
		h, final, err := t.lake.cat.Landed(ctx, t.name, base, bv, writes[i].Write)
		if err != nil {
			return nil, nil, writes, err
		}
		switch {
		case h != nil && w == nil:
			w, hold = &writes[i], h
		case !final:
			still = append(still, writes[i])
		}
	}
	return w, hold, still, nil
}

// isPermanent reports an error of a commit that no retry can change:
// nothing was written.
func isPermanent(err error) bool {
	return storage.IsPermanent(err) || catalog.IsPermanent(err) || errors.Is(err, tablemeta.ErrInvalidChange)
}

// committed moves the Table to the version it committed and does the
// chores that follow a commit.
func (t *Table) committed(ctx context.Context, cv committedVersion) error {
	if err := t.set(cv.Meta, cv.Ref); err != nil {
		return err
	}
	t.afterCommit(ctx)
	return nil
}
