// Package retry is the wait between the attempts of timelake's retry
// loops: the commit protocol after a lost race (lake), serve after a
// failed sweep, the lease's renewals (ingest) and its overlap check
// (landing). The backoff is cenkalti/backoff's exponential one; Sleep and
// Wait are the one sleep that a context, or a stop channel, cuts short.
package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Exponential returns a backoff whose waits start at base and double per
// call of NextBackOff up to max; jitter is the randomization factor (0.5:
// each wait drawn within ±50% of the doubled one, so that writers that
// lost a race to each other do not retry in step; 0: none). Reset starts
// it over.
func Exponential(base, max time.Duration, jitter float64) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: base, RandomizationFactor: jitter, Multiplier: 2, MaxInterval: max}
	b.Reset()
	return b
}

// Sleep waits d, or until ctx is done: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if !Wait(ctx, d, nil) {
		return ctx.Err()
	}
	return nil
}

// Wait waits d and reports true, or false as soon as ctx is done or stop
// (nil: none) is closed.
func Wait(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
