package lake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/storage"
)

// CommitRetryBase is the first backoff between commit attempts after a lost
// race; it doubles per attempt up to CommitRetryMax, with jitter. Tests may
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
	// build checks the mutation's requirements against base (version n,
	// the newest one), writes what the next version needs besides its
	// metadata (manifests, manifest lists, files of its own) and returns
	// the next version's metadata and its encoding. It returns:
	//   - errNothingToCommit when base already holds the change (e.g. every
	//     batch id is already in the ancestry): the commit ends without a
	//     write;
	//   - any other error when a requirement no longer holds or I/O
	//     failed: the commit gives up with that error.
	build(ctx context.Context, base *head, n int, attempt int) (*head, []byte, error)
	// finish runs once when the commit ends: won is the attempt whose
	// version was committed (0 for none), unknown reports that some
	// attempt's outcome could not be learnt (its files must then be kept:
	// they may be referenced). It deletes what the other attempts wrote.
	finish(ctx context.Context, won int, unknown bool)
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
}

// attemptWrite is one conditional write whose outcome is not known to
// have failed: a version number, the body written there, and the attempt.
type attemptWrite struct {
	version int
	body    []byte
	next    *head
	attempt int
}

// commit is the commit protocol: every change of a table goes through it.
// Each attempt loads the newest version N, first recognises a write of an
// earlier attempt that did land (a lost response: the catalog holds our
// body at its version), then has m build the next version on N (checking
// its requirements there) and creates version N+1 conditionally. A lost
// race, and a write whose outcome is unknown (connection lost, 5xx after
// the SDK's retries), is retried after a backoff with jitter, up to
// MaxAttempts attempts; the next attempt learns which it was. When it
// ends, m.finish deletes what the losing attempts wrote (only when every
// outcome is known). On success the Table holds the committed version.
//
// Errors: m's (a requirement that no longer holds), I/O errors of loading,
// a permanent error of the create (storage.IsPermanent: not retried), ctx's,
// and, after MaxAttempts lost races, an error wrapping
// table.ErrCommitFailed.
func (t *Table) commit(ctx context.Context, m mutation, opts CommitOptions) (res commitResult, err error) {
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultCommitAttempts
	}
	var writes []attemptWrite // writes that may have landed
	won, unknown := 0, false
	defer func() { m.finish(ctx, won, unknown && won == 0) }()

	parse := parseHead
	if lo, ok := m.(interface{ indexOnly() bool }); ok && lo.indexOnly() {
		parse = indexHead
	}
	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		res.Attempt, res.Attempts = attempt, attempt
		if attempt > 1 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return res, err
			}
		}
		base, n, err := t.lake.loadLatestWith(ctx, t.name, parse)
		if err != nil {
			return res, err
		}
		if err := checkFormatVersion(base.props()); err != nil {
			return res, fmt.Errorf("table %s: %w", t.name, err)
		}
		// Did an earlier attempt land after all?
		if w, still, err := t.landed(ctx, writes, n); err != nil {
			lastErr, unknown = err, true
			continue
		} else if w != nil {
			switch v, verr := t.verifyNewest(ctx, w.version, w.next, w.body); v {
			case verdictCommitted:
				won, unknown = w.attempt, false
				res.Committed, res.Attempt, res.Version = true, w.attempt, n
				return res, t.committed(ctx, w.next, w.version)
			case verdictUnknown:
				unknown = true
				return res, fmt.Errorf("%w: %w", errOutcomeUnknown, verr)
			}
			writes = still
			unknown = len(writes) > 0
		} else {
			writes = still
			unknown = len(writes) > 0
		}

		next, body, err := m.build(ctx, base, n, attempt)
		if errors.Is(err, errNothingToCommit) {
			if err := t.set(base, n); err != nil {
				return res, err
			}
			res.Version = n
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
		// Old versions are deleted after commits: a create into the slot
		// of one would succeed (verifyNewest). Make sure n is still the
		// newest right before creating n+1.
		if newest, err := t.lake.latestVersion(ctx, t.name); err != nil {
			return res, err
		} else if newest != n {
			lastErr = fmt.Errorf("v%d was created by another writer: %w", n+1, errVersionTaken)
			continue
		}
		err = t.lake.cat.create(ctx, t.name, n+1, body)
		if err == nil {
			switch v, verr := t.verifyNewest(ctx, n+1, next, body); v {
			case verdictCommitted:
				won, unknown = attempt, false
				res.Committed, res.Version = true, n+1
				t.lake.remember(t.name, n+1, next)
				return res, t.committed(ctx, next, n+1)
			case verdictUnknown:
				unknown = true
				return res, fmt.Errorf("%w: %w", errOutcomeUnknown, verr)
			}
			// A slot of a deleted old version: nobody builds on it.
			lastErr = fmt.Errorf("v%d was written after newer versions: %w", n+1, errVersionTaken)
			continue
		}
		if ctx.Err() != nil {
			// Cancelled mid-write: the outcome is unknown, and stays so.
			unknown = true
			return res, err
		}
		if storage.IsPermanent(err) {
			// Refused (access denied, a read-only disk): nothing was
			// written, and no retry can change that.
			return res, err
		}
		// Lost the race, or an unknown outcome: the next attempt reads the
		// newest version and learns whether this write landed.
		writes = append(writes, attemptWrite{version: n + 1, body: body, next: next, attempt: attempt})
		unknown = true
		lastErr = err
	}
	// A last look: the final attempt's write may have landed after all.
	if len(writes) > 0 {
		if _, n, err := t.lake.loadLatestWith(ctx, t.name, parse); err == nil {
			if w, still, err := t.landed(ctx, writes, n); err == nil {
				if w != nil {
					if v, _ := t.verifyNewest(ctx, w.version, w.next, w.body); v == verdictCommitted {
						won, unknown = w.attempt, false
						res.Committed, res.Attempt, res.Version = true, w.attempt, n
						return res, t.committed(ctx, w.next, w.version)
					}
				}
				unknown = len(still) > 0 || w != nil
			}
		}
	}
	return res, fmt.Errorf("gave up after %d commit attempts: %w: %w", maxAttempts, table.ErrCommitFailed, lastErr)
}

// landed checks the writes of earlier attempts against the catalog, newest
// version n: the one whose body the catalog holds is returned; the others
// at versions up to n are known to have lost and are dropped; those above n
// may still land (a delayed request) and stay in still.
func (t *Table) landed(ctx context.Context, writes []attemptWrite, n int) (w *attemptWrite, still []attemptWrite, err error) {
	for i := range writes {
		if writes[i].version > n {
			still = append(still, writes[i])
			continue
		}
		ok, err := t.lake.cat.holds(ctx, t.name, writes[i].version, writes[i].body)
		if err != nil {
			return nil, writes, fmt.Errorf("read v%d of %s to learn a commit's outcome: %w", writes[i].version, t.name, err)
		}
		if ok {
			return &writes[i], nil, nil
		}
	}
	return nil, still, nil
}

// errOutcomeUnknown ends a commit whose write landed but could not be
// confirmed as part of the table's history; its files are kept (orphan
// file removal takes them if it was not).
var errOutcomeUnknown = errors.New("commit outcome unknown")

// verdict is what verifyNewest learnt of a version this commit wrote.
type verdict int

const (
	verdictCommitted verdict = iota // the newest version, or the base of the next one
	verdictZombie                   // written into the slot of a deleted old version: not in the history
	verdictUnknown
)

// verifyNewest checks that version v, which this commit wrote (next, body),
// is part of the table's history. Old versions are deleted after commits
// (write.metadata.delete-after-commit.enabled), so a writer that stalled
// between reading version v-1 and creating v can create v after v and
// newer ones existed and v was deleted: the conditional create succeeds,
// but readers take the highest version and never see it. v is in the
// history if it is the newest version listed, or if version v+1 was built
// on it (its metadata-log's last entry is v's file with v's
// last-updated-ms, and it still has v's current snapshot). A version that
// is neither is deleted again (verdictZombie): nobody builds on a version
// that is not the newest. verdictUnknown when v+1 cannot be read (error
// returned).
func (t *Table) verifyNewest(ctx context.Context, v int, next *head, body []byte) (verdict, error) {
	newest, err := t.lake.latestVersion(ctx, t.name)
	if err != nil {
		return verdictUnknown, err
	}
	if newest <= v {
		return verdictCommitted, nil
	}
	succ, err := t.lake.readVersion(ctx, t.name, v+1, indexHead)
	if err != nil {
		return verdictUnknown, fmt.Errorf("read v%d to confirm v%d: %w", v+1, v, err)
	}
	var log []table.MetadataLogEntry
	if err := unmarshalOptional(succ.get("metadata-log"), &log); err != nil {
		return verdictUnknown, err
	}
	builtOn := len(log) > 0 && log[len(log)-1].MetadataFile == t.lake.metadataLocation(t.name, v) &&
		log[len(log)-1].TimestampMs == next.lastUpdated
	if builtOn && next.current >= 0 {
		builtOn = succ.snapshotIDTaken(next.snaps[next.current].id)
	}
	if builtOn {
		return verdictCommitted, nil
	}
	if ok, err := t.lake.cat.holds(ctx, t.name, v, body); err == nil && ok {
		if err := t.lake.store.Delete(ctx, metadataKey(t.name, v)); err != nil {
			t.lake.log.Warn("a metadata version written after newer ones was not deleted", "table", t.name.String(), "version", v, "err", err)
		}
	}
	return verdictZombie, nil
}

// committed moves the Table to the version it committed and does the
// chores that follow a commit.
func (t *Table) committed(ctx context.Context, next *head, v int) error {
	if err := t.set(next, v); err != nil {
		return err
	}
	t.afterCommit(ctx)
	return nil
}

func backoff(attempt int) time.Duration {
	d := CommitRetryBase << min(attempt-2, 10)
	if d > CommitRetryMax {
		d = CommitRetryMax
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
