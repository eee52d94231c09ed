package landing

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
)

// Fleet is what audit and status read: the landing bucket (below the
// poller's --prefix), the table it loads into, and the monitoring
// settings.
type Fleet struct {
	Bucket *landing.Bucket
	Prefix string
	// Table is the table's name; OpenTable loads it (nil when it does not
	// exist yet), with its errors explained as the warehouse's.
	Table     lake.TableName
	OpenTable func(ctx context.Context) (*lake.Table, error)
	Monitor   *lakecmd.Monitor
}

// openFleet resolves --landing, --prefix, --quarantine-prefix, the
// warehouse and the table (both required) and the monitoring settings,
// and opens the stores (no request is sent yet).
func openFleet(cmd *cobra.Command, f *cmdutil.Factory) (Fleet, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return Fleet{}, err
	}
	loc := settings.Landing.Require(r)
	fl := Fleet{Prefix: settings.LandingPrefix.Get(r), Table: settings.Table.Require(r)}
	quarantine := settings.QuarantinePrefix.Get(r)
	warehouse := settings.Warehouse.Require(r)
	if err := r.Err(); err != nil {
		return Fleet{}, err
	}
	if fl.Monitor, err = lakecmd.ResolveMonitor(f, r); err != nil {
		return Fleet{}, err
	}
	st, err := f.OpenStore(cmd.Context(), cmd, loc)
	if err != nil {
		return Fleet{}, err
	}
	fl.Bucket = &landing.Bucket{Store: st, QuarantinePrefix: quarantine}
	fl.OpenTable = func(ctx context.Context) (*lake.Table, error) {
		l, err := lakecmd.OpenLake(ctx, f, cmd, warehouse)
		if err != nil {
			return nil, f.ExplainLake(cmd, err)
		}
		t, err := l.LoadTable(ctx, fl.Table)
		if errors.Is(err, lake.ErrTableNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, f.ExplainLake(cmd, err)
		}
		return t, nil
	}
	return fl, nil
}

// begin loads the table (nil when it does not exist yet) and reads the
// clock (now; nil means time.Now): what audit and status start with.
func (fl Fleet) begin(ctx context.Context, now func() time.Time) (*lake.Table, time.Time, error) {
	if now == nil {
		now = time.Now
	}
	t, err := fl.OpenTable(ctx)
	return t, now(), err
}
