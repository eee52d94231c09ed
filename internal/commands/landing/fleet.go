package landing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// Fleet is what audit and status read: the landing bucket (below the
// poller's --prefix), the table it loads into or the routes that name its
// tables, and the monitoring settings.
type Fleet struct {
	Bucket *landing.Bucket
	Prefix string
	// Table is the table's name, without routes; OpenTable loads a table
	// (nil when it does not exist yet), with its errors explained as the
	// warehouse's.
	Table     lake.TableName
	OpenTable func(ctx context.Context, name lake.TableName) (*lake.Table, error)
	// Routes, when set, name the tables of the landing keys (--route,
	// TIMELAKE_ROUTES; docs/routing.md): each table is reported on the
	// keys its routes take, and Table is not set.
	Routes route.Routes
	// ListTables lists the warehouse's tables, with routes that name
	// tables from the keys' folders, errors explained as the warehouse's.
	ListTables func(ctx context.Context) ([]lake.TableName, error)
	Monitor    *lakecmd.Monitor
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
	table, routes, err := cmdutil.TableOrRoutes(r)
	if err != nil {
		return Fleet{}, err
	}
	fl := Fleet{Prefix: settings.LandingPrefix.Get(r), Table: table, Routes: routes}
	quarantine := settings.QuarantinePrefix.Get(r)
	warehouse := settings.Warehouse.Require(r)
	if err := cmdutil.RoutesErr(r); err != nil {
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
	var l *lake.Lake
	openLake := func(ctx context.Context) error {
		var err error
		if l == nil {
			if l, err = lakecmd.OpenLake(ctx, f, cmd, warehouse); err != nil {
				return f.ExplainLake(cmd, err)
			}
		}
		return nil
	}
	fl.ListTables = func(ctx context.Context) ([]lake.TableName, error) {
		if err := openLake(ctx); err != nil {
			return nil, err
		}
		ts, err := l.ListTables(ctx)
		if err != nil {
			return nil, f.ExplainLake(cmd, err)
		}
		return ts, nil
	}
	fl.OpenTable = func(ctx context.Context, name lake.TableName) (*lake.Table, error) {
		if err := openLake(ctx); err != nil {
			return nil, err
		}
		t, err := l.LoadTable(ctx, name)
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

// fleetTable is one table audit or status reports on: its name, the
// landing keys it takes (nil: every key) and the table (nil when it does
// not exist yet).
type fleetTable struct {
	name   lake.TableName
	accept func(key string) bool
	table  *lake.Table
}

// begin loads the tables to report on and reads the clock (now; nil means
// time.Now): what audit and status start with. Without routes that is the
// table; with routes, those of routePlan, each with the keys its routes
// take, and the landing keys no route takes.
func (fl Fleet) begin(ctx context.Context, now func() time.Time) ([]fleetTable, []route.Unrouted, time.Time, error) {
	if now == nil {
		now = time.Now
	}
	if len(fl.Routes) == 0 {
		t, err := fl.OpenTable(ctx, fl.Table)
		return []fleetTable{{name: fl.Table, table: t}}, nil, now(), err
	}
	p, err := fl.routePlan(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	var tables []fleetTable
	for _, name := range p.Tables() {
		t, err := fl.OpenTable(ctx, name)
		if err != nil {
			return nil, nil, time.Time{}, fl.tableErr(name, err)
		}
		tables = append(tables, fleetTable{name: name, accept: fl.Routes.Accepts(name), table: t})
	}
	return tables, p.Unrouted, now(), nil
}

// routePlan routes the landing keys below the prefix (route.Plan: those
// no route takes are its unrouted keys) and the original keys of the
// quarantined files, so that a table whose files all wait in the
// quarantine is reported too; with routes that name tables from the keys'
// folders, the warehouse's tables they may name join (a table all of whose
// files were loaded). A folder that could not be listed is reported by
// each table's figures.
func (fl Fleet) routePlan(ctx context.Context) (*route.Plan, error) {
	p := fl.Routes.Plan()
	if fl.Routes.Templated() {
		ts, err := fl.ListTables(ctx)
		if err != nil {
			return nil, err
		}
		p.AddNamed(ts)
	}
	err := fl.Bucket.List(ctx, fl.Prefix, func(obj storage.ObjectInfo) error {
		p.Add(obj.Key)
		return nil
	})
	var gaps *storage.UnlistedError
	if err != nil && !errors.As(err, &gaps) {
		return nil, fmt.Errorf("list landing %s: %w", fl.Bucket.Store.URI(), err)
	}
	err = fl.Bucket.Store.List(ctx, fl.Bucket.QuarantineKeyPrefix(), func(obj storage.ObjectInfo) error {
		key, ok := fl.Bucket.OriginalKey(obj.Key)
		if !ok || landing.IsReport(obj.Key) || !strings.HasPrefix(key, fl.Prefix) {
			return nil
		}
		if t, _, err := fl.Routes.Table(key); err == nil {
			p.AddTable(t)
		}
		return nil
	})
	if err != nil && !errors.As(err, &gaps) && !errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("list the quarantine of %s: %w", fl.Bucket.Store.URI(), err)
	}
	return p, nil
}

// tableErr names the table of a routed report in err; without routes err
// is returned as it is.
func (fl Fleet) tableErr(name lake.TableName, err error) error {
	if len(fl.Routes) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
