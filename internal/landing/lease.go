package landing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// ErrLeaseHeld is returned (wrapped in *LeaseHeldError) when another run
// (an ingest or a serve) holds an unexpired lease on the table and prefix,
// or on an overlapping prefix.
var ErrLeaseHeld = errors.New("another run holds the lease")

// ErrLeaseTaken is returned by Renew when another run took the lease over
// (this run outlived its TTL without renewing, or the lease was broken).
var ErrLeaseTaken = errors.New("the lease was taken over by another run")

// LeaseHeldError names the holder of a lease that blocks a run: what it is
// (an ingest run or a serve), where it runs (host, PID), since when it
// holds the lease and until when, and whether it is known to be gone.
type LeaseHeldError struct {
	Key    string
	Holder string // the holder's token, host:pid:run
	// Kind, Host and PID are the holder's (Holder): Kind is HolderIngest,
	// HolderServe or "" (a lease of an earlier version).
	Kind string
	Host string
	PID  int
	// OnThisHost: the holder runs on this host, and its process is alive.
	OnThisHost bool
	// State is "live", or "expired" / "dead" (its process no longer runs
	// on this host) for a lease that blocks all the same (only then is
	// --break-lease suggested).
	State    string
	Prefix   string // the holder's landing prefix
	Mine     string // the prefix of the run that was refused
	MineKind string // the refused run's kind: HolderIngest or HolderServe
	Acquired time.Time
	Expires  time.Time
}

// Busy reports whether the holder is the previous run of the same poller
// still working: an ingest on the same table and prefix, refusing an
// ingest. That is a normal backlog, not a failure.
func (e *LeaseHeldError) Busy() bool {
	return e.Kind == HolderIngest && e.MineKind == HolderIngest && e.Prefix == e.Mine && e.State == "live"
}

// Info describes the blocking lease as BreakLeases reports one.
func (e *LeaseHeldError) Info() LeaseInfo {
	return LeaseInfo{Key: e.Key, Holder: e.Holder, Kind: e.Kind, Host: e.Host, PID: e.PID, Prefix: e.Prefix,
		Acquired: e.Acquired, Expires: e.Expires, State: e.State}
}

// holderText names the holder: "ingest poller-1:4242:0a1b2c (host
// poller-1, pid 4242)"; a lease of an earlier version has no kind.
func (e *LeaseHeldError) holderText() string {
	s := e.Holder
	if e.Kind != "" {
		s = e.Kind + " " + s
	}
	if e.Host != "" && e.PID > 0 {
		s += fmt.Sprintf(" (host %s, pid %d)", e.Host, e.PID)
	}
	return s
}

func (e *LeaseHeldError) Error() string {
	since := ""
	if !e.Acquired.IsZero() {
		since = " since " + e.Acquired.UTC().Format(time.RFC3339)
	}
	until := e.Expires.UTC().Format(time.RFC3339)
	var b strings.Builder
	switch {
	case e.Prefix != e.Mine:
		fmt.Fprintf(&b, "%s holds the lease %s%s until %s for landing prefix %q of the table, which overlaps prefix %q of this run; give the pollers of one table disjoint prefixes",
			e.holderText(), e.Key, since, until, e.Prefix, e.Mine)
	case e.Busy():
		fmt.Fprintf(&b, "the previous run is still working: %s holds the lease %s%s, renewed until %s; this run did nothing",
			e.holderText(), e.Key, since, until)
	case e.Kind == HolderServe && e.MineKind != HolderServe:
		fmt.Fprintf(&b, "%s holds the lease %s%s until %s (renewed while it runs): a serve loads this table, so ingest does not; run either serve or ingest for a table (docs/serve.md)",
			e.holderText(), e.Key, since, until)
	default:
		fmt.Fprintf(&b, "%s holds the lease %s%s until %s", e.holderText(), e.Key, since, until)
	}
	switch {
	case e.State == "expired" || e.State == "dead":
		fmt.Fprintf(&b, " (its holder is %s: timelake ingest --break-lease removes it now)", map[string]string{"expired": "expired", "dead": "gone from this host"}[e.State])
	case e.OnThisHost:
		fmt.Fprintf(&b, " (its process %d is running on this host)", e.PID)
	default:
		fmt.Fprintf(&b, " (if that run died, its lease expires by itself at %s)", until)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) work.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// leaseBody is the lease object's JSON. holder, acquired and expires are
// read by every timelake version; the rest was added with per-prefix
// leases (a lease without "prefix" covers the whole landing bucket).
type leaseBody struct {
	Holder
	Table    string    `json:"table,omitempty"`
	Prefix   string    `json:"prefix"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
}

// LeaseOptions describe the lease a run takes.
type LeaseOptions struct {
	// Table is the table name (namespace.table).
	Table string
	// Prefix is the landing key prefix the run loads ("" for all of it).
	// Runs on overlapping prefixes of one table exclude each other; runs on
	// disjoint prefixes hold separate leases and load at the same time.
	Prefix string
	// Holder identifies the run; the zero value means NewHolder().
	Holder Holder
	// TTL is how long the lease lasts without renewal.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the take-over messages; nil means slog.Default().
	Logger *slog.Logger
}

func (o *LeaseOptions) defaults() {
	if o.Holder.Token == "" {
		o.Holder = NewHolder()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Lease is an ingest lease on a table and landing prefix: an object in the
// landing bucket's reserved prefix, created with a conditional create
// (If-None-Match: *) and carrying its holder's token and its own expiry, so
// a crashed run never blocks the next ones for longer than the TTL. Taking
// over, renewal and release are conditional writes too; the protocol is in
// docs/ingest.md, "The ingest lease".
type Lease struct {
	store storage.Store
	key   string
	opts  LeaseOptions
	etag  string
	body  leaseBody
}

// LeaseKey is the landing key of the lease of table on landing prefix:
// _timelake/lease/<table>.json for the whole bucket (the key of earlier
// timelake versions), _timelake/lease/<table>/<escaped prefix>.json for a
// prefix.
func LeaseKey(table, prefix string) string {
	if prefix == "" {
		return leaseBase(table) + ".json"
	}
	return leaseBase(table) + "/" + url.PathEscape(prefix) + ".json"
}

func leaseBase(table string) string { return ReservedPrefix + "lease/" + table }

// PrefixesOverlap reports whether a key can start with both prefixes: one
// is a prefix of the other ("" overlaps every prefix).
func PrefixesOverlap(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// maxOverlapTries bounds the back-offs of a run that meets a lease on an
// overlapping prefix that was taken a moment ago (two runs that started
// together both back off; a random wait separates them).
const maxOverlapTries = 3

// overlapBackoff is the shortest wait of a run that backed off from an
// overlapping lease before it tries again (up to 5 times as long, at
// random). A variable so that tests can shorten it.
var overlapBackoff = 200 * time.Millisecond

// recentLease is how young an overlapping lease must be for a backed-off run
// to try again in this run.
const recentLease = 5 * time.Second

// AcquireLease takes the lease of opts.Table on opts.Prefix in store for
// opts.TTL. It returns *LeaseHeldError (errors.Is ErrLeaseHeld) when a live
// lease of another run covers the same or an overlapping prefix, or the
// storage error of a write whose outcome it could not resolve.
func AcquireLease(ctx context.Context, store storage.Store, opts LeaseOptions) (*Lease, error) {
	opts.defaults()
	l := &Lease{store: store, key: LeaseKey(opts.Table, opts.Prefix), opts: opts}
	for attempt := 1; ; attempt++ {
		if err := l.take(ctx); err != nil {
			return nil, err
		}
		held, err := l.overlapping(ctx)
		if err == nil && held == nil {
			return l, nil
		}
		if rerr := l.Release(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			return nil, err
		}
		if attempt == maxOverlapTries || opts.Now().Sub(held.Acquired) > recentLease {
			return nil, held
		}
		if err := retry.Sleep(ctx, overlapBackoff+rand.N(4*overlapBackoff)); err != nil {
			return nil, err
		}
	}
}

// take creates or takes over this run's lease key.
func (l *Lease) take(ctx context.Context) error {
	self := l.opts.Holder
	for range 3 {
		err := l.write(ctx, storage.PutOptions{IfAbsent: true}, false)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			return l.resolve(ctx, err)
		}
		cur, info, err := l.read(ctx)
		if errors.Is(err, storage.ErrNotExist) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return err
		}
		if cur.Token == self.Token {
			// Our own write, whose response was lost.
			l.etag, l.body = info.ETag, cur
			return nil
		}
		if l.live(cur) {
			return l.heldError(cur)
		}
		if cur.gone(self) {
			l.opts.Logger.Warn("taking over the lease of a run that died on this host",
				"lease", l.key, "holder", cur.Token, "pid", cur.PID, "since", cur.Acquired.UTC().Format(time.RFC3339))
		} else {
			l.opts.Logger.Info("taking over an expired lease",
				"lease", l.key, "holder", cur.Token, "expired", cur.Expires.UTC().Format(time.RFC3339))
		}
		err = l.write(ctx, storage.PutOptions{IfMatch: info.ETag}, false)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			return l.resolve(ctx, err)
		}
		// Someone else took it over first, or our take-over landed and its
		// response was lost: read it again.
	}
	cur, _, err := l.read(ctx)
	if err != nil {
		return err
	}
	if cur.Token == self.Token {
		return l.resolve(ctx, nil)
	}
	return l.heldError(cur)
}

// live reports whether a lease blocks others: unexpired, and not held by a
// process known to be dead.
func (l *Lease) live(b leaseBody) bool {
	return l.opts.Now().Before(b.Expires) && !b.gone(l.opts.Holder)
}

func (l *Lease) heldError(b leaseBody) *LeaseHeldError {
	return l.heldBy(l.key, b)
}

// heldBy describes lease key of body b as blocking this run.
func (l *Lease) heldBy(key string, b leaseBody) *LeaseHeldError {
	self := l.opts.Holder
	e := &LeaseHeldError{Key: key, Holder: b.Token, Kind: b.Kind, Host: b.Host, PID: b.PID, Prefix: b.Prefix,
		Mine: l.opts.Prefix, MineKind: self.Kind, Acquired: b.Acquired, Expires: b.Expires, State: "live"}
	switch {
	case b.gone(self):
		e.State = "dead"
	case !l.opts.Now().Before(b.Expires):
		e.State = "expired"
	default:
		e.OnThisHost = b.onThisHost(self)
	}
	return e
}

// resolve settles a lease write that failed with writeErr and whose outcome
// is unknown (a lost response, a timeout, a cancellation: the write may
// have landed). It reads the lease back, with its own short deadline since
// ctx may be done: our token means the write landed and the run holds the
// lease (nil); when ctx is done, such a lease is deleted instead, as the
// run will not use it. Anything else returns writeErr (joined with the
// reason when a lease of ours may be left behind).
func (l *Lease) resolve(ctx context.Context, writeErr error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cur, info, err := l.read(rctx)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return orUnknown(writeErr)
	case err != nil:
		return errors.Join(orUnknown(writeErr), fmt.Errorf("the lease %s may be left behind until it expires: %w", l.key, err))
	case cur.Token != l.opts.Holder.Token:
		return orUnknown(writeErr) // another run's lease
	}
	l.etag, l.body = info.ETag, cur
	if ctx.Err() == nil {
		return nil // ours
	}
	if err := l.store.DeleteIfMatch(rctx, l.key, info.ETag); err != nil {
		return errors.Join(orUnknown(writeErr), fmt.Errorf("the lease %s may be left behind until it expires: %w", l.key, err))
	}
	return orUnknown(writeErr)
}

func orUnknown(err error) error {
	if err == nil {
		return errors.New("lease write with unknown outcome")
	}
	return err
}

// overlapping returns the held error of a live lease of the same table on
// an overlapping prefix, if there is one. Leases of runs that died on this
// host are deleted on the way (conditionally, so a renewed one stays).
func (l *Lease) overlapping(ctx context.Context) (*LeaseHeldError, error) {
	var held *LeaseHeldError
	err := l.eachLease(ctx, func(key string, b leaseBody, info storage.ObjectInfo) error {
		if key == l.key || b.Token == l.opts.Holder.Token {
			return nil
		}
		if !l.live(b) {
			if b.gone(l.opts.Holder) {
				l.opts.Logger.Warn("removing the lease of a run that died on this host",
					"lease", key, "holder", b.Token, "pid", b.PID, "since", b.Acquired.UTC().Format(time.RFC3339))
				if err := l.store.DeleteIfMatch(ctx, key, info.ETag); err != nil && !errors.Is(err, storage.ErrPreconditionFailed) {
					return err
				}
			}
			return nil
		}
		if PrefixesOverlap(b.Prefix, l.opts.Prefix) && held == nil {
			held = l.heldBy(key, b)
		}
		return nil
	})
	return held, err
}

// eachLease calls fn with every lease of the table: its key, body and info.
// Leases deleted while listing are skipped.
func (l *Lease) eachLease(ctx context.Context, fn func(key string, b leaseBody, info storage.ObjectInfo) error) error {
	base := leaseBase(l.opts.Table)
	var keys []string
	err := l.store.List(ctx, base, func(o storage.ObjectInfo) error {
		if o.Key == base+".json" || strings.HasPrefix(o.Key, base+"/") {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("list leases of %s: %w", l.opts.Table, err)
	}
	for _, key := range keys {
		b, info, err := readLease(ctx, l.store, key)
		if errors.Is(err, storage.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(key, b, info); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lease) read(ctx context.Context) (leaseBody, storage.ObjectInfo, error) {
	return readLease(ctx, l.store, l.key)
}

func readLease(ctx context.Context, store storage.Store, key string) (leaseBody, storage.ObjectInfo, error) {
	b, info, err := storage.ReadAll(ctx, store, key)
	if err != nil {
		return leaseBody{}, info, fmt.Errorf("read lease %s: %w", key, err)
	}
	var body leaseBody
	if err := json.Unmarshal(b, &body); err != nil {
		// An unreadable lease is treated as expired.
		return leaseBody{}, info, nil
	}
	return body, info, nil
}

// write puts this run's lease body with opts; renewal keeps the time it
// was acquired.
func (l *Lease) write(ctx context.Context, opts storage.PutOptions, renewal bool) error {
	t := l.opts.Now().UTC()
	body := leaseBody{Holder: l.opts.Holder, Table: l.opts.Table, Prefix: l.opts.Prefix, Acquired: t, Expires: t.Add(l.opts.TTL)}
	if renewal {
		body.Acquired = l.body.Acquired
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	opts.ContentType = "application/json"
	info, err := l.store.Put(ctx, l.key, bytes.NewReader(b), opts)
	if err != nil {
		return fmt.Errorf("write lease %s: %w", l.key, err)
	}
	l.etag, l.body = info.ETag, body
	return nil
}

// Key returns the lease's landing key.
func (l *Lease) Key() string { return l.key }

// Expires returns when the lease lapses unless renewed.
func (l *Lease) Expires() time.Time { return l.body.Expires }

// Renew extends the lease by its TTL with a compare-and-swap. A write whose
// response was lost is recognised by reading the lease back (our token
// under a new ETag: renewed). It fails with ErrLeaseTaken when another run
// holds the lease now, and with the storage error otherwise (the lease is
// then still ours until it expires: the caller may try again).
func (l *Lease) Renew(ctx context.Context) error {
	old := l.etag
	err := l.write(ctx, storage.PutOptions{IfMatch: old}, true)
	if err == nil {
		return nil
	}
	cur, info, rerr := l.read(ctx)
	switch {
	case rerr == nil && cur.Token == l.opts.Holder.Token && info.ETag != old:
		l.etag, l.body = info.ETag, cur // our write landed
		return nil
	case errors.Is(err, storage.ErrPreconditionFailed) && (rerr == nil || errors.Is(rerr, storage.ErrNotExist)):
		holder := "nobody (it was removed)"
		if rerr == nil {
			holder = cur.Token
		}
		return fmt.Errorf("renew lease %s: %w: now held by %s", l.key, ErrLeaseTaken, holder)
	}
	return fmt.Errorf("renew lease %s: %w", l.key, err)
}

// Release deletes the lease if it is still ours (a conditional delete on
// its ETag). A lease taken over meanwhile is left to its new holder.
func (l *Lease) Release(ctx context.Context) error {
	err := l.store.DeleteIfMatch(ctx, l.key, l.etag)
	if errors.Is(err, storage.ErrPreconditionFailed) {
		cur, info, rerr := l.read(ctx)
		if rerr == nil && cur.Token == l.opts.Holder.Token {
			// A renewal landed after its response was lost.
			err = l.store.DeleteIfMatch(ctx, l.key, info.ETag)
		} else {
			return nil // taken over: not ours to delete
		}
	}
	if err != nil && !errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}

// LeaseInfo describes a lease removed by BreakLeases.
type LeaseInfo struct {
	Key    string `json:"key"`
	Holder string `json:"holder"`
	// Kind, Host and PID are the holder's: Kind is "ingest", "serve" or
	// absent (a lease of an earlier version).
	Kind     string    `json:"kind,omitempty"`
	Host     string    `json:"host,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Prefix   string    `json:"prefix"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	// State is "expired", "dead" (its process no longer runs on this
	// host) or "live" (as far as can be told).
	State string `json:"state"`
}

// BreakLeases removes the leases that would block a run with opts: the
// lease of its table and prefix and every lease of the table on an
// overlapping prefix, live or not, each with a conditional delete on the
// ETag it was read with. It returns what it removed, for the operator. A
// lease renewed while it is being broken is left (its holder is alive) and
// reported as an error.
func BreakLeases(ctx context.Context, store storage.Store, opts LeaseOptions) ([]LeaseInfo, error) {
	opts.defaults()
	l := &Lease{store: store, key: LeaseKey(opts.Table, opts.Prefix), opts: opts}
	var broken []LeaseInfo
	var errs []error
	err := l.eachLease(ctx, func(key string, b leaseBody, info storage.ObjectInfo) error {
		if key != l.key && !PrefixesOverlap(b.Prefix, opts.Prefix) {
			return nil
		}
		li := LeaseInfo{Key: key, Holder: b.Token, Kind: b.Kind, Host: b.Host, PID: b.PID, Prefix: b.Prefix,
			Acquired: b.Acquired, Expires: b.Expires, State: "live"}
		switch {
		case b.gone(opts.Holder):
			li.State = "dead"
		case !opts.Now().Before(b.Expires):
			li.State = "expired"
		}
		err := store.DeleteIfMatch(ctx, key, info.ETag)
		switch {
		case errors.Is(err, storage.ErrPreconditionFailed):
			errs = append(errs, fmt.Errorf("lease %s of %s was renewed while it was being broken: its run is alive; not removed", key, b.Token))
		case err != nil:
			return fmt.Errorf("break lease %s: %w", key, err)
		default:
			broken = append(broken, li)
		}
		return nil
	})
	if err != nil {
		return broken, err
	}
	return broken, errors.Join(errs...)
}
