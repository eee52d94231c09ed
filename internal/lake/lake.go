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
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// ErrTableNotFound is returned when a table has no vN.metadata.json (or
// the REST catalog does not have it).
var ErrTableNotFound = catalog.ErrTableNotFound

// ErrTableExists is returned by CreateTable when v1.metadata.json exists
// (or the REST catalog has the table).
var ErrTableExists = catalog.ErrTableExists

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
	store storage.Store   // metadata reads and commits (and on S3 every other file, through storeIO), rooted at the warehouse
	cat   catalog.Catalog // the table versions: catalog.Files on store, or a catalog.REST
	fsF   table.FSysF     // data files and manifests for iceberg-go: storeIO on store, or the local file system
	log   *slog.Logger
	now   func() time.Time

	segments segmentCache // load history segments read (history.go)
	cacheDir string       // Options.CacheDir
}

// Open opens the warehouse at uri (s3://bucket/prefix, file:///path or a
// folder path). It performs no I/O; a local folder is created on first write.
func Open(ctx context.Context, uri string, opts Options) (*Lake, error) {
	loc, err := storage.ParseLocation(uri, false)
	if err != nil {
		return nil, fmt.Errorf("warehouse: %w", err)
	}
	l := &Lake{loc: loc, log: opts.Logger, now: opts.Now, cacheDir: opts.CacheDir}
	if opts.Catalog != nil && !loc.IsS3() {
		return nil, fmt.Errorf("warehouse %s: a REST catalog's tables live in object storage: give an s3:// warehouse", loc)
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
	l.cat = catalog.NewFiles(l.warehouse())
	if opts.Catalog != nil {
		l.cat = catalog.NewREST(l.warehouse(), *opts.Catalog, opts.S3)
	}
	return l, nil
}

// warehouse is what the catalogs are given of the lake.
func (l *Lake) warehouse() catalog.Warehouse {
	return catalog.Warehouse{Store: l.store, Loc: l.loc, Log: l.log}
}

// URI returns the warehouse location.
func (l *Lake) URI() string { return l.loc.String() }

// Catalog names where the tables' versions are: "metadata files" for the
// catalog-free warehouse, else the REST catalog's URI and warehouse.
func (l *Lake) Catalog() string {
	if r, ok := l.cat.(*catalog.REST); ok {
		return r.String()
	}
	return "metadata files"
}

// tableLocation is <warehouse>/<ns>/<table> as an s3:// or file:// URI.
func (l *Lake) tableLocation(n TableName) string { return l.warehouse().TableLocation(n) }

// ownKey is the store key of one of timelake's own files of table n (a
// load history segment, the maintenance state): in the folder the catalog
// keeps them in (catalog.Catalog.OwnFolder).
func (l *Lake) ownKey(n TableName, name string) string {
	return catalog.TablePrefix(n) + l.cat.OwnFolder() + name
}

// ownLocation is the URI of one of timelake's own files of table n.
func (l *Lake) ownLocation(n TableName, name string) string {
	return l.tableLocation(n) + "/" + l.cat.OwnFolder() + name
}

// loadLatest returns the newest version of a table and where it is,
// parsed whole (validated) when it is read.
func (l *Lake) loadLatest(ctx context.Context, n TableName) (*tablemeta.Indexed, versionRef, error) {
	return l.cat.Latest(ctx, n, tablemeta.Parse)
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
	out, err := l.cat.Tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tables in %s: %w", l.URI(), err)
	}
	return out, nil
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
	partName := PartitionFieldName(spec.TimeColumn, spec.Partition)
	if _, taken := isc.FindFieldByName(partName); taken {
		return nil, fmt.Errorf("create %s: column %q: %w (%s of %s)", n, partName, ErrPartitionName, spec.Partition, spec.TimeColumn)
	}
	pspec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{tf.ID}, FieldID: 1000,
		Name: partName, Transform: spec.Partition.transform(),
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
	cv, err := l.cat.Create(ctx, n, meta, body)
	if err != nil {
		return nil, err
	}
	t := &Table{lake: l, name: n}
	if err := t.set(cv.Meta, cv.Ref); err != nil {
		return nil, err
	}
	return t, nil
}

// versionHintName is the version hint's file in a table's metadata folder.
const versionHintName = catalog.VersionHintName

// PartitionFieldName is the name of the partition field CreateTable gives
// a table's partitions by g (day when empty) of timeColumn: time_day.
func PartitionFieldName(timeColumn string, g Granularity) string {
	if g == "" {
		g = Day
	}
	return timeColumn + "_" + string(g)
}

// ErrPartitionName refuses a column named as one of the table's partition
// fields: Iceberg's Java and Rust libraries refuse a partition field (of
// another column's transform) that has the name of a column, so such a
// table could not be read by them.
var ErrPartitionName = errors.New("the name of one of the table's partition fields, which a column may not have (Iceberg readers refuse such a table): rename the column")
