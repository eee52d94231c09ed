package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// RESTConfig is an Iceberg REST catalog that holds the tables' versions
// (lake.Options.Catalog, lake.RESTCatalog; docs/catalogs.md). The client
// is iceberg-go's (catalog/rest): /v1/config, loadTable, createTable and
// updateTable, with its bearer token, OAuth2 client-credentials and SigV4
// support.
type RESTConfig struct {
	// URI is the catalog's base URI, without /v1 (e.g.
	// https://catalog.example.com/api/catalog).
	URI string
	// Warehouse is the warehouse asked for in /v1/config (a bucket URI,
	// a catalog name or an ARN, as the server names them); "" asks for
	// the warehouse URI.
	Warehouse string
	// Prefix is the path prefix of the catalog's routes; "" takes the
	// one the server's /v1/config gives.
	Prefix string
	// Token is a bearer token sent with every request.
	Token string
	// Credential is OAuth2 client credentials, client_id:client_secret,
	// exchanged for a token at OAuth2URI (default <URI>/v1/oauth/tokens).
	Credential string
	OAuth2URI  string
	// Scope is the OAuth2 scope; "" is "catalog".
	Scope string
	// SigV4 signs every request with the S3 credentials (AWS Glue, S3
	// Tables): service SigV4Service (default execute-api) in region
	// SigV4Region (default the S3 client's).
	SigV4        bool
	SigV4Region  string
	SigV4Service string
	// Transport carries the catalog's requests; nil is a transport with
	// connect and response-header timeouts (RESTResponseTimeout).
	Transport http.RoundTripper
}

// RESTResponseTimeout bounds how long the catalog may take to answer one
// request before the commit's outcome is taken as unknown.
const RESTResponseTimeout = 2 * time.Minute

// restOwnFolder is where timelake keeps its own files in a table of a REST
// catalog: a folder beside data/ and metadata/ whose name starts with "_",
// which S3-Tables-style table buckets keep for the formats' own files
// (their metadata/ takes Iceberg's files only).
const restOwnFolder = "_timelake/"

// REST is the catalog of a warehouse whose tables' versions live in an
// Iceberg REST catalog. The client is made on first use (NewREST does no
// I/O).
type REST struct {
	wh       Warehouse
	versions Versions
	cfg      RESTConfig
	s3       storage.S3API // the SigV4 credentials and region (storage.SigV4Config)

	mu sync.Mutex
	cl *rest.Catalog
}

var _ Catalog = (*REST)(nil)

// NewREST returns the REST catalog cfg of warehouse wh; s3c gives the
// credentials and region of SigV4 signing (cfg.SigV4).
func NewREST(wh Warehouse, cfg RESTConfig, s3c storage.S3API) *REST {
	if cfg.Warehouse == "" {
		cfg.Warehouse = wh.Loc.String()
	}
	return &REST{wh: wh, cfg: cfg, s3: s3c}
}

// Settings returns the settings and S3 client the catalog was made with
// (to open the warehouse again).
func (c *REST) Settings() (RESTConfig, storage.S3API) { return c.cfg, c.s3 }

// String names the catalog in messages.
func (c *REST) String() string {
	return fmt.Sprintf("REST catalog %s (warehouse %s)", c.cfg.URI, c.cfg.Warehouse)
}

// ErrCatalog marks errors of the REST catalog: it was unreachable, refused
// the credentials, or answered what timelake cannot use.
var ErrCatalog = errors.New("REST catalog")

// client returns the iceberg-go client, made (and /v1/config read) on
// first use; a failure is not kept, the next call tries again.
func (c *REST) client(ctx context.Context) (*rest.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		return c.cl, nil
	}
	tr := c.cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: RESTResponseTimeout,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	// iceberg-go's client retries nothing itself, and net/http replays no
	// POST without an Idempotency-Key header: a commit is sent once per
	// attempt, and the commit protocol decides what follows.
	opts := []rest.Option{rest.WithCustomTransport(tr), rest.WithWarehouseLocation(c.cfg.Warehouse)}
	if c.cfg.Prefix != "" {
		opts = append(opts, rest.WithPrefix(c.cfg.Prefix))
	}
	if c.cfg.Token != "" {
		opts = append(opts, rest.WithOAuthToken(c.cfg.Token))
	}
	if c.cfg.Credential != "" {
		opts = append(opts, rest.WithCredential(c.cfg.Credential))
	}
	if c.cfg.OAuth2URI != "" {
		u, err := parseHTTPURL(c.cfg.OAuth2URI)
		if err != nil {
			return nil, fmt.Errorf("%w: OAuth2 token endpoint: %w", ErrCatalog, err)
		}
		opts = append(opts, rest.WithAuthURI(u))
	}
	if c.cfg.Scope != "" {
		opts = append(opts, rest.WithScope(c.cfg.Scope))
	}
	if c.cfg.SigV4 {
		if c.s3 == nil {
			return nil, fmt.Errorf("%w: SigV4 signing needs the S3 credentials", ErrCatalog)
		}
		awsCfg, err := storage.SigV4Config(c.s3, c.cfg.SigV4Region)
		if err != nil {
			return nil, fmt.Errorf("%w: SigV4 signing: %w", ErrCatalog, err)
		}
		opts = append(opts, rest.WithAwsConfig(awsCfg), rest.WithSigV4RegionSvc(awsCfg.Region, c.cfg.SigV4Service))
	}
	cl, err := rest.NewCatalog(ctx, "timelake", c.cfg.URI, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrCatalog, c.cfg.URI, err)
	}
	c.cl = cl
	return cl, nil
}

func restIdent(n Name) table.Identifier { return table.Identifier{n.Namespace, n.Name} }

// restNotFound reports a table or namespace the catalog does not have.
func restNotFound(err error) bool {
	return errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace)
}

// IsPermanent reports a REST catalog's answer that no retry changes: the
// request was refused (400, 401, 403, 404, 419, 501) or no token could be
// had, so nothing was committed.
func IsPermanent(err error) bool {
	for _, e := range []error{rest.ErrBadRequest, rest.ErrUnauthorized, rest.ErrForbidden, rest.ErrAuthorizationExpired,
		rest.ErrOAuthError, icecatalog.ErrNoSuchTable, icecatalog.ErrNoSuchNamespace, iceberg.ErrNotImplemented, ErrForeignLocation} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ErrForeignLocation refuses to commit to a table of the catalog that is
// not at the Timelake location <warehouse>/<ns>/<table>: timelake's own
// files of a table are found from that location.
var ErrForeignLocation = errors.New("not at the location timelake gives its tables")

func (c *REST) Latest(ctx context.Context, n Name, _ func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, VersionRef, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, VersionRef{}, err
	}
	tbl, err := cl.LoadTable(ctx, restIdent(n))
	if restNotFound(err) {
		return nil, VersionRef{}, fmt.Errorf("%s in %s: %w", n, c, ErrTableNotFound)
	}
	if err != nil {
		return nil, VersionRef{}, fmt.Errorf("load %s from the %s: %w", n, c, err)
	}
	ref := VersionRef{N: VersionOfLocation(tbl.MetadataLocation()), Location: tbl.MetadataLocation()}
	if h := c.versions.Cached(n, ref); h != nil {
		return h, ref, nil
	}
	h, err := tablemeta.FromMetadata(tbl.Metadata())
	if err != nil {
		return nil, VersionRef{}, fmt.Errorf("load %s from the %s: %w", n, c, err)
	}
	c.versions.Remember(n, ref, h)
	return h, ref, nil
}

// Commit sends updateTable: the change's updates, on its requirements
// (what the mutation checked on the base still holds).
func (c *REST) Commit(ctx context.Context, n Name, w *Write) (Version, string, error) {
	base := w.Base
	if loc := base.Write().Location(); loc != c.wh.TableLocation(n) {
		return Version{}, "", fmt.Errorf("%s is at %s, %w %s", n, loc, ErrForeignLocation, c.wh.TableLocation(n))
	}
	if w.Change.Empty() {
		return Version{}, "", fmt.Errorf("%s: %w: it changes nothing", n, tablemeta.ErrInvalidChange)
	}
	updates, err := w.Change.Updates(base)
	if err != nil {
		return Version{}, "", err
	}
	reqs, err := w.Change.Requirements(base)
	if err != nil {
		return Version{}, "", err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return Version{}, "", err
	}
	meta, loc, err := cl.CommitTable(ctx, restIdent(n), reqs, updates)
	switch {
	case errors.Is(err, table.ErrCommitFailed):
		return Version{}, "", fmt.Errorf("commit to the %s: %w: %w", c, ErrRaceLost, err)
	case err != nil:
		return Version{}, "", fmt.Errorf("commit to the %s: %w", c, err)
	}
	h, err := tablemeta.FromMetadata(meta)
	if err != nil {
		// Committed, but the answer cannot be read: the next load will.
		return Version{}, "", fmt.Errorf("%w: the %s's answer: %w", ErrOutcomeUnknown, c, err)
	}
	ref := VersionRef{N: VersionOfLocation(loc), Location: loc}
	c.versions.Remember(n, ref, h)
	return Version{Meta: h, Ref: ref}, h.PreviousLocation(), nil
}

// Landed recognises a commit of an earlier attempt in the newest version
// (tablemeta.Change.HeldBy). A commit that added snapshots and is not there cannot
// land any more once the main branch moved from where it asserted it
// (assert-ref-snapshot-id); other commits may (a request the catalog still
// works on), so their files stay.
func (c *REST) Landed(_ context.Context, _ Name, newest *tablemeta.Indexed, nv VersionRef, w Write) (*Version, bool, error) {
	if w.Change.HeldBy(newest, w.Base) {
		return &Version{Meta: newest, Ref: nv}, true, nil
	}
	final := w.Change.AddsSnapshots() && newest.MainSnapshot() != w.Base.MainSnapshot()
	return nil, final, nil
}

// Create makes the namespace when it is missing and then the table,
// through createTable at the Timelake location with meta's schema,
// partition spec, sort order and properties.
func (c *REST) Create(ctx context.Context, n Name, meta table.Metadata, _ []byte) (Version, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return Version{}, err
	}
	ns := table.Identifier{n.Namespace}
	if err := cl.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return Version{}, fmt.Errorf("create %s: namespace %s in the %s: %w", n, n.Namespace, c, err)
	}
	spec := meta.PartitionSpec()
	tbl, err := cl.CreateTable(ctx, restIdent(n), meta.CurrentSchema(),
		icecatalog.WithLocation(c.wh.TableLocation(n)), icecatalog.WithPartitionSpec(&spec),
		icecatalog.WithSortOrder(meta.SortOrder()), icecatalog.WithProperties(meta.Properties()))
	if errors.Is(err, icecatalog.ErrTableAlreadyExists) {
		return Version{}, fmt.Errorf("create %s: %w", n, ErrTableExists)
	}
	if err != nil {
		return Version{}, fmt.Errorf("create %s in the %s: %w", n, c, err)
	}
	if loc := tbl.Metadata().Location(); loc != c.wh.TableLocation(n) {
		return Version{}, fmt.Errorf("create %s: the %s put it at %s, %w %s", n, c, loc, ErrForeignLocation, c.wh.TableLocation(n))
	}
	h, err := tablemeta.FromMetadata(tbl.Metadata())
	if err != nil {
		return Version{}, err
	}
	ref := VersionRef{N: VersionOfLocation(tbl.MetadataLocation()), Location: tbl.MetadataLocation()}
	c.versions.Remember(n, ref, h)
	return Version{Meta: h, Ref: ref}, nil
}

// Tables lists the tables of every top-level namespace.
func (c *REST) Tables(ctx context.Context) ([]Name, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	nss, err := cl.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("namespaces of the %s: %w", c, err)
	}
	seen := map[Name]bool{}
	for _, ns := range nss {
		for id, err := range cl.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("tables of %s in the %s: %w", strings.Join(ns, "."), c, err)
			}
			if len(id) != 2 {
				continue // a nested namespace: not a Timelake table name
			}
			if n, err := tablename.Parse(id[0] + "." + id[1]); err == nil {
				seen[n] = true
			}
		}
	}
	return sortedNames(seen), nil
}

// Committed: the catalog keeps the versions and their files; readers ask
// it for the newest (no version hint).
func (c *REST) Committed(context.Context, Name, *tablemeta.Indexed, VersionRef) {}

func (c *REST) Hinted() bool { return false }

func (c *REST) OwnFolder() string { return restOwnFolder }

// parseHTTPURL parses an http(s) URL with a host.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL such as https://catalog.example.com", s)
	}
	return u, nil
}

// Config reads the REST catalog's /v1/config for the warehouse (env
// check): the URI answers and knows the warehouse. No credentials are
// needed yet for most servers.
func (c *REST) Config(ctx context.Context) error {
	_, err := c.client(ctx)
	return err
}

// Namespaces lists the REST catalog's top-level namespaces: the first
// request that needs the credentials (env check).
func (c *REST) Namespaces(ctx context.Context) ([]string, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	nss, err := cl.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(nss))
	for i, ns := range nss {
		out[i] = strings.Join(ns, ".")
	}
	return out, nil
}

// Probe is what ProbeCommit did.
type Probe struct {
	Table            Name // the scratch table
	CreatedNamespace bool // its namespace was created (and dropped again)
	// Committed says a commit on the scratch table (set-properties with
	// the requirements every commit sends) was applied.
	Committed bool
	// StaleRefused says a commit asserting a main branch the table does
	// not have was refused with 409 CommitFailedException, as the commit
	// protocol needs; StaleErr is the answer otherwise (nil: accepted).
	StaleRefused bool
	StaleErr     error
	// Cleanup is why the scratch table (or its namespace) could not be
	// dropped; nil when it was.
	Cleanup error
}

// ProbeCommit proves that the REST catalog commits as the commit
// protocol needs (env check): in namespace ns (created when missing) it
// creates the scratch table name at the Timelake location, commits a
// property change on it, sends a stale commit that must be refused with
// 409, and drops the table (with its files) and a namespace it created.
//
// Errors: a step that failed (creating the namespace or the table, the
// commit); the result says how far it got.
func (c *REST) ProbeCommit(ctx context.Context, ns, name string) (Probe, error) {
	n := Name{Namespace: ns, Name: name}
	res := Probe{Table: n}
	cl, err := c.client(ctx)
	if err != nil {
		return res, err
	}
	exists, err := cl.CheckNamespaceExists(ctx, table.Identifier{ns})
	if err != nil {
		return res, fmt.Errorf("namespace %s: %w", ns, err)
	}
	if !exists {
		if err := cl.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			return res, fmt.Errorf("create namespace %s: %w", ns, err)
		}
		res.CreatedNamespace = true
	}
	defer func() {
		cctx := context.WithoutCancel(ctx)
		res.Cleanup = cl.PurgeTable(cctx, restIdent(n))
		if errors.Is(res.Cleanup, icecatalog.ErrNoSuchTable) {
			res.Cleanup = nil
		}
		if res.CreatedNamespace {
			res.Cleanup = errors.Join(res.Cleanup, cl.DropNamespace(cctx, table.Identifier{ns}))
		}
	}()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "probe", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cl.CreateTable(ctx, restIdent(n), sc, icecatalog.WithLocation(c.wh.TableLocation(n)),
		icecatalog.WithProperties(iceberg.Properties{"timelake.probe": "env check"}))
	if err != nil {
		return res, fmt.Errorf("create scratch table %s at %s: %w", n, c.wh.TableLocation(n), err)
	}
	if loc := tbl.Metadata().Location(); loc != c.wh.TableLocation(n) {
		return res, fmt.Errorf("create scratch table %s: the catalog put it at %s, %w %s", n, loc, ErrForeignLocation, c.wh.TableLocation(n))
	}
	uuid := tbl.Metadata().TableUUID()
	if _, _, err := cl.CommitTable(ctx, restIdent(n),
		[]table.Requirement{table.AssertTableUUID(uuid), table.AssertRefSnapshotID(table.MainBranch, nil)},
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"timelake.probe": "committed"})}); err != nil {
		return res, fmt.Errorf("commit to scratch table %s: %w", n, err)
	}
	res.Committed = true
	stale := int64(1)
	_, _, err = cl.CommitTable(ctx, restIdent(n),
		[]table.Requirement{table.AssertTableUUID(uuid), table.AssertRefSnapshotID(table.MainBranch, &stale)},
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"timelake.probe": "stale"})})
	res.StaleRefused, res.StaleErr = errors.Is(err, table.ErrCommitFailed), err
	return res, nil
}
