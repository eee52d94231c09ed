package lake

import (
	"context"
	"errors"

	"github.com/timelake/timelake/internal/lake/catalog"
)

// The catalogs that keep the tables' versions are package catalog's
// (internal/lake/catalog): the metadata files (catalog.Files) and an
// Iceberg REST catalog (catalog.REST), behind catalog.Catalog, which the
// commit protocol (commit.go) speaks. Here are the names lake's API gives
// them, and the REST catalog's checks for env check.

// versionRef names one version of a table's metadata (catalog.VersionRef).
type versionRef = catalog.VersionRef

// committedVersion is a version of a table and where it is
// (catalog.Version).
type committedVersion = catalog.Version

// RESTCatalog is an Iceberg REST catalog that holds the tables' versions
// (Options.Catalog; docs/catalogs.md): its URI, warehouse, credentials and
// SigV4 signing (catalog.RESTConfig).
type RESTCatalog = catalog.RESTConfig

// RESTResponseTimeout bounds how long the catalog may take to answer one
// request before the commit's outcome is taken as unknown.
const RESTResponseTimeout = catalog.RESTResponseTimeout

// ErrCatalog marks errors of the REST catalog: it was unreachable, refused
// the credentials, or answered what timelake cannot use.
var ErrCatalog = catalog.ErrCatalog

// ErrNoRESTCatalog is returned by the catalog checks of a lake whose
// versions are metadata files.
var ErrNoRESTCatalog = errors.New("the warehouse keeps no REST catalog")

// CatalogProbe is what ProbeCatalogCommit did (catalog.Probe).
type CatalogProbe = catalog.Probe

func (l *Lake) restCatalog() (*catalog.REST, error) {
	if r, ok := l.cat.(*catalog.REST); ok {
		return r, nil
	}
	return nil, ErrNoRESTCatalog
}

// CatalogConfig reads the REST catalog's /v1/config for the warehouse
// (env check): the URI answers and knows the warehouse. No credentials are
// needed yet for most servers.
func (l *Lake) CatalogConfig(ctx context.Context) error {
	r, err := l.restCatalog()
	if err != nil {
		return err
	}
	return r.Config(ctx)
}

// CatalogNamespaces lists the REST catalog's top-level namespaces: the
// first request that needs the credentials (env check).
func (l *Lake) CatalogNamespaces(ctx context.Context) ([]string, error) {
	r, err := l.restCatalog()
	if err != nil {
		return nil, err
	}
	return r.Namespaces(ctx)
}

// ProbeCatalogCommit proves that the REST catalog commits as the commit
// protocol needs (env check): in namespace ns (created when missing) it
// creates the scratch table name at the Timelake location, commits a
// property change on it, sends a stale commit that must be refused with
// 409, and drops the table (with its files) and a namespace it created
// (catalog.REST.ProbeCommit).
//
// Errors: a step that failed (creating the namespace or the table, the
// commit); the result says how far it got.
func (l *Lake) ProbeCatalogCommit(ctx context.Context, ns, name string) (CatalogProbe, error) {
	r, err := l.restCatalog()
	if err != nil {
		return CatalogProbe{Table: TableName{Namespace: ns, Name: name}}, err
	}
	return r.ProbeCommit(ctx, ns, name)
}
