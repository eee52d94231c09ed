package landing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
)

// StatusOptions are the inputs of `landing status`.
type StatusOptions struct {
	Output
	Fleet
	// Now is the time of the figures; nil means time.Now.
	Now func() time.Time
}

// errSilent is the error of a status with silent gateways (exit 1, after
// the figures were printed).
var errSilent = errors.New("gateways are silent")

// NewCmdStatus builds `landing status`. runF replaces RunStatus in tests;
// nil means RunStatus.
func NewCmdStatus(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--expect-every D] [--gateway-depth N]",
		Short: "Per gateway: last file landed and loaded, newest row time, files waiting, rejects of the last day, silent ones",
		Long: `Show the freshness of every gateway: the first folder of its landing keys
(--gateway-depth folders), from the landing bucket, the quarantine and the
table's history (snapshots, load history, outcome log; within the dedupe
window): when its last file landed and when its last one was loaded, the
newest row time loaded, the files waiting in the landing bucket and the
oldest of them, its quarantined files, and its files loaded, found
duplicates and rejected in the last 24 hours.

Against the cadence each gateway is expected at (--expect-every, else the
table's timelake.expect-every), a gateway that landed no file for twice as
long is silent. Exit code 1 when a gateway is silent (after the figures),
0 otherwise. --metrics-file writes the same figures as Prometheus metrics
for node_exporter's textfile collector; --notify-url alerts silent gateways
and stuck files (once, then every 4 hours, and when they end).

With --route PATTERN=TABLE (repeated, or TIMELAKE_ROUTES) instead of --table,
each routed table's gateways are those of the landing keys its routes take,
its figures against its own history, and the keys no route takes are listed
as unrouted (docs/routing.md).`,
		Example: `  timelake landing status --env-file timelake.env
  timelake landing status --expect-every 1m --json
  timelake landing status --metrics-file /var/lib/node_exporter/textfile/timelake.prom
  timelake landing status --route 'readings/**=iot.readings' --route 'events/**=iot.events'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := &StatusOptions{Output: Output{IO: f.IO, JSON: f.JSON}}
			var err error
			if opts.Fleet, err = openFleet(cmd, f); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunStatus)
		},
	}
	settings.Bind(cmd.Flags(), settings.LandingStatus)
	return cmd
}

// RunStatus computes the gateways' figures (fleet.ComputeStatus), prints
// them, writes the metrics file and sends the alerts. With routes, it does
// so for each routed table on the keys its routes take, and reports the
// landing keys no route takes. It returns a *cmdutil.SilentError with exit
// 1 when a gateway is silent.
func RunStatus(ctx context.Context, opts *StatusOptions) error {
	m := opts.Monitor
	defer m.Close(ctx)
	tables, unrouted, now, err := opts.begin(ctx, opts.Now)
	if err != nil {
		return err
	}
	doc := RoutedStatus{Routes: opts.Routes.Rules(), Tables: []*fleet.Status{}, Unrouted: unrouted}
	var metrics []fleet.TableMetrics
	for _, ft := range tables {
		st, err := fleet.ComputeStatus(ctx, fleet.StatusOptions{Bucket: opts.Bucket, Prefix: opts.Prefix, Accept: ft.accept, Table: ft.table,
			TableName: ft.name.String(), Depth: m.Depth, ExpectEvery: m.ExpectEvery, Now: now})
		if err != nil {
			return opts.tableErr(ft.name, err)
		}
		doc.Tables = append(doc.Tables, st)
		doc.Silent += st.Silent
		metrics = append(metrics, fleet.TableMetrics{Table: st.Table, Status: st})
	}
	if m.MetricsFile != "" {
		if err := fleet.WriteTablesTextfile(m.MetricsFile, metrics); err != nil {
			return err
		}
	}
	for i, ft := range tables {
		m.Update(ctx, m.Tracker(opts.Bucket.Store, fleet.SourceStatus, ft.name, opts.Prefix), fleet.StatusEvents,
			fleet.StatusConditions(doc.Tables[i], m.StuckAfter))
	}
	if len(opts.Routes) == 0 {
		err = RenderStatus(opts.Output, doc.Tables[0])
	} else {
		if doc.Unrouted == nil {
			doc.Unrouted = []route.Unrouted{}
		}
		err = RenderRoutedStatus(opts.Output, &doc)
	}
	if err != nil {
		return err
	}
	if doc.Silent > 0 {
		return &cmdutil.SilentError{Code: cmdutil.ExitFailed, Err: fmt.Errorf("%d %w", doc.Silent, errSilent)}
	}
	return nil
}

// RoutedStatus is the status of a landing bucket with routes: the figures
// of each routed table, in name order, and the landing keys no route
// takes (or two take to different tables).
type RoutedStatus struct {
	Routes   []string         `json:"routes"`
	Tables   []*fleet.Status  `json:"tables"`
	Unrouted []route.Unrouted `json:"unrouted"`
	Silent   int              `json:"silent"`
}

var statusColumns = []iostreams.Column{
	{Header: "gateway"},
	{Header: "last landed (utc)", Pipe: "last_landed"},
	{Header: "last loaded (utc)", Pipe: "last_loaded"},
	{Header: "newest row (utc)", Pipe: "newest_row_time"},
	{Header: "waiting", Right: true},
	{Header: "oldest waiting (utc)", Pipe: "oldest_waiting"},
	{Header: "quarantined", Right: true},
	{Header: "loaded 24h", Pipe: "loaded_last_day", Right: true},
	{Header: "duplicates 24h", Pipe: "duplicates_last_day", Right: true},
	{Header: "rejected 24h", Pipe: "rejected_last_day", Right: true},
	{Header: "state", Pipe: "silent"},
}

// RenderStatus prints st: one JSON document with --json; else one row per
// gateway (on a terminal then a summary line; in a pipe silent is true
// or false).
func RenderStatus(o Output, st *fleet.Status) error {
	if o.JSON {
		return o.IO.PrintJSON(st)
	}
	tty := o.IO.IsStdoutTTY()
	t := o.IO.NewTable(statusColumns...)
	for _, g := range st.Gateways {
		t.AddRow(statusRow(st, g, tty)...)
	}
	if tty && len(st.Gateways) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no gateways: %s holds no files and %s remembers none\n", st.Landing, st.Table)
		return err
	}
	if err := t.Render(); err != nil || !tty {
		return err
	}
	return statusSummary(o, st)
}

// RenderRoutedStatus prints doc: one JSON document with --json; else one
// row per gateway of every table, its first column the table (on a
// terminal then each table's summary line and the keys no route takes; in
// a pipe those keys go to stderr, after the rows).
func RenderRoutedStatus(o Output, doc *RoutedStatus) error {
	if o.JSON {
		return o.IO.PrintJSON(doc)
	}
	tty := o.IO.IsStdoutTTY()
	t := o.IO.NewTable(append([]iostreams.Column{{Header: "table"}}, statusColumns...)...)
	for _, st := range doc.Tables {
		for _, g := range st.Gateways {
			t.AddRow(append([]string{st.Table}, statusRow(st, g, tty)...)...)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	w := o.IO.ErrOut
	if tty {
		w = o.IO.Out
		for _, st := range doc.Tables {
			if err := statusSummary(o, st); err != nil {
				return err
			}
		}
	}
	for _, u := range doc.Unrouted {
		if _, err := iostreams.Fprintln(w, u.Line()); err != nil {
			return err
		}
	}
	return nil
}

// statusRow is the row of gateway g of st.
func statusRow(st *fleet.Status, g fleet.GatewayStatus, tty bool) []string {
	optTime := func(t *time.Time) string {
		switch {
		case t != nil:
			return formatTime(*t, tty)
		case tty:
			return "-"
		}
		return ""
	}
	state := strconv.FormatBool(g.Silent)
	if tty {
		state = "ok"
		switch {
		case g.Silent && g.LastLanded != nil:
			state = "silent for " + st.At.Sub(*g.LastLanded).Round(time.Second).String()
		case g.Silent:
			state = "silent"
		}
	}
	name := g.Gateway
	if tty && name == "" {
		name = "(no folder)"
	}
	return []string{name, optTime(g.LastLanded), optTime(g.LastLoaded), optTime(g.NewestRowTime), strconv.Itoa(g.Waiting),
		optTime(g.OldestWaiting), strconv.Itoa(g.Quarantined), strconv.Itoa(g.LoadedLastDay),
		strconv.Itoa(g.DuplicatesLastDay), strconv.Itoa(g.RejectedLastDay), state}
}

// statusSummary prints the terminal's summary of st: its gateways, the
// silent ones, its cadence, and what could not be counted.
func statusSummary(o Output, st *fleet.Status) error {
	cadence := "no expected cadence (set --expect-every or timelake.expect-every to mark silent gateways)"
	if every := st.ExpectEvery(); every > 0 {
		cadence = fmt.Sprintf("expected every %s (%s), silent after %s without a file", every, st.ExpectFrom, fleet.SilentFactor*every)
	}
	_, err := iostreams.Fprintf(o.IO.Out, "%d gateways, %d silent; %s; %s at %s UTC\n", len(st.Gateways), st.Silent, cadence,
		st.Table, formatTime(st.At, true))
	if err == nil && len(st.MissingSegments) > 0 {
		_, err = iostreams.Fprintf(o.IO.Out, "history segments missing (their files are not counted): %v\n", st.MissingSegments)
	}
	if err == nil && len(st.Unlisted) > 0 {
		_, err = iostreams.Fprintf(o.IO.Out, "could not be listed (their files are not counted; timelake landing audit names why): %v\n", st.Unlisted)
	}
	return err
}
