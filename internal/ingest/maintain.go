package ingest

import (
	"context"
	"time"

	"github.com/timelake/timelake/internal/lake"
)

// DefaultMaintenanceBudget bounds the maintenance after an ingest run: a
// sixth of a one-minute cron interval, so the next run never waits for it.
const DefaultMaintenanceBudget = 10 * time.Second

// Maintain runs lake.Table.Maintain within budget (after an ingest run,
// and between loads in serve) and returns its report. A failure does not
// fail the run, whose files are committed: it is reported (the report's
// Error), and `timelake tables maintain` fails on it.
func Maintain(ctx context.Context, tbl *lake.Table, budget time.Duration) *lake.MaintainReport {
	rep, _ := tbl.Maintain(ctx, lake.MaintainOptions{Budget: budget})
	return &rep
}
