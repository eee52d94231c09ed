package envcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/timelake/timelake/internal/lake"
)

// catalogFix is the fix of a catalog that does not enforce commit
// requirements.
const catalogFix = "use an Iceberg REST catalog that refuses a commit whose requirements do not hold (409), as the REST spec asks; " +
	"do not run ingest against this one"

// catalogSettings checks --catalog and, for rest, its URI, that the
// warehouse is in object storage, and where the credentials come from.
func (c *checker) catalogSettings() {
	s := c.opts.Settings
	cfg := s.Catalog
	if cfg == nil {
		c.ok(CheckCatalog, "none: each table version is a metadata file in the warehouse, committed with a conditional create (docs/catalogs.md)")
		return
	}
	switch {
	case strings.TrimSpace(cfg.URI) == "":
		c.fail(CheckCatalog, "REST catalog"+from(s.CatalogFrom.Kind)+", but no catalog URI",
			missingFix("catalog-uri", "TIMELAKE_CATALOG_URI", "https://catalog.example.com/api/catalog"))
		return
	case c.warehouseOK && !c.warehouse.IsS3():
		c.fail(CheckCatalog, fmt.Sprintf("REST catalog%s, but the warehouse %s is a local folder: the catalog's tables keep their files in object storage", from(s.CatalogFrom.Kind), c.warehouse),
			"set TIMELAKE_WAREHOUSE=s3://bucket/prefix, where the catalog's tables are, or --catalog none for a local warehouse")
		return
	}
	warehouse := cfg.Warehouse
	if warehouse == "" {
		warehouse = s.Warehouse.Value + " (the warehouse)"
	} else {
		warehouse += from(s.CatalogFrom.Warehouse)
	}
	detail := fmt.Sprintf("REST catalog %s%s, warehouse %s, %s", cfg.URI, from(s.CatalogFrom.URI), warehouse, c.catalogAuth())
	c.catalogOK = c.warehouseOK
	if cfg.Token != "" && cfg.Credential != "" {
		c.warn(CheckCatalog, detail+"; both TIMELAKE_CATALOG_TOKEN and TIMELAKE_CATALOG_CREDENTIAL are set: the token is used",
			"remove the one not meant")
		return
	}
	c.ok(CheckCatalog, detail)
}

// catalogAuth says how the catalog's requests are authenticated.
func (c *checker) catalogAuth() string {
	s := c.opts.Settings
	cfg := s.Catalog
	var ways []string
	switch {
	case cfg.Token != "":
		ways = append(ways, "bearer token"+from(s.CatalogFrom.Token))
	case cfg.Credential != "":
		w := "OAuth2 client credentials" + from(s.CatalogFrom.Credential)
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

// catalog checks the REST catalog: its /v1/config answers for the
// warehouse, the credentials are accepted (a namespace listing), the
// table's namespace exists or can be made, and a commit on a scratch table
// works and a stale one is refused (409).
func (c *checker) catalog(ctx context.Context) {
	cfg := c.opts.Settings.Catalog
	switch {
	case cfg == nil:
		for _, n := range catalogChecks {
			c.skip(n, "not used: --catalog none")
		}
		return
	case !c.catalogOK:
		for _, n := range catalogChecks {
			c.skip(n, "catalog settings invalid")
		}
		return
	case cfg.SigV4 && c.client == nil:
		for _, n := range catalogChecks {
			c.skip(n, "SigV4 signing needs the S3 credentials: "+c.s3Blocked)
		}
		return
	}
	l, err := lake.Open(ctx, c.opts.Settings.Warehouse.Value, lake.Options{S3: c.client, Tigris: c.tigris, Logger: c.opts.Logger, Catalog: cfg})
	if err != nil {
		c.fail(CheckCatalogConfig, err.Error(), "fix TIMELAKE_WAREHOUSE")
		c.skipRest(CheckCatalogConfig, "catalog not usable")
		return
	}
	cctx, cancel := c.withTimeout(ctx)
	err = l.CatalogConfig(cctx)
	cancel()
	if err != nil {
		c.fail(CheckCatalogConfig, fmt.Sprintf("%s/v1/config: %v", strings.TrimSuffix(cfg.URI, "/"), err), catalogConfigFix(err))
		c.skipRest(CheckCatalogConfig, "catalog not reachable")
		return
	}
	c.ok(CheckCatalogConfig, fmt.Sprintf("%s/v1/config answered for warehouse %s", strings.TrimSuffix(cfg.URI, "/"), orDefault(cfg.Warehouse, c.opts.Settings.Warehouse.Value)))

	actx, cancel := c.withTimeout(ctx)
	nss, err := l.CatalogNamespaces(actx)
	cancel()
	if err != nil {
		anonymous := cfg.Token == "" && cfg.Credential == "" && !cfg.SigV4
		c.fail(CheckCatalogAuth, fmt.Sprintf("list namespaces (%s): %v", c.catalogAuth(), err), catalogAuthFix(err, anonymous))
		c.skipRest(CheckCatalogAuth, "catalog credentials not accepted")
		return
	}
	c.ok(CheckCatalogAuth, fmt.Sprintf("%s accepted: %s", c.catalogAuth(), pluralCount(len(nss), "namespace", "namespaces")))

	if !c.tableOK {
		c.skip(CheckCatalogNS, "table name invalid")
		c.skip(CheckCatalogCommit, "table name invalid")
		return
	}
	ns := c.tableName.Namespace
	if slices.Contains(nss, ns) {
		c.ok(CheckCatalogNS, fmt.Sprintf("namespace %s exists", ns))
	} else {
		c.ok(CheckCatalogNS, fmt.Sprintf("namespace %s does not exist yet: the first ingest creates it (if it should exist, check %s for a typo)",
			ns, c.opts.Settings.Table.Describe()))
	}

	pctx, cancel := context.WithTimeout(ctx, 6*c.opts.Timeout) // several requests
	defer cancel()
	probe, err := l.ProbeCatalogCommit(pctx, ns, "timelake_probe_"+strings.NewReplacer("-", "_", ".", "_").Replace(c.opts.ProbeID))
	detail := "scratch table " + probe.Table.String()
	switch {
	case err != nil:
		c.fail(CheckCatalogCommit, fmt.Sprintf("%s: %v", detail, err), catalogCommitFix(err, probe))
		return
	case !probe.StaleRefused:
		what := "accepted"
		if probe.StaleErr != nil {
			what = fmt.Sprintf("answered %v (expected 409 CommitFailedException)", probe.StaleErr)
		}
		c.fail(CheckCatalogCommit, fmt.Sprintf("%s: created and committed, but a commit asserting a main branch the table does not have was %s: "+
			"two writers could both commit on the same version; committing is unsafe", detail, what), catalogFix)
		return
	}
	detail += ": created at the Timelake location, committed, a stale commit refused (409)"
	if probe.Cleanup != nil {
		c.warn(CheckCatalogCommit, fmt.Sprintf("%s; not dropped: %v", detail, probe.Cleanup),
			fmt.Sprintf("drop %s by hand (the key may lack the right to drop tables)", probe.Table))
		c.catalogReady = true
		return
	}
	c.ok(CheckCatalogCommit, detail+", dropped")
	c.catalogReady = true
}

// skipRest skips the catalog checks after failed.
func (c *checker) skipRest(failed, reason string) {
	i := slices.Index(catalogChecks, failed)
	for _, n := range catalogChecks[i+1:] {
		c.skip(n, reason)
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
