// Package lakecmd is what the commands of the lake side (ingest, serve,
// tables, landing, env check) share: opening the warehouse with the REST
// catalog of the settings, the ingest configuration that ingest and serve
// resolve alike, and the lines that report a load. The gateway binary
// links none of it (docs/architecture.md).
package lakecmd

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// OpenLake opens the warehouse at uri, with the REST catalog of cmd's
// settings when --catalog is rest (RESTCatalog).
func OpenLake(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command, uri string) (*lake.Lake, error) {
	loc, err := storage.ParseLocation(uri, false)
	if err != nil {
		return nil, cmdutil.UsageErrorf("warehouse: %v", err)
	}
	opts := lake.Options{Logger: f.Logger(), CacheDir: cacheDir(f)}
	if opts.Catalog, err = RESTCatalog(f, cmd); err != nil {
		return nil, err
	}
	if opts.Catalog != nil && !loc.IsS3() {
		return nil, cmdutil.UsageErrorf("--catalog rest keeps the tables' files in object storage: the warehouse %s must be s3://bucket/prefix (docs/catalogs.md)", uri)
	}
	if loc.IsS3() {
		c, cfg, err := f.S3Client(ctx, cmd)
		if err != nil {
			return nil, err
		}
		opts.S3, opts.Tigris = c, storage.IsTigrisEndpoint(cfg.Endpoint)
	}
	return lake.Open(ctx, uri, opts)
}

// RESTCatalog resolves cmd's catalog settings: nil for --catalog none, the
// REST catalog's configuration for rest (--catalog-uri is then required).
func RESTCatalog(f *cmdutil.Factory, cmd *cobra.Command) (*lake.RESTCatalog, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	cfg := RESTCatalogOf(r)
	return cfg, r.Err()
}

// RESTCatalogOf reads the catalog settings from r (errors are recorded in
// r): nil for --catalog none.
func RESTCatalogOf(r *settings.Resolver) *lake.RESTCatalog {
	if settings.Catalog.Get(r) != settings.CatalogREST {
		return nil
	}
	return &lake.RESTCatalog{
		URI:          settings.CatalogURI.Require(r),
		Warehouse:    settings.CatalogWarehouse.Get(r),
		Prefix:       settings.CatalogPrefix.Get(r),
		Token:        settings.CatalogToken.Get(r),
		Credential:   settings.CatalogCredential.Get(r),
		OAuth2URI:    settings.CatalogOAuth2URI.Get(r),
		Scope:        settings.CatalogScope.Get(r),
		SigV4:        settings.CatalogSigV4.Get(r),
		SigV4Region:  settings.Region.Get(r),
		SigV4Service: settings.CatalogSigV4Service.Get(r),
	}
}

// cacheDir is the folder of lake.Options.CacheDir: --cache-dir, else the
// user cache folder's timelake/ ("" when there is none or it is off).
func cacheDir(f *cmdutil.Factory) string {
	switch f.CacheDir {
	case "off", "none":
		return ""
	case "":
		dir, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(dir, "timelake")
	}
	return f.CacheDir
}
