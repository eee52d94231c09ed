package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// RoutedReport is the --json document of a routed run (--route): the
// report of each table's run, in the order they ran, and the keys no
// route takes.
type RoutedReport struct {
	StartedAt time.Time `json:"started_at"`
	Routes    []string  `json:"routes"`
	// Tables are the tables' reports, by table name.
	Tables []TableReport `json:"tables"`
	// Unrouted are the keys no route takes, or two take to different
	// tables: left in the landing.
	Unrouted []UnroutedKey `json:"unrouted"`
	// Routed is, in a dry run, the table of each waiting key.
	Routed  []RoutedKey `json:"routed,omitempty"`
	Seconds float64     `json:"seconds"`
}

// TableReport is the report of one routed table's run, with the error it
// ended with and the exit code it alone would have.
type TableReport struct {
	Report
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exit_code"`
}

// UnroutedKey is a landing key that no route takes, or that two take to
// different tables, and why.
type UnroutedKey = route.Unrouted

// RoutedKey is a landing key, its table and the route that takes it.
type RoutedKey struct {
	Key   string `json:"key"`
	Table string `json:"table"`
	Route string `json:"route"`
}

// worse orders exit codes from the least to the worst: a routed run ends
// with the worst of its tables'.
var worse = []cmdutil.ExitCode{cmdutil.ExitOK, cmdutil.ExitBusy, cmdutil.ExitPartial,
	cmdutil.ExitLeaseHeld, cmdutil.ExitUsage, cmdutil.ExitFailed, cmdutil.ExitCancelled}

func worst(a, b cmdutil.ExitCode) cmdutil.ExitCode {
	if slices.Index(worse, b) > slices.Index(worse, a) {
		return b
	}
	return a
}

// plan is what the listing of a routed run found: the tables to load, in
// name order, the keys no route takes and, in a dry run, the table of
// each key.
type plan struct {
	tables   []tablename.Name
	unrouted []UnroutedKey
	routed   []RoutedKey
}

// routePlan lists the landing once (below --prefix) and routes every key.
// The tables are those of the keys, and those a route names whatever the
// key (they get their run, and their maintenance, when no file waits).
func (o *Options) routePlan(ctx context.Context) (*plan, error) {
	c := o.Config
	rp := o.Routes.Plan()
	p := &plan{}
	err := bucketOf(c).List(ctx, c.Prefix, func(obj storage.ObjectInfo) error {
		t, r, ok := rp.Add(obj.Key)
		if ok && c.DryRun {
			p.routed = append(p.routed, RoutedKey{Key: obj.Key, Table: t.String(), Route: r.String()})
		}
		return nil
	})
	var gaps *storage.UnlistedError
	if err != nil && !errors.As(err, &gaps) { // a gap is reported by each table's run
		if d := storage.Diagnose(err, c.Explain.Landing, c.Explain.Names); d != nil {
			return nil, d
		}
		return nil, fmt.Errorf("list landing %s: %w", c.Landing.URI(), err)
	}
	p.tables, p.unrouted = rp.Tables(), rp.Unrouted
	return p, nil
}

// runRouted loads every routed table in turn (docs/routing.md): it lists
// the landing once, reports the keys no route takes (left where they
// are), then runs ingest per table on the keys its routes take, each
// with its own lease, commits, quarantine, maintenance and summary. A
// table's failure does not stop the others; the run ends with the worst
// exit code of its tables (unrouted keys count as partial). With
// --metrics-file, one file holds the metrics of every table, labelled
// table; with --notify-url, each table's alerts name it. --max-files
// is shared: each table may load max(1, N/tables) files.
func (o *Options) runRouted(ctx context.Context, started time.Time) error {
	now := o.clock()
	out := o.IO.TimedOut(now)
	errOut := o.IO.ErrOut
	if !o.IO.IsStderrTTY() {
		errOut = iostreams.NewTimedWriter(errOut, now)
	}
	p, err := o.routePlan(ctx)
	if err != nil {
		return err
	}
	doc := RoutedReport{StartedAt: started.UTC().Truncate(time.Millisecond), Routes: o.Routes.Rules(),
		Tables: []TableReport{}, Unrouted: []UnroutedKey{}}
	doc.Unrouted = append(doc.Unrouted, p.unrouted...)
	doc.Routed = p.routed
	code := cmdutil.ExitOK
	if len(p.unrouted) > 0 {
		code = cmdutil.ExitPartial
	}
	if !o.JSON {
		for _, u := range p.unrouted {
			iostreams.Fprintln(out, u.Line())
		}
		for _, k := range p.routed {
			iostreams.Fprintf(out, "%-15s %s  -> %s (%s)\n", "route", k.Key, k.Table, k.Route)
		}
	}
	var worstErr, stopped error
	var metrics []fleet.TableMetrics
	for _, t := range p.tables {
		tc := o.Config
		tc.Table = t
		tc.Accept = o.Routes.Accepts(t)
		if o.TableDefaults != nil {
			o.TableDefaults(&tc)
		}
		if tc.MaxFiles > 0 {
			tc.MaxFiles = max(1, tc.MaxFiles/len(p.tables))
		}
		tableStarted := now()
		res := o.runTable(ctx, tc, tableStarted)
		tr := TableReport{Report: res.document(tableStarted), ExitCode: int(cmdutil.ExitCodeOf(ctx, res.err))}
		if res.runErr != nil {
			tr.Error = res.runErr.Error()
			if ctx.Err() == nil { // a stop is said once, by the command
				printTableError(errOut, t, res.runErr)
			}
		}
		doc.Tables = append(doc.Tables, tr)
		if res.metrics != nil {
			metrics = append(metrics, *res.metrics)
		}
		if c := cmdutil.ExitCode(tr.ExitCode); worst(code, c) != code {
			code, worstErr = c, fmt.Errorf("%s: %w", t, res.err)
		}
		if ctx.Err() != nil {
			stopped = res.runErr
			break
		}
	}
	if err := o.writeMetrics(metrics); err != nil {
		iostreams.Fprintf(errOut, "Error: %v\n", err)
		if c := cmdutil.ExitCodeOf(ctx, err); worst(code, c) != code {
			code, worstErr = c, err
		}
	}
	doc.Seconds = now().Sub(started).Seconds()
	if o.JSON {
		if err := o.IO.PrintJSON(doc); err != nil && stopped == nil {
			return err
		}
	} else {
		iostreams.Fprintln(out, RoutedSummary(&doc, len(p.tables), started))
	}
	switch {
	case ctx.Err() != nil:
		if stopped == nil {
			stopped = ctx.Err()
		}
		var ie *cmdutil.InterruptedError
		if !errors.As(stopped, &ie) {
			stopped = &cmdutil.InterruptedError{Left: "the tables not loaded yet keep their files in the landing bucket, nothing is lost: run ingest again to load them", Err: stopped}
		}
		return stopped
	case code == cmdutil.ExitOK:
		return nil
	case worstErr == nil: // only unrouted keys
		return &cmdutil.SilentError{Code: code, Err: fmt.Errorf("%s left in the landing: no route takes them, two take them to different tables, or their folders make no table name (a line above names each)", iostreams.Plural(int64(len(p.unrouted)), "key"))}
	}
	return &cmdutil.SilentError{Code: code, Err: worstErr}
}

// printTableError prints the error a routed table's run ended with, as
// the command would print it alone ("Error:", then the fix of a setup
// problem), naming the table.
func printTableError(w io.Writer, t tablename.Name, err error) {
	iostreams.Fprintf(w, "Error: %s: %v\n", t, err)
	var h interface{ FixHint() string }
	if errors.As(err, &h) && h.FixHint() != "" {
		iostreams.Fprintln(w, "Fix:", h.FixHint())
	}
}

// RoutedSummary is the last line of a routed run: the tables loaded, how
// many ended well, the keys no route takes, when it started and how long
// it took.
func RoutedSummary(doc *RoutedReport, tables int, started time.Time) string {
	ok := 0
	for _, t := range doc.Tables {
		if t.ExitCode == int(cmdutil.ExitOK) {
			ok++
		}
	}
	s := iostreams.Sprintf("routes: %s, %d without a problem", iostreams.Plural(int64(tables), "table"), ok)
	if len(doc.Tables) < tables {
		s += iostreams.Sprintf(", %d not loaded (stopped)", tables-len(doc.Tables))
	}
	if len(doc.Unrouted) > 0 {
		s += iostreams.Sprintf("; %s unrouted, left in the landing", iostreams.Plural(int64(len(doc.Unrouted)), "key"))
	}
	return s + iostreams.Sprintf("; run started %s, took %.1fs", started.UTC().Format(time.RFC3339), doc.Seconds)
}
