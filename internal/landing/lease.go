package landing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// ErrLeaseHeld is returned (wrapped in *LeaseHeldError) when another ingest
// run holds an unexpired lease on the table.
var ErrLeaseHeld = errors.New("another ingest run holds the lease")

// LeaseHeldError names the holder of a lease and when it expires.
type LeaseHeldError struct {
	Key     string
	Holder  string
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: %s holds %s until %s (it expires by itself if that run died)",
		ErrLeaseHeld, e.Holder, e.Key, e.Expires.UTC().Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) work.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// leaseBody is the lease object's JSON.
type leaseBody struct {
	Holder   string    `json:"holder"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
}

// Lease is an ingest lease: an object created with a conditional create
// (If-None-Match: *) that carries its own expiry, so a crashed run never
// blocks the next ones for longer than the TTL. An expired lease is taken
// over with a compare-and-swap (If-Match on its ETag), so two runs that both
// see it expired cannot both win.
type Lease struct {
	store  storage.Store
	key    string
	holder string
	ttl    time.Duration
	now    func() time.Time
	etag   string
	body   leaseBody
}

// LeaseKey is the landing key of the lease for a table.
func LeaseKey(table string) string { return ReservedPrefix + "lease/" + table + ".json" }

// AcquireLease takes the lease at key for ttl or returns *LeaseHeldError.
// now is the clock (time.Now when nil).
func AcquireLease(ctx context.Context, store storage.Store, key, holder string, ttl time.Duration, now func() time.Time) (*Lease, error) {
	if now == nil {
		now = time.Now
	}
	l := &Lease{store: store, key: key, holder: holder, ttl: ttl, now: now}
	for range 3 {
		err := l.write(ctx, storage.PutOptions{IfAbsent: true})
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			return nil, l.abandon(ctx, err)
		}
		cur, info, err := l.read(ctx)
		if errors.Is(err, storage.ErrNotExist) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return nil, err
		}
		if now().Before(cur.Expires) {
			return nil, &LeaseHeldError{Key: key, Holder: cur.Holder, Expires: cur.Expires}
		}
		err = l.write(ctx, storage.PutOptions{IfMatch: info.ETag})
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			return nil, l.abandon(ctx, err)
		}
		// Someone else took it over first: read it again.
	}
	cur, _, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	return nil, &LeaseHeldError{Key: key, Holder: cur.Holder, Expires: cur.Expires}
}

// abandon follows a lease write that failed with writeErr, whose outcome is
// unknown: a cancelled or interrupted write may still have landed (the file
// was created, or the PUT reached the server), and such a lease would block
// every run for its TTL. It deletes the lease when it names this holder,
// with its own short deadline since ctx may be done, and returns writeErr,
// joined with the reason when the lease may be left behind.
func (l *Lease) abandon(ctx context.Context, writeErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cur, _, err := l.read(ctx)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return writeErr
	case err == nil && cur.Holder != l.holder:
		return writeErr // another run's lease
	case err == nil:
		err = l.store.Delete(ctx, l.key)
		if err == nil {
			return writeErr
		}
	}
	return errors.Join(writeErr, fmt.Errorf("the lease %s may be left behind until it expires: %w", l.key, err))
}

func (l *Lease) read(ctx context.Context) (leaseBody, storage.ObjectInfo, error) {
	b, info, err := storage.ReadAll(ctx, l.store, l.key)
	if err != nil {
		return leaseBody{}, info, fmt.Errorf("read lease: %w", err)
	}
	var body leaseBody
	if err := json.Unmarshal(b, &body); err != nil {
		// An unreadable lease is treated as expired.
		return leaseBody{}, info, nil
	}
	return body, info, nil
}

func (l *Lease) write(ctx context.Context, opts storage.PutOptions) error {
	t := l.now().UTC()
	body := leaseBody{Holder: l.holder, Acquired: t, Expires: t.Add(l.ttl)}
	if l.etag != "" {
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

// Expires returns when the lease lapses unless renewed.
func (l *Lease) Expires() time.Time { return l.body.Expires }

// Renew extends the lease by its TTL. It fails with ErrLeaseHeld when the
// lease was taken over (the run outlived its TTL without renewing).
func (l *Lease) Renew(ctx context.Context) error {
	err := l.write(ctx, storage.PutOptions{IfMatch: l.etag})
	if errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("renew lease %s: %w", l.key, ErrLeaseHeld)
	}
	return err
}

// Release deletes the lease if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	info, err := l.store.Stat(ctx, l.key)
	if errors.Is(err, storage.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if info.ETag != l.etag {
		return nil // taken over: not ours to delete
	}
	if err := l.store.Delete(ctx, l.key); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}
