package landing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// ErrLeaseLost is the cause of the context Keep cancels when a renewal
// fails (another run took the lease over, or the landing store refused
// the write): the work done so far stands, the rest stops.
var ErrLeaseLost = errors.New("lease lost, run stopped")

// Keep renews l every third of its TTL until the returned stop function is
// called. A renewal that fails for a passing reason (a 5xx answer, a lost
// connection) is tried again while the lease has time left; a renewal that
// cannot succeed (the lease was taken over, a permanent error, no time
// left) cancels the returned context with ErrLeaseLost as its cause, so
// that the holder stops instead of working without the lease. explain,
// when not nil, words a renewal's error for that cause (the caller's
// explanation of landing errors).
func (l *Lease) Keep(ctx context.Context, explain func(error) error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stopped := make(chan struct{})
	ttl := l.opts.TTL
	retryWait := min(max(ttl/30, 10*time.Millisecond), 5*time.Second)
	wait := func(d time.Duration) bool { return retry.Wait(ctx, d, done) }
	go func() {
		defer close(stopped)
		for wait(max(ttl/3, time.Millisecond)) {
			err := l.Renew(ctx)
			for err != nil && !errors.Is(err, ErrLeaseTaken) && !storage.IsPermanent(err) &&
				l.Expires().Sub(l.opts.Now()) > ttl/6+retryWait {
				l.opts.Logger.Warn("lease renewal failed, trying again", "lease", l.Key(), "err", err)
				if !wait(retryWait) {
					return
				}
				err = l.Renew(ctx)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if explain != nil {
					err = explain(err)
				}
				// Not wrapped: a lease taken over is a failure of the
				// holder's run (exit 1), not "another run holds it"
				// (exit 11).
				cancel(fmt.Errorf("%w (is another run working on the table?): %v", ErrLeaseLost, err))
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		<-stopped
		cancel(nil)
	}
}
