// Package catalog owns where a table's versions live and how the next one
// is committed: the two catalogs of a warehouse (docs/catalogs.md) behind
// one small interface, Catalog, which the commit protocol speaks.
//
//   - Files (files.go), the catalog-free one: each version is
//     metadata/vN.metadata.json on the warehouse's store, created with a
//     conditional create (docs/table-format.md, "Commit protocol"); the
//     newest is found by listing (in a local folder mostly by probing), and
//     after a commit it writes the version hint and deletes old versions;
//   - REST (rest.go), an Iceberg REST catalog through iceberg-go's REST
//     client: the newest version is what loadTable returns, and the next
//     one is committed with updateTable, as the requirements and updates
//     that turn base into next (Iceberg REST spec, "CommitTableRequest");
//     with the checks env check makes of it (Config, Namespaces,
//     ProbeCommit).
//
// It also owns what both share: the names of a version (VersionRef,
// Version), an attempt's write (Write), the outcomes of a commit
// (ErrRaceLost, ErrOutcomeUnknown, ErrVersionTaken, IsPermanent), the
// cache of the newest version read per table (Versions), and the layout of
// a table's metadata folder on the store (TablePrefix, MetadataKey,
// ParseVersion, VersionOfLocation, Warehouse.ReadMetadataFile).
//
// It is separate from internal/lake so that a catalog can be changed and
// tested without the mutations: it needs the store and the warehouse's
// location (Warehouse), never a table handle. The commit protocol (the
// attempts, backoff, lost responses: internal/lake/commit.go), the
// mutations that build a change, the snapshot producer and lake's public
// API (lake.RESTCatalog, lake.ErrCatalog, lake.CatalogProbe are this
// package's types) stay in internal/lake.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// Name is a namespace-qualified table name.
type Name = tablename.Name

// Catalog is where a table's versions live and how the next one is
// committed: what the commit protocol (internal/lake/commit.go) needs,
// and nothing of the mutations (append, expire, rollback, rewrite, alter),
// which build the next version's change the same way for every catalog.
type Catalog interface {
	// Latest returns the newest version of table n, parsed by parse
	// (tablemeta.Parse validates it whole; tablemeta.Index only indexes
	// it), and where it is. ErrTableNotFound when the table has no
	// version.
	Latest(ctx context.Context, n Name, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, VersionRef, error)
	// Commit makes the version w.Change makes of w.Base (at w.BaseRef)
	// the newest version of n, on the condition that nothing the mutation
	// checked on the base changed meanwhile: the file catalog applies the
	// change to the base (tablemeta.Indexed.Apply; it records the version
	// it wrote in w.Next and w.Body), a REST catalog sends its updates and
	// requirements. It returns the committed version as the catalog holds
	// it, and the location of the version the change was applied to: the
	// base's, or with a REST catalog a newer one whose changes the
	// requirements let through.
	//
	// Errors: ErrRaceLost when another writer committed first and this
	// commit did not land; ErrOutcomeUnknown when it landed but cannot be
	// confirmed (the commit ends); a permanent error (IsPermanent: nothing
	// was written); any other error leaves the outcome unknown (the
	// commit may have landed: the next attempt asks Landed).
	Commit(ctx context.Context, n Name, w *Write) (Version, string, error)
	// Landed tells whether w, a commit of an earlier attempt whose
	// outcome was not learnt, is part of the history of newest (at nv):
	// the version the table then holds, or nil. final reports that a w
	// that did not land never will (its files may go).
	Landed(ctx context.Context, n Name, newest *tablemeta.Indexed, nv VersionRef, w Write) (hold *Version, final bool, err error)
	// Create makes meta (body: its encoding) the first version of table
	// n. ErrTableExists when the table exists.
	Create(ctx context.Context, n Name, meta table.Metadata, body []byte) (Version, error)
	// Tables lists the tables of the warehouse, sorted by name.
	Tables(ctx context.Context) ([]Name, error)
	// Committed does the catalog's chores after a commit of version v
	// (meta) of n (best effort: the version hint, old versions).
	Committed(ctx context.Context, n Name, meta *tablemeta.Indexed, v VersionRef)
	// Hinted reports whether the catalog keeps metadata/version-hint.text
	// (for readers that find tables by path).
	Hinted() bool
	// OwnFolder is the folder of a table, relative to its location,
	// where timelake keeps its own files (the load history segments and
	// the maintenance state), with a trailing slash.
	OwnFolder() string
}

// VersionRef names one version of a table's metadata: N of
// vN.metadata.json (0 when the catalog names its files otherwise) and the
// URI of its metadata file.
type VersionRef struct {
	N        int
	Location string
}

// Version is a version of a table and where it is.
type Version struct {
	Meta *tablemeta.Indexed
	Ref  VersionRef
}

// Write is one commit of a change: the version it was built on (Base at
// BaseRef), the change, and the version the file catalog wrote (the
// metadata and its encoding; nil with a REST catalog).
type Write struct {
	BaseRef VersionRef
	Base    *tablemeta.Indexed
	Change  *tablemeta.Change
	Next    *tablemeta.Indexed
	Body    []byte
}

// ErrTableNotFound is returned when a table has no version.
var ErrTableNotFound = errors.New("table not found")

// ErrTableExists is returned by Create when the table has a version.
var ErrTableExists = errors.New("table already exists")

// ErrVersionTaken is returned by the metadata-file catalog's conditional
// create when the version exists (S3 412 PreconditionFailed or 409
// ConditionalRequestConflict on If-None-Match: *; an existing file on
// disk): another writer's, or ours when the SDK retried a create that
// landed.
var ErrVersionTaken = errors.New("version already exists")

// ErrRaceLost is returned by Catalog.Commit when another writer committed
// first and this commit is known not to have landed (a REST catalog's 409
// CommitFailedException).
var ErrRaceLost = errors.New("another writer committed first")

// ErrOutcomeUnknown ends a commit whose write landed but could not be
// confirmed as part of the table's history; its files are kept (orphan
// file removal takes them if it was not).
var ErrOutcomeUnknown = errors.New("commit outcome unknown")

// Warehouse is what a catalog needs of the lake: the store rooted at the
// warehouse, its location (tables are at <warehouse>/<ns>/<table>) and
// where warnings go.
type Warehouse struct {
	Store storage.Store
	Loc   storage.Location
	Log   *slog.Logger
}

// TableLocation is <warehouse>/<ns>/<table> as an s3:// or file:// URI.
func (w Warehouse) TableLocation(n Name) string {
	if w.Loc.IsS3() {
		return w.Loc.String() + "/" + n.Namespace + "/" + n.Name
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(w.Loc.Dir, n.Namespace, n.Name))}
	return u.String()
}

// MetadataLocation returns the URI of n's vN.metadata.json.
func (w Warehouse) MetadataLocation(n Name, version int) string {
	return w.TableLocation(n) + "/metadata/v" + strconv.Itoa(version) + ".metadata.json"
}

// Versions keeps the newest version read or written per table. A
// vN.metadata.json is never rewritten (it is created with a conditional
// create), so a version seen in a listing that is in the cache need not
// be read and parsed again. The zero value is ready.
type Versions struct {
	mu sync.Mutex
	m  map[Name]Version
}

// Cached returns the version at ref if it is the one in the cache.
func (c *Versions) Cached(n Name, ref VersionRef) *tablemeta.Indexed {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[n]; ok && v.Ref.Location == ref.Location {
		return v.Meta
	}
	return nil
}

// Remember keeps h (at ref) as the newest version of n read or written,
// unless the cache holds a newer one.
func (c *Versions) Remember(n Name, ref VersionRef, h *tablemeta.Indexed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[Name]Version{}
	}
	if v, ok := c.m[n]; !ok || Newer(ref, h, v.Ref, v.Meta) {
		c.m[n] = Version{Meta: h, Ref: ref}
	}
}

// Newer reports whether version a (ha) is newer than b (hb): by number
// when both have one, else by last-sequence-number and then
// last-updated-ms (a REST catalog's files need not be numbered).
func Newer(a VersionRef, ha *tablemeta.Indexed, b VersionRef, hb *tablemeta.Indexed) bool {
	if a.N > 0 && b.N > 0 {
		return a.N > b.N
	}
	if ha.LastSeq() != hb.LastSeq() {
		return ha.LastSeq() > hb.LastSeq()
	}
	return ha.LastUpdated() > hb.LastUpdated()
}

func sortedNames(seen map[Name]bool) []Name {
	out := make([]Name, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// unmarshalOptional decodes raw, a member of a version's metadata, into v;
// a member the metadata lacks (nil) leaves v as it is.
func unmarshalOptional(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}
