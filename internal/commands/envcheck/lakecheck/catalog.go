// Package lakecheck holds the checks of env check that need the lake: the
// REST catalog's and the table's. The full binary gives them to env check
// (New); the gateway binary, which links no lake, checks the landing side
// only.
package lakecheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// Checks are the lake's checks of one env check run, with the REST
// catalog of its settings.
type Checks struct {
	// REST is the REST catalog of --catalog rest (nil for none), as
	// ingest would use it; From names where --catalog, its URI and its
	// credentials come from (never a secret).
	REST *lake.RESTCatalog
	From CatalogFrom

	// catalogOK: --catalog rest with usable settings; catalogReady: the
	// catalog checks passed, so the table can be loaded through it.
	catalogOK, catalogReady bool
	loaded                  *lake.Table // the table, once loaded
	tableMissing            bool        // the table does not exist yet
}

// CatalogFrom says where the catalog settings come from.
type CatalogFrom struct {
	Kind, URI, Warehouse, Token, Credential config.Setting
}

// New resolves the catalog settings of cmd (an env file that cannot be
// read leaves them unset: env check reports it and skips these checks).
func New(cmd *cobra.Command, f *cmdutil.Factory) envcheck.LakeChecks {
	env, err := f.EnvUnchecked()
	if err != nil {
		return &Checks{}
	}
	r := settings.NewResolver(cmd.Flags(), env)
	return &Checks{REST: lakecmd.RESTCatalogOf(r),
		From: CatalogFrom{Kind: r.Lookup(&settings.Catalog.Spec), URI: r.Lookup(&settings.CatalogURI.Spec),
			Warehouse: r.Lookup(&settings.CatalogWarehouse.Spec), Token: r.Lookup(&settings.CatalogToken.Spec),
			Credential: r.Lookup(&settings.CatalogCredential.Spec)}}
}

// catalogFix is the fix of a catalog that does not enforce commit
// requirements.
const catalogFix = "use an Iceberg REST catalog that refuses a commit whose requirements do not hold (409), as the REST spec asks; " +
	"do not run ingest against this one"

// CatalogSettings checks --catalog and, for rest, its URI, that the
// warehouse is in object storage, and where the credentials come from.
func (k *Checks) CatalogSettings(c *envcheck.Checker) (rest bool) {
	s := c.Options().Settings
	cfg := k.REST
	if cfg == nil {
		c.OK(envcheck.CheckCatalog, "none: each table version is a metadata file in the warehouse, committed with a conditional create (docs/catalogs.md)")
		return false
	}
	rest = true
	warehouseLoc, warehouseOK := c.Warehouse()
	switch {
	case strings.TrimSpace(cfg.URI) == "":
		c.Fail(envcheck.CheckCatalog, "REST catalog"+envcheck.From(k.From.Kind)+", but no catalog URI",
			envcheck.MissingFix("catalog-uri", "TIMELAKE_CATALOG_URI", "https://catalog.example.com/api/catalog"))
		return
	case warehouseOK && !warehouseLoc.IsS3():
		c.Fail(envcheck.CheckCatalog, fmt.Sprintf("REST catalog%s, but the warehouse %s is a local folder: the catalog's tables keep their files in object storage", envcheck.From(k.From.Kind), warehouseLoc),
			"set TIMELAKE_WAREHOUSE=s3://bucket/prefix, where the catalog's tables are, or --catalog none for a local warehouse")
		return
	}
	warehouse := cfg.Warehouse
	if warehouse == "" {
		warehouse = s.Warehouse.Value + " (the warehouse)"
	} else {
		warehouse += envcheck.From(k.From.Warehouse)
	}
	detail := fmt.Sprintf("REST catalog %s%s, warehouse %s, %s", cfg.URI, envcheck.From(k.From.URI), warehouse, k.catalogAuth(c))
	k.catalogOK = warehouseOK
	if cfg.Token != "" && cfg.Credential != "" {
		c.Warn(envcheck.CheckCatalog, detail+"; both TIMELAKE_CATALOG_TOKEN and TIMELAKE_CATALOG_CREDENTIAL are set: the token is used",
			"remove the one not meant")
		return
	}
	c.OK(envcheck.CheckCatalog, detail)
	return
}

// catalogAuth says how the catalog's requests are authenticated.
func (k *Checks) catalogAuth(c *envcheck.Checker) string {
	cfg := k.REST
	var ways []string
	switch {
	case cfg.Token != "":
		ways = append(ways, "bearer token"+envcheck.From(k.From.Token))
	case cfg.Credential != "":
		w := "OAuth2 client credentials" + envcheck.From(k.From.Credential)
		if !strings.Contains(cfg.Credential, ":") {
			w += " (a secret without client_id:)"
		}
		ways = append(ways, w)
	}
	if cfg.SigV4 {
		ways = append(ways, fmt.Sprintf("SigV4 signing (service %s) with the S3 credentials", cfg.SigV4Service))
	}
	if len(ways) == 0 {
		return "no credentials (anonymous requests)"
	}
	return strings.Join(ways, " and ")
}

// Catalog checks the REST catalog: its /v1/config answers for the
// warehouse, the credentials are accepted (a namespace listing), the
// table's namespace exists or can be made, and a commit on a scratch table
// works and a stale one is refused (409).
func (k *Checks) Catalog(ctx context.Context, c *envcheck.Checker) {
	name, nameOK := c.TableName()
	client, tigris, blocked := c.S3()
	cfg := k.REST
	switch {
	case cfg == nil:
		for _, n := range envcheck.CatalogChecks {
			c.Skip(n, "not used: --catalog none")
		}
		return
	case !k.catalogOK:
		for _, n := range envcheck.CatalogChecks {
			c.Skip(n, "catalog settings invalid")
		}
		return
	case cfg.SigV4 && client == nil:
		for _, n := range envcheck.CatalogChecks {
			c.Skip(n, "SigV4 signing needs the S3 credentials: "+blocked)
		}
		return
	}
	l, err := lake.Open(ctx, c.Options().Settings.Warehouse.Value, lake.Options{S3: client, Tigris: tigris, Logger: c.Options().Logger, Catalog: cfg})
	if err != nil {
		c.Fail(envcheck.CheckCatalogConfig, err.Error(), "fix TIMELAKE_WAREHOUSE")
		skipRest(c, envcheck.CheckCatalogConfig, "catalog not usable")
		return
	}
	cctx, cancel := c.WithTimeout(ctx)
	err = l.CatalogConfig(cctx)
	cancel()
	if err != nil {
		c.Fail(envcheck.CheckCatalogConfig, fmt.Sprintf("%s/v1/config: %v", strings.TrimSuffix(cfg.URI, "/"), err), catalogConfigFix(err))
		skipRest(c, envcheck.CheckCatalogConfig, "catalog not reachable")
		return
	}
	c.OK(envcheck.CheckCatalogConfig, fmt.Sprintf("%s/v1/config answered for warehouse %s", strings.TrimSuffix(cfg.URI, "/"), orDefault(cfg.Warehouse, c.Options().Settings.Warehouse.Value)))

	actx, cancel := c.WithTimeout(ctx)
	nss, err := l.CatalogNamespaces(actx)
	cancel()
	if err != nil {
		anonymous := cfg.Token == "" && cfg.Credential == "" && !cfg.SigV4
		c.Fail(envcheck.CheckCatalogAuth, fmt.Sprintf("list namespaces (%s): %v", k.catalogAuth(c), err), catalogAuthFix(err, anonymous))
		skipRest(c, envcheck.CheckCatalogAuth, "catalog credentials not accepted")
		return
	}
	c.OK(envcheck.CheckCatalogAuth, fmt.Sprintf("%s accepted: %s", k.catalogAuth(c), pluralCount(len(nss), "namespace", "namespaces")))

	if !nameOK {
		c.Skip(envcheck.CheckCatalogNS, "table name invalid")
		c.Skip(envcheck.CheckCatalogCommit, "table name invalid")
		return
	}
	ns := name.Namespace
	if slices.Contains(nss, ns) {
		c.OK(envcheck.CheckCatalogNS, fmt.Sprintf("namespace %s exists", ns))
	} else {
		c.OK(envcheck.CheckCatalogNS, fmt.Sprintf("namespace %s does not exist yet: the first ingest creates it (if it should exist, check %s for a typo)",
			ns, c.Options().Settings.Table.Describe()))
	}

	pctx, cancel := context.WithTimeout(ctx, 6*c.Options().Timeout) // several requests
	defer cancel()
	probe, err := l.ProbeCatalogCommit(pctx, ns, "timelake_probe_"+strings.NewReplacer("-", "_", ".", "_").Replace(c.Options().ProbeID))
	detail := "scratch table " + probe.Table.String()
	switch {
	case err != nil:
		c.Fail(envcheck.CheckCatalogCommit, fmt.Sprintf("%s: %v", detail, err), catalogCommitFix(err, probe))
		return
	case !probe.StaleRefused:
		what := "accepted"
		if probe.StaleErr != nil {
			what = fmt.Sprintf("answered %v (expected 409 CommitFailedException)", probe.StaleErr)
		}
		c.Fail(envcheck.CheckCatalogCommit, fmt.Sprintf("%s: created and committed, but a commit asserting a main branch the table does not have was %s: "+
			"two writers could both commit on the same version; committing is unsafe", detail, what), catalogFix)
		return
	}
	detail += ": created at the Timelake location, committed, a stale commit refused (409)"
	if probe.Cleanup != nil {
		c.Warn(envcheck.CheckCatalogCommit, fmt.Sprintf("%s; not dropped: %v", detail, probe.Cleanup),
			fmt.Sprintf("drop %s by hand (the key may lack the right to drop tables)", probe.Table))
		k.catalogReady = true
		return
	}
	c.OK(envcheck.CheckCatalogCommit, detail+", dropped")
	k.catalogReady = true
}

// skipRest skips the catalog checks after failed.
func skipRest(c *envcheck.Checker, failed, reason string) {
	i := slices.Index(envcheck.CatalogChecks, failed)
	for _, n := range envcheck.CatalogChecks[i+1:] {
		c.Skip(n, reason)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func pluralCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// catalogConfigFix explains a /v1/config that failed. With client
// credentials the token is fetched first, so its errors show here.
func catalogConfigFix(err error) string {
	// iceberg-go's token errors keep the network error's text only.
	var op *net.OpError
	var dns *net.DNSError
	msg := err.Error()
	switch {
	case errors.As(err, &dns), strings.Contains(msg, "no such host"):
		return "check the host of TIMELAKE_CATALOG_URI (DNS does not know it)"
	case errors.As(err, &op), errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "connection refused"), strings.Contains(msg, "i/o timeout"):
		return "check TIMELAKE_CATALOG_URI: nothing answers there (host, port, http or https)"
	case errors.Is(err, rest.ErrOAuthError):
		return oauthFix
	case errors.Is(err, rest.ErrUnauthorized), errors.Is(err, rest.ErrForbidden):
		return "this catalog wants credentials already for /v1/config: set TIMELAKE_CATALOG_CREDENTIAL (client_id:client_secret) or TIMELAKE_CATALOG_TOKEN, or --catalog-sigv4"
	case errors.Is(err, rest.ErrRESTError):
		return "give the catalog's base URI without /v1 (the REST routes are below it), and the warehouse as the server names it (--catalog-warehouse)"
	}
	return "check TIMELAKE_CATALOG_URI and --catalog-warehouse (docs/catalogs.md)"
}

// oauthFix is the fix of client credentials the token endpoint refused.
const oauthFix = "the token endpoint refused the client credentials: check TIMELAKE_CATALOG_CREDENTIAL (client_id:client_secret), " +
	"--catalog-oauth2-uri and --catalog-scope"

// catalogAuthFix explains a namespace listing that failed; anonymous says
// no credentials were configured.
func catalogAuthFix(err error, anonymous bool) string {
	switch {
	case errors.Is(err, rest.ErrOAuthError):
		return oauthFix
	case anonymous && (errors.Is(err, rest.ErrUnauthorized) || errors.Is(err, rest.ErrForbidden)):
		return "the catalog wants credentials: set TIMELAKE_CATALOG_CREDENTIAL (client_id:client_secret) or TIMELAKE_CATALOG_TOKEN, or --catalog-sigv4"
	case errors.Is(err, rest.ErrUnauthorized), errors.Is(err, rest.ErrAuthorizationExpired):
		return "the catalog refused the credentials: check TIMELAKE_CATALOG_CREDENTIAL or TIMELAKE_CATALOG_TOKEN (an expired token needs a new one), or --catalog-sigv4 and its service"
	case errors.Is(err, rest.ErrForbidden):
		return "the credentials are known but may not list namespaces: grant the principal read access to the catalog"
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return "the catalog does not know this warehouse: set --catalog-warehouse to the name the server gives it (a table bucket, a catalog name)"
	}
	return "check the catalog's credentials settings (docs/catalogs.md)"
}

// catalogCommitFix explains a failed step of the commit probe.
func catalogCommitFix(err error, p lake.CatalogProbe) string {
	switch {
	case errors.Is(err, rest.ErrForbidden), errors.Is(err, rest.ErrUnauthorized):
		if p.Committed {
			return "the principal may not commit to tables: grant it write access (ingest commits every load)"
		}
		return "the principal may not create namespaces or tables: grant it, or create the namespace (and table) beforehand"
	case strings.Contains(err.Error(), "not at the location timelake gives its tables"):
		return "the catalog does not take tables at <warehouse>/<namespace>/<table>: set TIMELAKE_WAREHOUSE to the catalog's storage location (docs/catalogs.md)"
	case errors.Is(err, rest.ErrBadRequest):
		return "the catalog refused the request: check that TIMELAKE_WAREHOUSE is inside the storage the catalog manages (docs/catalogs.md)"
	}
	return "check the catalog's permissions and storage location (docs/catalogs.md)"
}

// Table checks the table (CheckTable) and then its source profiles
// (CheckProfiles); with routes, each table a route names whatever the key,
// its profiles against the landing files routed to it.
func (k *Checks) Table(ctx context.Context, c *envcheck.Checker) {
	routes := c.Routes()
	tables := c.Tables()
	switch {
	case routes != nil && len(tables) == 0:
		c.OK(envcheck.CheckTable, "the routes name each table from its key's folders: the first file routed to a table that does not exist creates it")
		c.OK(envcheck.CheckProfiles, "not looked at: the routes name no table whatever the key")
		return
	case len(tables) == 0 && c.Options().Settings.Routes.Value != "":
		c.Skip(envcheck.CheckTable, "routes invalid")
		c.Skip(envcheck.CheckProfiles, "table not loaded")
		return
	case len(tables) == 0:
		c.Skip(envcheck.CheckTable, "table name invalid")
		c.Skip(envcheck.CheckProfiles, "table not loaded")
		return
	}
	for _, name := range tables {
		k.loaded, k.tableMissing = nil, false
		k.table(ctx, c, name)
		var accept func(key string) bool
		if routes != nil {
			accept = func(key string) bool {
				t, _, err := routes.Table(key)
				return err == nil && t == name
			}
		}
		k.profiles(ctx, c, name, accept)
	}
}

// table loads the table name: it exists (or the first ingest creates it),
// its metadata and current manifest list are readable, and its
// timelake.format-version is one this binary writes.
func (k *Checks) table(ctx context.Context, c *envcheck.Checker, name lake.TableName) {
	warehouse, warehouseOK := c.Warehouse()
	client, tigris, blocked := c.S3()
	switch {
	case !warehouseOK:
		c.Skip(envcheck.CheckTable, "warehouse setting invalid")
		return
	case warehouse.IsS3() && blocked != "":
		c.Skip(envcheck.CheckTable, blocked)
		return
	case !c.LakeListed():
		c.Skip(envcheck.CheckTable, "lake bucket not usable")
		return
	case k.REST != nil && !k.catalogReady:
		c.Skip(envcheck.CheckTable, "catalog not usable")
		return
	}
	if !warehouse.IsS3() {
		// lake.Open would create a missing folder: do not leave one behind.
		if _, err := os.Stat(warehouse.Dir); errors.Is(err, os.ErrNotExist) {
			c.OK(envcheck.CheckTable, fmt.Sprintf("%s does not exist yet (the warehouse folder does not either): the first ingest creates it from the first file's schema", name))
			k.tableMissing = true
			return
		}
	}
	l, err := lake.Open(ctx, c.Options().Settings.Warehouse.Value, lake.Options{S3: client, Tigris: tigris, Logger: c.Options().Logger,
		Catalog: k.REST})
	if err != nil {
		c.Fail(envcheck.CheckTable, err.Error(), "fix "+c.Options().Settings.Warehouse.Describe())
		return
	}
	tctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	t, err := l.LoadTable(tctx, name)
	switch {
	case errors.Is(err, lake.ErrTableNotFound):
		where := l.URI()
		if k.REST != nil {
			where = "the " + l.Catalog()
		}
		setting := c.Options().Settings.Table.Describe()
		if c.Routes() != nil {
			setting = c.Options().Settings.Routes.Describe()
		}
		c.OK(envcheck.CheckTable, fmt.Sprintf("%s does not exist yet in %s: the first ingest creates it from the first file's schema (if it should exist, check %s for a typo)",
			name, where, setting))
		k.tableMissing = true
		return
	case errors.Is(err, lake.ErrUnsupportedFormat):
		c.Fail(envcheck.CheckTable, fmt.Sprintf("%v (this binary writes format %d.x)", err, lake.SupportedFormatMajor),
			"install a newer timelake (docs/install.md); do not run this one against the table")
		return
	case err != nil:
		c.Fail(envcheck.CheckTable, fmt.Sprintf("%s: %v", name, err), "the key needs s3:GetObject and s3:ListBucket on the lake bucket")
		return
	}
	format := t.Metadata().Properties()[lake.PropFormatVersion]
	if format == "" {
		format = "1 (unset)"
	}
	k.loaded = t
	detail := fmt.Sprintf("%s: metadata v%d, timelake.format-version %s", name, t.Version(), format)
	snap := t.Metadata().CurrentSnapshot()
	if snap == nil {
		c.OK(envcheck.CheckTable, detail+", no snapshot yet (0 rows)")
		return
	}
	detail += fmt.Sprintf(", snapshot %d of %s", snap.SnapshotID, time.UnixMilli(snap.TimestampMs).UTC().Format(time.RFC3339))
	if snap.Summary != nil {
		if v, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64); err == nil {
			detail += fmt.Sprintf(", %d rows", v)
		}
		if v, err := strconv.ParseInt(snap.Summary.Properties["total-data-files"], 10, 64); err == nil {
			detail += fmt.Sprintf(" in %d data files", v)
		}
	}
	// Read the manifest list through iceberg-go's file IO, the path data
	// files and manifests take (metadata above went through the store).
	fio, err := t.Iceberg().FS(tctx)
	if err == nil {
		_, err = snap.Manifests(fio)
	}
	if err != nil {
		c.Fail(envcheck.CheckTable, fmt.Sprintf("%s; manifest list %s not readable: %v", detail, snap.ManifestList, err),
			"the key needs s3:GetObject on the lake bucket; a missing manifest list means files were deleted by hand")
		return
	}
	c.OK(envcheck.CheckTable, detail)
}
