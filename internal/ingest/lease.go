package ingest

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/timelake/timelake/internal/landing"
)

// ErrLeaseLost stops a run whose lease renewal failed (another run took the
// lease over, or the landing store refused the write): the files committed
// so far stay committed, the others stay in the landing bucket.
var ErrLeaseLost = landing.ErrLeaseLost

// takeLease breaks the blocking leases if asked, then takes this run's
// lease. The returned release removes it (with its own deadline: it runs
// when ctx may be done).
func (r *runner) takeLease(ctx context.Context) (*heldLease, error) {
	opts := landing.LeaseOptions{Table: r.cfg.Table.String(), Prefix: r.cfg.LeasePrefix, Holder: r.cfg.Holder,
		TTL: r.cfg.LeaseTTL, Now: r.cfg.Now, Logger: r.log}
	if r.cfg.BreakLease {
		broken, err := landing.BreakLeases(ctx, r.cfg.LeaseStore, opts)
		r.rep.BrokenLeases = append(r.rep.BrokenLeases, broken...)
		if err != nil {
			return nil, r.landingErr(err)
		}
	}
	lease, err := landing.AcquireLease(ctx, r.cfg.LeaseStore, opts)
	if errors.Is(err, landing.ErrLeaseHeld) {
		return nil, err
	}
	if err != nil {
		return nil, r.landingErr(err)
	}
	return &heldLease{lease: lease, log: r.log}, nil
}

// heldLease is the run's lease.
type heldLease struct {
	lease *landing.Lease
	log   *slog.Logger
}

// release deletes the lease even when ctx was cancelled. A failure is only
// logged: the run's outcome stands, and the lease expires by itself.
func (h *heldLease) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.lease.Release(rctx); err != nil {
		h.log.Warn("lease not released (it expires by itself)", "lease", h.lease.Key(), "err", err)
	}
}
