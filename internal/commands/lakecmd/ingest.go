package lakecmd

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// ResolveRoutedIngest resolves the settings of a command that loads the
// landing bucket (ingest, serve) into an ingest.Config, with the landing
// store and the lake opened. With --route or TIMELAKE_ROUTES it returns the
// routes and a config without a table, which each table's loading sets
// (docs/routing.md). Errors: usage errors (a missing or bad setting, routes
// beside --table or TIMELAKE_TABLE, a warehouse that overlaps the landing
// location), and those of opening the stores.
func ResolveRoutedIngest(cmd *cobra.Command, f *cmdutil.Factory) (ingest.Config, route.Routes, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return ingest.Config{}, nil, err
	}
	land := settings.Landing.Require(r)
	warehouse := settings.Warehouse.Require(r)
	table, routes, err := TableOrRoutes(r)
	if err != nil {
		return ingest.Config{}, nil, err
	}
	c := ingest.Config{
		Table:             table,
		Prefix:            settings.LandingPrefix.Get(r),
		QuarantinePrefix:  settings.QuarantinePrefix.Get(r),
		TimeColumn:        settings.TimeColumn.Get(r),
		SeriesKey:         settings.SeriesKey.Get(r),
		Partition:         lake.Granularity(settings.Partition.Get(r)),
		TimeUnit:          settings.TimeUnit.Get(r),
		AssumeLocation:    settings.AssumeTimezone.Get(r),
		CSV:               settings.CSVOf(r),
		Columns:           settings.Columns.Get(r),
		Evolve:            settings.Evolve.Get(r),
		OnError:           settings.OnError.Get(r),
		MaxBadRows:        settings.MaxBadRows.Get(r),
		SourceColumn:      settings.SourceColumn.Get(r),
		LoadTimeColumn:    settings.LoadTimeColumn.Get(r),
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
	if err := RoutesErr(r); err != nil {
		return c, nil, err
	}
	if err := decode.CheckTimeColumnType(c.TimeColumn, c.Columns); err != nil {
		return c, nil, &cmdutil.UsageError{Err: err}
	}
	if c.SourceColumn != "" && c.SourceColumn == c.LoadTimeColumn {
		return c, nil, cmdutil.UsageErrorf("--source-column and --load-time-column are both %q: one column cannot hold each row's landing key and its load time; choose two names", c.SourceColumn)
	}
	wloc, err := storage.ParseLocation(warehouse, false)
	if err == nil && storage.Overlaps(land, wloc) {
		return c, nil, cmdutil.UsageErrorf("the warehouse %s and the landing location %s overlap: ingest would load the table's own files; use separate buckets, prefixes or folders", wloc, land)
	}
	ctx := cmd.Context()
	if c.Landing, err = f.OpenStore(ctx, cmd, land); err != nil {
		return c, nil, err
	}
	if land.IsS3() && land.Prefix != "" {
		// Leases live at the bucket's root, so that pollers given
		// s3://bucket and s3://bucket/prefix see each other's.
		if c.LeaseStore, err = f.OpenStore(ctx, cmd, storage.Location{Bucket: land.Bucket}); err != nil {
			return c, nil, err
		}
		c.LeasePrefix = land.Prefix + "/" + c.Prefix
	}
	if c.Lake, err = OpenLake(ctx, f, cmd, warehouse); err != nil {
		return c, nil, err
	}
	if wloc.IsS3() {
		// For the check that a missing table is not a missing lake bucket.
		if c.Warehouse, err = f.OpenStore(ctx, cmd, wloc); err != nil {
			return c, nil, err
		}
	}
	c.Explain = ingest.Explain{
		Landing: f.Where(cmd, &settings.Landing.Spec, storeWhat(land, "landing bucket", "landing folder"), land),
		Lake:    f.Where(cmd, &settings.Warehouse.Spec, storeWhat(wloc, "lake bucket", "warehouse folder"), wloc),
		Names:   f.StorageNames(cmd),
	}
	return c, routes, nil
}

// TableOrRoutes reads the routes (--route, TIMELAKE_ROUTES) and, without
// them, the table, which is then required (RoutesErr tells it missing).
// Errors: a usage error for routes beside --table or TIMELAKE_TABLE.
func TableOrRoutes(r *settings.Resolver) (tablename.Name, route.Routes, error) {
	routes := settings.Routes.Get(r)
	if len(routes) == 0 {
		return settings.Table.Require(r), nil, nil
	}
	if from := r.Lookup(&settings.Table.Spec); from.Source != "" {
		return tablename.Name{}, nil, cmdutil.UsageErrorf("%s and the routes (%s) both name tables: give either one table or routes, not both (docs/routing.md)",
			from.Describe(), routes)
	}
	return tablename.Name{}, routes, nil
}

// RoutesErr is r.Err() of a command that takes a table or routes
// (TableOrRoutes): a missing table says that routes would do as well.
func RoutesErr(r *settings.Resolver) error {
	err := r.Err()
	var missing *settings.MissingError
	if errors.As(err, &missing) && missing.Spec == &settings.Table.Spec {
		missing.Otherwise = "pass --route or set TIMELAKE_ROUTES for several tables (docs/routing.md)"
	}
	return err
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
