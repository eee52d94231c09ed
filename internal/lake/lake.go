// Package lake reads and writes the warehouse's Iceberg tables (format
// version 2) following the Timelake table conventions in docs/table-format.md:
// layout <warehouse>/<ns>/<table>/{metadata,data}, the timelake.* contract
// properties, a day/hour/month partition on the time column, data sorted by
// series key then time, and a catalog-free commit that writes
// metadata/vN.metadata.json with a conditional create.
//
// Appends are idempotent by batch id: every append snapshot carries
// timelake.batch-id, and an id already in the current snapshot's ancestry
// commits nothing.
//
// Data files are written by datafile.go on arrow-go's Parquet writer, not
// iceberg-go's, which cuts row groups by a row count and bytes only and
// writes no page index: row groups of whole series are what readers prune
// (docs/performance.md).
package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// ErrTableNotFound is returned when a table has no vN.metadata.json.
var ErrTableNotFound = errors.New("table not found")

// ErrTableExists is returned by CreateTable when v1.metadata.json exists.
var ErrTableExists = errors.New("table already exists")

// Options configure Open.
type Options struct {
	// S3 is the client for s3:// warehouses (required for them): a
	// *storage.S3Client (storage.NewS3Client). Its credentials and region
	// also sign a REST catalog's requests (RESTCatalog.SigV4).
	S3 storage.S3API
	// Tigris sends X-Tigris-Consistent: true on metadata reads and
	// conditional writes.
	Tigris bool
	// Logger receives debug and warning logs; nil means slog.Default().
	Logger *slog.Logger
	// CacheDir is a folder where immutable files read from the warehouse
	// (load history segments) are kept between runs, so that a poller
	// started every minute downloads each once; "" keeps none.
	CacheDir string
	// Now is the clock of snapshot timestamps and of every age-based
	// decision (snapshot retention, cold partitions, the dedupe window,
	// orphan age); nil means time.Now. Benchmarks simulate days with it.
	Now func() time.Time
	// Catalog, when set, keeps the tables' versions in an Iceberg REST
	// catalog instead of in the warehouse's metadata files
	// (docs/catalogs.md). The warehouse is still where the tables' files
	// are: their location is <warehouse>/<ns>/<table>.
	Catalog *RESTCatalog
}

// Lake is an opened warehouse: an S3 prefix or a local folder holding
// <ns>/<table> Iceberg tables.
type Lake struct {
	loc   storage.Location
	store storage.Store // metadata reads and commits (and on S3 every other file, through storeIO), rooted at the warehouse
	cat   catalog       // the table versions: metadataFiles on store, or a REST catalog
	fsF   table.FSysF   // data files and manifests for iceberg-go: storeIO on store, or the local file system
	log   *slog.Logger
	now   func() time.Time

	// cache keeps the newest metadata read or written per table. A
	// vN.metadata.json is never rewritten (it is created with a
	// conditional create), so a version seen in a listing that is in the
	// cache need not be read and parsed again.
	mu    sync.Mutex
	cache map[TableName]cachedVersion
	// listed holds the vN.metadata.json numbers the newest listing of each
	// table found, for dropOldVersions.
	listed map[TableName][]int
	// probes holds, on a local folder, the newest version each table's
	// last listing or probe found (latestVersion).
	probes map[TableName]*versionProbe

	segments segmentCache // load history segments read (history.go)
	cacheDir string       // Options.CacheDir
}

type cachedVersion struct {
	ref  versionRef
	meta *tablemeta.Indexed
}

// cached returns the version at ref if it is the one in the cache.
func (l *Lake) cached(n TableName, ref versionRef) *tablemeta.Indexed {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.cache[n]; ok && c.ref.location == ref.location {
		return c.meta
	}
	return nil
}

// remember keeps h (at ref) as the newest version of n read or written,
// unless the cache holds a newer one.
func (l *Lake) remember(n TableName, ref versionRef, h *tablemeta.Indexed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cache == nil {
		l.cache = map[TableName]cachedVersion{}
	}
	if c, ok := l.cache[n]; !ok || newerVersion(ref, h, c.ref, c.meta) {
		l.cache[n] = cachedVersion{ref: ref, meta: h}
	}
}

// Open opens the warehouse at uri (s3://bucket/prefix, file:///path or a
// folder path). It performs no I/O; a local folder is created on first write.
func Open(ctx context.Context, uri string, opts Options) (*Lake, error) {
	loc, err := storage.ParseLocation(uri, false)
	if err != nil {
		return nil, fmt.Errorf("warehouse: %w", err)
	}
	l := &Lake{loc: loc, log: opts.Logger, now: opts.Now, cacheDir: opts.CacheDir}
	l.cat = metadataFiles{l}
	if opts.Catalog != nil {
		if !loc.IsS3() {
			return nil, fmt.Errorf("warehouse %s: a REST catalog's tables live in object storage: give an s3:// warehouse", loc)
		}
		l.cat = newRESTCatalog(l, *opts.Catalog, opts.S3)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if loc.IsS3() {
		if opts.S3 == nil {
			return nil, fmt.Errorf("warehouse %s: no S3 client configured", loc)
		}
		l.store = storage.NewS3Store(opts.S3, loc.Bucket, loc.Prefix,
			storage.S3StoreOptions{Tigris: opts.Tigris, ConsistentReads: true})
		l.fsF = func(ctx context.Context) (icebergio.IO, error) {
			return newStoreIO(ctx, l.store, loc.Bucket, loc.Prefix), nil
		}
	} else {
		st, err := storage.NewLocalStore(loc.Dir)
		if err != nil {
			return nil, fmt.Errorf("warehouse: %w", err)
		}
		l.store = st
		l.fsF = func(context.Context) (icebergio.IO, error) { return icebergio.LocalFS{}, nil }
	}
	return l, nil
}

// URI returns the warehouse location.
func (l *Lake) URI() string { return l.loc.String() }

// Catalog names where the tables' versions are: "metadata files" for the
// catalog-free warehouse, else the REST catalog's URI and warehouse.
func (l *Lake) Catalog() string {
	if r, ok := l.cat.(*restCatalog); ok {
		return r.String()
	}
	return "metadata files"
}

// tableLocation is <warehouse>/<ns>/<table> as an s3:// or file:// URI.
func (l *Lake) tableLocation(n TableName) string {
	if l.loc.IsS3() {
		return l.loc.String() + "/" + n.Namespace + "/" + n.Name
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(l.loc.Dir, n.Namespace, n.Name))}
	return u.String()
}

// metadataLocation returns the URI of n's vN.metadata.json.
func (l *Lake) metadataLocation(n TableName, version int) string {
	return l.tableLocation(n) + "/metadata/v" + strconv.Itoa(version) + ".metadata.json"
}

// ownKey is the store key of one of timelake's own files of table n (a
// load history segment, the maintenance state): in the folder the catalog
// keeps them in (catalog.ownFolder).
func (l *Lake) ownKey(n TableName, name string) string {
	return tablePrefix(n) + l.cat.ownFolder() + name
}

// ownLocation is the URI of one of timelake's own files of table n.
func (l *Lake) ownLocation(n TableName, name string) string {
	return l.tableLocation(n) + "/" + l.cat.ownFolder() + name
}

// loadLatest returns the newest version of a table and where it is,
// parsed whole (validated) when it is read.
func (l *Lake) loadLatest(ctx context.Context, n TableName) (*tablemeta.Indexed, versionRef, error) {
	return l.cat.latest(ctx, n, tablemeta.Parse)
}

// LoadTable opens an existing table; ErrTableNotFound if it has no metadata,
// ErrUnsupportedFormat if its timelake.format-version is too new.
func (l *Lake) LoadTable(ctx context.Context, n TableName) (*Table, error) {
	h, v, err := l.loadLatest(ctx, n)
	if err != nil {
		return nil, err
	}
	t := &Table{lake: l, name: n}
	if err := t.set(h, v); err != nil {
		return nil, err
	}
	return t, nil
}

// ListTables lists the tables of the warehouse, sorted by name: the
// <ns>/<table> folders that hold a metadata/v*.metadata.json, or the
// tables of the REST catalog's namespaces.
func (l *Lake) ListTables(ctx context.Context) ([]TableName, error) {
	out, err := l.cat.tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tables in %s: %w", l.URI(), err)
	}
	return out, nil
}

func sortedTableNames(seen map[TableName]bool) []TableName {
	out := make([]TableName, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// CreateSpec describes a new table's contract.
type CreateSpec struct {
	TimeColumn string      // required; must be a timestamp column of the schema
	SeriesKey  []string    // optional columns identifying a series
	Partition  Granularity // hour, day (default) or month
	// Properties are extra table properties (kept as given).
	Properties map[string]string
}

// CreateTable creates a table from an Arrow schema: fresh field ids, the time
// column as a required timestamptz (microseconds), partition spec
// <chunk>(time) named <timecol>_<chunk>, sort order (series key..., time)
// ascending nulls first, zstd Parquet. It writes v1.metadata.json with a
// conditional create, or creates the table through the REST catalog at
// <warehouse>/<ns>/<table>: ErrTableExists if another writer got there
// first.
func (l *Lake) CreateTable(ctx context.Context, n TableName, sc *arrow.Schema, spec CreateSpec) (*Table, error) {
	if spec.Partition == "" {
		spec.Partition = Day
	}
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, true)
	if err != nil {
		return nil, fmt.Errorf("create %s: schema: %w", n, err)
	}
	tf, ok := isc.FindFieldByName(spec.TimeColumn)
	if !ok {
		return nil, fmt.Errorf("create %s: time column %q is not in the schema", n, spec.TimeColumn)
	}
	if _, ok := tf.Type.(iceberg.TimestampTzType); !ok {
		return nil, fmt.Errorf("create %s: time column %q is %s, expected timestamptz", n, spec.TimeColumn, tf.Type)
	}
	if !tf.Required {
		return nil, fmt.Errorf("create %s: time column %q must be required (NOT NULL)", n, spec.TimeColumn)
	}
	sortFields := make([]table.SortField, 0, len(spec.SeriesKey)+1)
	for _, k := range spec.SeriesKey {
		f, ok := isc.FindFieldByName(k)
		if !ok {
			return nil, fmt.Errorf("create %s: series key column %q is not in the schema", n, k)
		}
		sortFields = append(sortFields, table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{},
			Direction: table.SortASC, NullOrder: table.NullsFirst})
	}
	sortFields = append(sortFields, table.SortField{SourceIDs: []int{tf.ID}, Transform: iceberg.IdentityTransform{},
		Direction: table.SortASC, NullOrder: table.NullsFirst})
	order, err := table.NewSortOrder(1, sortFields)
	if err != nil {
		return nil, fmt.Errorf("create %s: sort order: %w", n, err)
	}
	pspec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{tf.ID}, FieldID: 1000,
		Name: spec.TimeColumn + "_" + string(spec.Partition), Transform: spec.Partition.transform(),
	})
	props := iceberg.Properties{
		table.PropertyFormatVersion:       "2",
		PropTimeColumn:                    spec.TimeColumn,
		PropChunk:                         string(spec.Partition),
		table.ParquetCompressionKey:       "zstd",
		table.ParquetCompressionLevelKey:  "3",
		table.DefaultWriteMetricsModeKey:  "truncate(16)",
		table.WriteTargetFileSizeBytesKey: strconv.Itoa(512 << 20),
		// Row groups of whole series, at most DuckDB's own row group
		// size (datafile.go).
		table.ParquetRowGroupLimitKey: strconv.Itoa(DefaultRowGroupRows),
		// Merge small manifests as snapshots accumulate (the Iceberg
		// default in Java), so manifest lists stay short with one
		// snapshot per landing file.
		table.ManifestMergeEnabledKey: "true",
		// ... as soon as there are a few: compaction and expiry read the
		// current snapshot's manifests every minute.
		table.ManifestMinMergeCountKey: strconv.Itoa(DefaultManifestMergeCount),
		// Every version holds the whole snapshot history: keep only those
		// the metadata-log names, a few (maintain.go).
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      strconv.Itoa(DefaultMetadataVersions),
		// Compaction, snapshot expiry with the load history, orphan file
		// removal after ingest (maintain.go).
		PropAutoMaintain: "true",
	}
	if len(spec.SeriesKey) > 0 {
		props[PropSeriesKey] = strings.Join(spec.SeriesKey, ",")
	}
	for k, v := range spec.Properties {
		props[k] = v
	}
	meta, err := table.NewMetadata(isc, &pspec, order, l.tableLocation(n), props)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", n, err)
	}
	body, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("create %s: encode metadata: %w", n, err)
	}
	// The creation time by the lake's clock, as every later timestamp.
	body = tablemeta.WithLastUpdated(body, l.now().UnixMilli())
	cv, err := l.cat.create(ctx, n, meta, body)
	if err != nil {
		return nil, err
	}
	t := &Table{lake: l, name: n}
	if err := t.set(cv.meta, cv.ref); err != nil {
		return nil, err
	}
	return t, nil
}

// versionHintName is the version hint's file in a table's metadata folder.
const versionHintName = "version-hint.text"

// writeVersionHint writes metadata/version-hint.text holding N, the Iceberg
// convention that DuckDB, Spark's Hadoop tables and icebird read first. It
// only moves forward: the hint is replaced with a compare-and-swap on its
// ETag (a conditional create when there is none) and left alone when it
// names version N or a newer one, so two writers racing never leave it on
// an older version than one of them committed. Best effort: readers that
// list confirm it, and this writer never reads it for its own commits.
func (l *Lake) writeVersionHint(ctx context.Context, n TableName, version int) {
	key := metadataPrefix(n) + versionHintName
	for range 5 {
		b, info, err := storage.ReadAll(ctx, l.store, key)
		missing := errors.Is(err, storage.ErrNotExist)
		if err != nil && !missing {
			l.log.Warn("version hint not read (readers fall back to listing)", "table", n.String(), "version", version, "err", err)
			return
		}
		if cur, perr := strconv.Atoi(strings.TrimSpace(string(b))); !missing && perr == nil && cur >= version {
			return // a newer writer's hint, or ours already
		}
		opts := storage.PutOptions{ContentType: "text/plain", IfAbsent: missing}
		if !missing {
			opts.IfMatch = info.ETag
		}
		_, err = l.store.Put(ctx, key, strings.NewReader(strconv.Itoa(version)), opts)
		if errors.Is(err, storage.ErrPreconditionFailed) {
			continue // another writer moved it meanwhile: look again
		}
		if err != nil {
			l.log.Warn("version hint not written (readers fall back to listing)", "table", n.String(), "version", version, "err", err)
		}
		return
	}
	l.log.Warn("version hint not written: it kept changing (readers fall back to listing)", "table", n.String(), "version", version)
}
