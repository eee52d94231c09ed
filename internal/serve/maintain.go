package serve

import (
	"context"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// maintainer runs rounds of table maintenance beside the loading, on a
// table value of its own: the commit protocol orders its commits with the
// loads' (lake: maintenance races appends), so loads never wait for it.
type maintainer struct {
	l      *lane
	tbl    *lake.Table   // loaded by the first round, refreshed by each (Maintain)
	done   chan struct{} // closed when the round under way ended; nil before the first
	cancel context.CancelFunc
}

func (m *maintainer) running() bool {
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// start runs one round (ingest.Maintain within MaintenanceBudget); stop
// cancels it.
func (m *maintainer) start(ctx context.Context) {
	l := m.l
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		var err error
		if m.tbl == nil {
			m.tbl, err = l.cfg.Lake.LoadTable(ctx, l.cfg.Table)
		}
		var rep *lake.MaintainReport
		if err != nil {
			rep = &lake.MaintainReport{Table: l.cfg.Table, Error: err.Error()}
		} else {
			rep = ingest.Maintain(ctx, m.tbl, l.cfg.MaintenanceBudget)
		}
		if ctx.Err() != nil {
			return // stopped: a stop is not a failure
		}
		result := "ok"
		if rep.Error != "" {
			result = "error"
		}
		l.m.maintenance.WithLabelValues(result).Inc()
		if err == nil { // the round ran (the table loaded)
			l.m.maintainSeconds.Observe(rep.Took.Seconds())
		}
		if l.s.cfg.OnMaintenance != nil {
			l.s.cfg.OnMaintenance(l.cfg.Table, rep)
		}
	}()
}

// stop cancels the round under way and waits for it.
func (m *maintainer) stop() {
	if m.done == nil {
		return
	}
	m.cancel()
	<-m.done
}
