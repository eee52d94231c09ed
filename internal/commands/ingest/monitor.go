package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
)

// afterRun tells what the run of c's table did, when --notify-url or
// --metrics-file is set: the files it quarantined and those that failed
// (an alert each, naming the table), whether it failed (a condition that
// ends with the next run of the table that finishes), the gateways'
// figures (silent gateways and stuck files as conditions;
// docs/operations.md) and the table's metrics, returned for the metrics
// file (nil without one). busy: the previous run still works (exit 12),
// which is no failure and changes no figure. A dry run tells nothing. The
// figures that cannot be computed are a warning, and the run's own
// metrics are returned without them.
func (o *Options) afterRun(ctx context.Context, c ingest.Config, rep *ingest.Report, runErr error, started time.Time, busy bool) *fleet.TableMetrics {
	m := o.Monitor
	if m == nil || (!m.Alerts() && m.MetricsFile == "") || c.DryRun || busy || rep == nil {
		return nil
	}
	table, landingURI := c.Table.String(), c.Landing.URI()
	var quarantined, failed []alert.File
	for _, f := range rep.Files {
		switch f.Status {
		case ingest.Quarantined:
			quarantined = append(quarantined, alert.File{Key: f.Key, Reason: f.Reason})
		case ingest.Failed:
			failed = append(failed, alert.File{Key: f.Key, Reason: f.Reason})
		}
	}
	if len(quarantined) > 0 {
		m.Notify(fleet.QuarantineAlert(table, landingURI, quarantined))
	}
	if len(failed) > 0 {
		m.Notify(fleet.FailedAlert(table, landingURI, failed))
	}
	events := []string{alert.EventRunFailed}
	var holding []alert.Condition
	// Another run holding the lease (a serve, an overlapping prefix) is
	// not this poller failing: the condition neither opens nor ends.
	if runErr != nil && errors.Is(runErr, ingest.ErrLeaseHeld) {
		events = nil
	} else if runErr != nil {
		holding = append(holding, fleet.RunFailedCondition(table, landingURI, "ingest", runErr))
	}
	var st *fleet.Status
	if ctx.Err() == nil {
		var err error
		if st, err = o.status(ctx, c); err != nil {
			c.Logger.Warn("gateway figures not computed: no silent-gateway or stuck-file alerts, and no gateway metrics, this run", "table", table, "err", err)
		} else {
			events = append(events, fleet.StatusEvents...)
			holding = append(holding, fleet.StatusConditions(st, m.StuckAfter)...)
		}
	}
	m.Update(ctx, m.Tracker(c.Landing, fleet.SourcePoller, c.Table, c.Prefix), events, holding)
	if m.MetricsFile == "" {
		return nil
	}
	run := &fleet.Run{Table: table, At: started, Seconds: rep.Seconds,
		OK: runErr == nil, Loaded: rep.Loaded, Duplicates: rep.AlreadyLoaded, Quarantined: rep.Quarantined,
		Waiting: rep.Waiting, Failed: rep.Failed, Rows: rep.Rows}
	if rep.Maintenance != nil {
		seconds := rep.Maintenance.Took.Seconds()
		run.MaintenanceSeconds = &seconds
	}
	return &fleet.TableMetrics{Table: table, Status: st, Run: run}
}

// writeMetrics writes the metrics of the tables of the run to the metrics
// file; nothing without one, or without a table that told its metrics.
// Errors: writing the file.
func (o *Options) writeMetrics(tables []fleet.TableMetrics) error {
	if o.Monitor == nil || o.Monitor.MetricsFile == "" || len(tables) == 0 {
		return nil
	}
	return fleet.WriteTablesTextfile(o.Monitor.MetricsFile, tables)
}

// status computes the gateways' figures of c's table after its run: those
// of the landing keys c takes (c.Accept).
func (o *Options) status(ctx context.Context, c ingest.Config) (*fleet.Status, error) {
	m := o.Monitor
	t, err := c.Lake.LoadTable(ctx, c.Table)
	if errors.Is(err, lake.ErrTableNotFound) {
		t, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fleet.ComputeStatus(ctx, fleet.StatusOptions{Bucket: bucketOf(c), Prefix: c.Prefix, Accept: c.Accept, Table: t, TableName: c.Table.String(),
		Depth: m.Depth, ExpectEvery: m.ExpectEvery, Now: time.Now()})
}

// bucketOf is the landing bucket of c as ingest lists it.
func bucketOf(c ingest.Config) *landing.Bucket {
	return &landing.Bucket{Store: c.Landing, QuarantinePrefix: c.QuarantinePrefix}
}
