package interop

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/catalogtest"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// EnvRequired set to "1" (scripts/test.sh does) turns a missing icebird
// harness (node, node_modules) into a failure instead of a skip.
const EnvRequired = "TIMELAKE_TEST_INTEROP_REQUIRED"

// examplesDir holds the sample gateway files (examples/landing).
var examplesDir = filepath.Join("..", "..", "examples", "landing")

func init() { lake.CommitRetryBase = time.Millisecond }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// icebirdHarness returns the harness, skipping the test when it is not
// installed (failing instead when TIMELAKE_TEST_INTEROP_REQUIRED=1).
func icebirdHarness(t testing.TB, proxy string) Icebird {
	t.Helper()
	dir, err := filepath.Abs("icebird")
	if err != nil {
		t.Fatal(err)
	}
	ib := Icebird{Dir: dir, S3Proxy: proxy}
	if err := ib.Check(); err != nil {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatalf("%s=1: %v", EnvRequired, err)
		}
		t.Skipf("%v (./scripts/test.sh installs it)", err)
	}
	return ib
}

func duckDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := OpenDuckDB(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// warehouse is one place to put tables: a local folder or an S3 bucket of
// the test server, with a landing store of the same kind, or a table bucket
// of the test REST catalog (SeaweedFS) with a local landing folder.
type warehouse struct {
	lake    *lake.Lake
	landing storage.Store
	s3      *s3.Client // nil for local
	proxy   string     // S3Proxy URL for icebird; "" for local
	// catalog is the REST catalog that holds the tables' versions (nil:
	// the metadata files), uri the warehouse it is asked for.
	catalog *catalogtest.Server
	uri     string
	// own is the folder of timelake's own files in a table.
	own string
	// env is the environment of the timelake CLI for this warehouse
	// (catalog-free): TIMELAKE_WAREHOUSE and the S3 settings.
	env map[string]string
}

func localWarehouse(t *testing.T) warehouse {
	t.Helper()
	return localWarehouseAt(t, t.TempDir())
}

// localWarehouseAt is localWarehouse in folder dir.
func localWarehouseAt(t *testing.T, dir string) warehouse {
	t.Helper()
	l, err := lake.Open(context.Background(), dir, lake.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return warehouse{lake: l, landing: st, own: "metadata/", env: map[string]string{"TIMELAKE_WAREHOUSE": dir}}
}

func s3Warehouse(t *testing.T) warehouse {
	t.Helper()
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	lakeBucket, landingBucket := srv.NewBucket(t), srv.NewBucket(t)
	uri := "s3://" + lakeBucket + "/warehouse"
	l, err := lake.Open(context.Background(), uri, lake.Options{S3: client, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(S3Proxy{Client: client})
	t.Cleanup(ps.Close)
	return warehouse{lake: l, landing: storage.NewS3Store(client, landingBucket, "", storage.S3StoreOptions{}),
		s3: client, proxy: ps.URL, own: "metadata/", env: map[string]string{"TIMELAKE_WAREHOUSE": uri,
			"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region,
			"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}}
}

// restWarehouse is a table bucket of its own in the test REST catalog.
func restWarehouse(t *testing.T) warehouse {
	t.Helper()
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	client := srv.S3Client()
	l, err := lake.Open(context.Background(), wh, lake.Options{S3: client, Logger: quiet,
		Catalog: &lake.RESTCatalog{URI: srv.URI, Credential: srv.Credential()}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(S3Proxy{Client: client})
	t.Cleanup(ps.Close)
	return warehouse{lake: l, landing: st, s3: client, proxy: ps.URL, catalog: &srv, uri: wh, own: "_timelake/"}
}

// catalogMetadataFile asks the REST catalog, with iceberg-go's own REST
// client (no timelake code), for the current metadata file of table n.
func catalogMetadataFile(t testing.TB, w warehouse, n lake.TableName) string {
	t.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "interop", w.catalog.URI, rest.WithWarehouseLocation(w.uri), rest.WithCredential(w.catalog.Credential()))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{n.Namespace, n.Name})
	if err != nil {
		t.Fatalf("load %s through the catalog: %v", n, err)
	}
	return tbl.MetadataLocation()
}

// putExamples copies examples/landing into the landing store.
func putExamples(t *testing.T, st storage.Store) {
	t.Helper()
	err := filepath.WalkDir(examplesDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(examplesDir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = st.Put(context.Background(), filepath.ToSlash(rel), bytes.NewReader(b), storage.PutOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ingestExamples runs the ingest engine over examples/landing.
func ingestExamples(t *testing.T, w warehouse, name lake.TableName, g lake.Granularity) *ingest.Report {
	t.Helper()
	putExamples(t, w.landing)
	rep, err := ingest.Run(context.Background(), ingest.Config{Landing: w.landing, Lake: w.lake, Table: name,
		SeriesKey: []string{"device_id"}, Partition: g, Logger: quiet, WorkDir: t.TempDir(),
		SettleTime: -1, OpenEndSettleTime: -1}) // the files are put whole
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 7 || rep.Quarantined != 0 || rep.Rows != 2100 {
		t.Fatalf("ingest: %d loaded, %d quarantined, %d rows; want 7, 0, 2100", rep.Loaded, rep.Quarantined, rep.Rows)
	}
	return rep
}

// genSchema is the schema of generated tables: two series key columns with
// nulls, microsecond times, a long and a double.
var genSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "reading", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// genRows makes n rows (in genSchema's column order) for batch b, spread
// over days days from start, in scrambled order, with sub-millisecond
// times and some nulls.
func genRows(b, n, days int, start time.Time) []Row {
	out := make([]Row, n)
	span := time.Duration(days) * 24 * time.Hour
	for i := range out {
		j := (i*7919 + b*104729) % n // scramble the order
		ts := start.Add(span * time.Duration(j) / time.Duration(n)).Add(time.Duration(b*1000+j) * time.Microsecond)
		var site, device, reading, seq any = fmt.Sprintf("site-%d", j%3), fmt.Sprintf("dev-%02d", (j*5)%11), float64(j)/8 - 3, int64(b*100000 + j)
		if j%13 == 0 {
			site = nil
		}
		if j%17 == 0 {
			device = nil
		}
		if j%10 == 0 {
			reading = nil
		}
		if j%19 == 0 {
			seq = nil
		}
		out[i] = Row{ts.UnixMicro(), site, device, reading, seq}
	}
	return out
}

// record builds one record batch of the table's Arrow schema from rows in
// genSchema's column order.
func record(t testing.TB, sc *arrow.Schema, rows []Row) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, v := range r {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(v.(int64)))
			case *array.StringBuilder:
				x.Append(v.(string))
			case *array.Float64Builder:
				x.Append(v.(float64))
			case *array.Int64Builder:
				x.Append(v.(int64))
			default:
				t.Fatalf("unsupported builder %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

func appendRows(t testing.TB, tbl *lake.Table, batch string, rows []Row, opts lake.AppendOptions) lake.AppendResult {
	t.Helper()
	rec := record(t, tbl.ArrowSchema(), rows)
	defer rec.Release()
	res, err := tbl.Append(context.Background(), batch, []arrow.RecordBatch{rec}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// dataObjects lists every object under the table's data/ folder, as URIs.
func dataObjects(ctx context.Context, w warehouse, location string) ([]string, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, err
	}
	var out []string
	if w.s3 == nil {
		root := filepath.Join(u.Path, "data")
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() {
				return err
			}
			out = append(out, (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String())
			return nil
		})
		sort.Strings(out)
		return out, err
	}
	prefix := strings.TrimPrefix(u.Path, "/") + "/data/"
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: aws.String(u.Host), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, "s3://"+u.Host+"/"+aws.ToString(o.Key))
		}
	}
	sort.Strings(out)
	return out, nil
}

// scanRows reads the table with an iceberg-go scan into rows of cols.
func scanRows(t testing.TB, tbl *lake.Table, cols []Column) []Row {
	t.Helper()
	at, err := tbl.Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rows, err := ArrowRows(at, cols)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
