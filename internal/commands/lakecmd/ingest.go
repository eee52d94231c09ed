package lakecmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// TableDefaults sets the table settings of a routed table's config (its
// Table set) from the options of the route that names it
// (docs/routing.md, "Table defaults per route"); a table whose route has
// none keeps the run's.
type TableDefaults func(*ingest.Config)

// ResolveRoutedIngest resolves the settings of a command that loads the
// landing bucket (ingest, serve) into an ingest.Config, with the landing
// store and the lake opened. With --route or TIMELAKE_ROUTES it returns the
// routes and a config without a table, which each table's loading sets
// (docs/routing.md), and, when rules have options, the TableDefaults of
// the tables (nil otherwise). Errors: usage errors (a missing or bad setting, routes
// beside --table or TIMELAKE_TABLE, a warehouse that overlaps the landing
// location), and those of opening the stores.
func ResolveRoutedIngest(cmd *cobra.Command, f *cmdutil.Factory) (ingest.Config, route.Routes, TableDefaults, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return ingest.Config{}, nil, nil, err
	}
	land := settings.Landing.Require(r)
	warehouse := settings.Warehouse.Require(r)
	table, routes, err := cmdutil.TableOrRoutes(r)
	if err != nil {
		return ingest.Config{}, nil, nil, err
	}
	c := ingest.Config{
		Table:             table,
		Prefix:            settings.LandingPrefix.Get(r),
		QuarantinePrefix:  settings.QuarantinePrefix.Get(r),
		CSV:               settings.CSVOf(r),
		NoCreate:          settings.NoCreate.Get(r),
		DryRun:            settings.DryRun.Get(r),
		MaxFiles:          settings.MaxFiles.Get(r),
		LeaseTTL:          settings.LeaseTTL.Get(r),
		Parallel:          settings.Parallel.Get(r),
		FilesPerCommit:    settings.FilesPerCommit.Get(r),
		MemoryBudget:      settings.MemoryBudget.Get(r),
		MaxColumns:        settings.MaxColumns.Get(r),
		ContentDedupe:     settings.ContentDedupe.Get(r),
		BreakLease:        settings.BreakLease.Get(r),
		MaintenanceBudget: settings.MaintenanceBudget.Get(r),
		SettleTime:        noneIfZero(settings.SettleTime.Get(r)),
		OpenEndSettleTime: noneIfZero(settings.OpenEndSettleTime.Get(r)),
		Logger:            f.Logger(),
	}
	tableSettings(r, &c)
	if err := cmdutil.RoutesErr(r); err != nil {
		return c, nil, nil, err
	}
	if err := checkTableSettings(c); err != nil {
		return c, nil, nil, err
	}
	defaults, err := routeDefaults(r, c, routes)
	if err != nil {
		return c, nil, nil, err
	}
	wloc, err := storage.ParseLocation(warehouse, false)
	if err == nil && storage.Overlaps(land, wloc) {
		return c, nil, nil, cmdutil.UsageErrorf("the warehouse %s and the landing location %s overlap: ingest would load the table's own files; use separate buckets, prefixes or folders", wloc, land)
	}
	ctx := cmd.Context()
	if c.Landing, err = f.OpenStore(ctx, cmd, land); err != nil {
		return c, nil, nil, err
	}
	if land.IsS3() && land.Prefix != "" {
		// Leases live at the bucket's root, so that pollers given
		// s3://bucket and s3://bucket/prefix see each other's.
		if c.LeaseStore, err = f.OpenStore(ctx, cmd, storage.Location{Bucket: land.Bucket}); err != nil {
			return c, nil, nil, err
		}
		c.LeasePrefix = land.Prefix + "/" + c.Prefix
	}
	if c.Lake, err = OpenLake(ctx, f, cmd, warehouse); err != nil {
		return c, nil, nil, err
	}
	if wloc.IsS3() {
		// For the check that a missing table is not a missing lake bucket.
		if c.Warehouse, err = f.OpenStore(ctx, cmd, wloc); err != nil {
			return c, nil, nil, err
		}
	}
	c.Explain = ingest.Explain{
		Landing: f.Where(cmd, &settings.Landing.Spec, storeWhat(land, "landing bucket", "landing folder"), land),
		Lake:    f.Where(cmd, &settings.Warehouse.Spec, storeWhat(wloc, "lake bucket", "warehouse folder"), wloc),
		Names:   f.StorageNames(cmd),
	}
	return c, routes, defaults, nil
}

// tableSettings sets the settings of c that a route's options may set
// (settings.RouteOptions: the table's creation and properties) from r;
// errors are recorded in r.
func tableSettings(r *settings.Resolver, c *ingest.Config) {
	c.TimeColumn = settings.TimeColumn.Get(r)
	c.SeriesKey = settings.SeriesKey.Get(r)
	c.Partition = lake.Granularity(settings.Partition.Get(r))
	c.TimeUnit = settings.TimeUnit.Get(r)
	c.AssumeLocation = settings.AssumeTimezone.Get(r)
	c.Columns = settings.Columns.Get(r)
	c.Evolve = settings.Evolve.Get(r)
	c.OnError = settings.OnError.Get(r)
	c.MaxBadRows = settings.MaxBadRows.Get(r)
	c.SourceColumn = settings.SourceColumn.Get(r)
	c.LoadTimeColumn = settings.LoadTimeColumn.Get(r)
}

// checkTableSettings refuses table settings that do not go together (a
// usage error).
func checkTableSettings(c ingest.Config) error {
	if err := decode.CheckTimeColumnType(c.TimeColumn, c.Columns); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if c.SourceColumn != "" && c.SourceColumn == c.LoadTimeColumn {
		return cmdutil.UsageErrorf("--source-column and --load-time-column are both %q: one column cannot hold each row's landing key and its load time; choose two names", c.SourceColumn)
	}
	return nil
}

// routeDefaults returns the TableDefaults of routes whose rules have
// options (docs/routing.md, "Table defaults per route"): the table's
// settings from the options of the routes that name it, over the run's.
// Each route's settings are read and checked here, once
// (cmdutil.RouteResolvers): a route whose options do not go together
// (with each other or the run's settings) is a usage error naming it. Nil
// when no rule has options.
func routeDefaults(r *settings.Resolver, c ingest.Config, routes route.Routes) (TableDefaults, error) {
	byRoute, err := cmdutil.RouteResolvers(r, routes, c, tableSettings, checkTableSettings)
	if err != nil || byRoute == nil {
		return nil, err
	}
	return func(tc *ingest.Config) {
		if rt, ok := routes.Naming(tc.Table); ok && byRoute[rt.String()] != nil {
			tableSettings(byRoute[rt.String()], tc) // read without error above
		}
	}, nil
}

// noneIfZero maps a settle setting of 0 (no wait) to ingest.Config's
// "none" (a negative value; 0 there is the default).
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// storeWhat names a location for messages.
func storeWhat(loc storage.Location, bucket, folder string) string {
	if loc.IsS3() {
		return bucket
	}
	return folder
}
