package lake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// for the independent client
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/catalogtest"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// newRESTLake opens a warehouse whose tables' versions live in the test
// REST catalog (SeaweedFS), in a table bucket of the test's own, with the
// catalog's OAuth2 client credentials.
func newRESTLake(t testing.TB) *Lake {
	t.Helper()
	srv := catalogtest.FromEnv(t)
	return openRESTLake(t, srv, srv.NewWarehouse(t), srv.URI)
}

// openRESTLake opens warehouse wh of srv through the catalog at uri (the
// server's, or a fault proxy in front of it).
func openRESTLake(t testing.TB, srv catalogtest.Server, wh, uri string) *Lake {
	t.Helper()
	l, err := Open(context.Background(), wh, Options{S3: srv.S3Client(),
		Catalog: &RESTCatalog{URI: uri, Credential: srv.Credential()}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// independentLoad loads table n of warehouse wh with iceberg-go's own REST
// client (no timelake code): what another engine sees through the catalog.
func independentLoad(t testing.TB, srv catalogtest.Server, wh string, n TableName) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "independent", srv.URI, rest.WithWarehouseLocation(wh), rest.WithCredential(srv.Credential()),
		rest.WithAdditionalProps(iceberg.Properties{icebergio.S3AccessKeyID: srv.AccessKey, icebergio.S3SecretAccessKey: srv.SecretKey,
			icebergio.S3Region: srv.Region, icebergio.S3EndpointURL: srv.S3Endpoint, "s3.path-style-access": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{n.Namespace, n.Name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestRESTCreateAtTimelakeLocation: a table created through the catalog
// is at <warehouse>/<ns>/<table> with the table contract's properties, as
// an independent client loads it; timelake's own files are in _timelake/.
func TestRESTCreateAtTimelakeLocation(t *testing.T) {
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	l := openRESTLake(t, srv, wh, srv.URI)
	tbl := createTestTable(t, l)
	if _, err := l.CreateTable(context.Background(), testName, testSchema, CreateSpec{TimeColumn: "time"}); !errors.Is(err, ErrTableExists) {
		t.Fatalf("second create: %v, want ErrTableExists", err)
	}
	appendRows(t, tbl, "a.csv", day0, 4)
	got := independentLoad(t, srv, wh, testName)
	if want := wh + "/iot/readings"; got.Metadata().Location() != want {
		t.Errorf("location %s, want %s", got.Metadata().Location(), want)
	}
	props := got.Metadata().Properties()
	if got.Metadata().Version() != 2 {
		t.Errorf("format version %d, want 2", got.Metadata().Version())
	}
	for k, v := range map[string]string{PropTimeColumn: "time", PropSeriesKey: "device", PropChunk: "day",
		table.MetadataPreviousVersionsMaxKey: "3", PropAutoMaintain: "true", table.ParquetCompressionKey: "zstd"} {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q", k, props[k], v)
		}
	}
	if got.MetadataLocation() != tbl.MetadataLocation() || tbl.Version() != 2 {
		t.Errorf("metadata %s (v%d), the catalog's %s", tbl.MetadataLocation(), tbl.Version(), got.MetadataLocation())
	}
	names, err := l.ListTables(context.Background())
	if err != nil || len(names) != 1 || names[0] != testName {
		t.Errorf("tables %v, %v", names, err)
	}
}

// restFault is one fault of the catalog's commits, injected by the fault
// proxy in front of the catalog port.
type restFault struct {
	name string
	rule s3fault.Rule
}

// restCommitRule selects the commits of a table (updateTable: POST
// /v1/{prefix}/namespaces/{ns}/tables/{table}).
func restCommitRule(r s3fault.Rule) s3fault.Rule {
	r.Method, r.Bucket, r.Key = http.MethodPost, "v1", "*/namespaces/*/tables/*"
	return r
}

// TestRESTCommitFaults: appends through a fault proxy in front of the
// catalog that loses commit responses (the catalog committed), answers
// 409 storms and 503s (it did not), and delays commits, load every batch
// exactly once: an independent client counts the rows, each batch id is
// in the ancestry once, and no file is left unreferenced.
func TestRESTCommitFaults(t *testing.T) {
	for _, f := range []restFault{
		{"lost commit responses", s3fault.Rule{Action: s3fault.LoseResponse, Prob: 0.5, Times: 6}},
		{"409 storm", s3fault.Rule{Action: s3fault.Fail, Status: 409, Code: "CommitFailedException", Times: 8}},
		{"503", s3fault.Rule{Action: s3fault.Fail, Status: 503, Code: "ServiceUnavailableException", Prob: 0.5, Times: 6}},
		{"500 after commit", s3fault.Rule{Action: s3fault.LoseResponse, Skip: 1, Times: 1}},
		{"slow commits", s3fault.Rule{Action: s3fault.Forward, Delay: 50 * time.Millisecond}},
	} {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			srv := catalogtest.FromEnv(t)
			wh := srv.NewWarehouse(t)
			proxy := s3fault.StartT(t, srv.URI, 7)
			l := openRESTLake(t, srv, wh, proxy.URL)
			tbl := createTestTable(t, l)
			f.rule.Name = f.name
			proxy.Add(restCommitRule(f.rule))
			const batches = 8
			for i := range batches {
				appendRows(t, tbl, fmt.Sprintf("gw/%d.csv", i), day0, 5)
			}
			// Re-sent keys load nothing.
			for i := range 3 {
				if r := appendRows(t, tbl, fmt.Sprintf("gw/%d.csv", i), day0, 5); !r.Duplicate {
					t.Errorf("re-sent gw/%d.csv: %+v, want a duplicate", i, r)
				}
			}
			if c := proxy.Counts(f.name); c.Injected == 0 {
				t.Fatalf("no fault injected (%+v)", c)
			}
			proxy.Clear()
			fresh, err := openRESTLake(t, srv, wh, srv.URI).LoadTable(ctx, testName)
			if err != nil {
				t.Fatal(err)
			}
			checkBatchesOnce(t, fresh, batches, 5)
			if n := independentRows(t, independentLoad(t, srv, wh, testName)); n != batches*5 {
				t.Errorf("an independent client counts %d rows, want %d", n, batches*5)
			}
			assertNoOrphans(t, l, fresh)
		})
	}
}

// TestRESTCommitGivesUpOnAStorm: a 409 storm longer than the commit's
// attempts ends it with table.ErrCommitFailed and no file of its own.
func TestRESTCommitGivesUpOnAStorm(t *testing.T) {
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	proxy := s3fault.StartT(t, srv.URI, 1)
	l := openRESTLake(t, srv, wh, proxy.URL)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "a.csv", day0, 3)
	storm := proxy.Add(restCommitRule(s3fault.Rule{Name: "storm", Action: s3fault.Fail, Status: 409, Code: "CommitFailedException"}))
	rec := rows(t, tbl.ArrowSchema(), day0, 5, false)
	defer rec.Release()
	_, err := tbl.Append(context.Background(), "b.csv", []arrow.RecordBatch{rec}, AppendOptions{CommitOptions: CommitOptions{MaxAttempts: 4}})
	if !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("append in a storm: %v, want table.ErrCommitFailed", err)
	}
	if c := proxy.Counts(storm.Name); c.Injected != 4 {
		t.Errorf("%d commits sent, want 4 (one per attempt: nothing retries them behind the protocol's back)", c.Injected)
	}
	proxy.Clear()
	fresh, err := l.LoadTable(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.FindBatch("b.csv"); ok {
		t.Error("b.csv committed although every commit was refused")
	}
	assertNoOrphans(t, l, fresh)
}

// checkBatchesOnce requires batches gw/0.csv... each once in the ancestry,
// with rows rows each, and no other batch.
func checkBatchesOnce(t testing.TB, tbl *Table, batches, rows int) {
	t.Helper()
	seen := map[string]int{}
	for _, b := range tbl.Batches() {
		seen[b.BatchID]++
		if b.Rows != int64(rows) {
			t.Errorf("batch %s: %d rows, want %d", b.BatchID, b.Rows, rows)
		}
	}
	for i := range batches {
		if id := fmt.Sprintf("gw/%d.csv", i); seen[id] != 1 {
			t.Errorf("batch %s in the ancestry %d times, want once", id, seen[id])
		}
	}
	if len(seen) != batches {
		t.Errorf("%d batches, want %d: %v", len(seen), batches, seen)
	}
}

// independentRows counts the rows of tbl with iceberg-go's scan.
func independentRows(t testing.TB, tbl *table.Table) int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// TestRESTConcurrentExpiresKeepEveryKey: two maintenance rounds expire at
// once through the catalog; the second one's commit does not conflict
// (the main branch did not move) and the catalog applies it on top of the
// first, so its load history list would replace the first one's. The keys
// the first expired, which the second did not, must stay loaded.
func TestRESTConcurrentExpiresKeepEveryKey(t *testing.T) {
	ctx := context.Background()
	l := newRESTLake(t)
	tbl := createTestTable(t, l)
	for i := range 5 {
		appendRows(t, tbl, fmt.Sprintf("k%d.csv", i), day0, 2)
	}
	second, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	// The first round keeps 2 snapshots (expires k0..k2); the second, built
	// on the version before it, keeps 3 (expires k0, k1).
	fc := &faultyCatalog{Catalog: l.cat, before: func() {
		if _, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 2}); err != nil {
			panic(err)
		}
	}}
	l.cat = fc
	if _, err := second.Expire(ctx, ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 3}); err != nil {
		t.Fatal(err)
	}
	l.cat = fc.Catalog
	fresh, err := newLakeLike(t, l).LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		key := fmt.Sprintf("k%d.csv", i)
		if _, ok, err := fresh.FindLoaded(ctx, key); err != nil || !ok {
			t.Errorf("%s: loaded %v, %v: a key left the snapshots without staying in the load history", key, ok, err)
		}
	}
	if n := len(fresh.Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots left, want 2", n)
	}
}

// newLakeLike opens l's warehouse again, with a catalog client of its own.
func newLakeLike(t testing.TB, l *Lake) *Lake {
	t.Helper()
	r, ok := l.cat.(*catalog.REST)
	if !ok {
		t.Fatal("not a REST lake")
	}
	cfg, s3c := r.Settings()
	nl, err := Open(context.Background(), l.URI(), Options{S3: s3c, Catalog: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	return nl
}

// TestRESTMissingTable: a table the catalog does not have (nor its
// namespace) is ErrTableNotFound.
func TestRESTMissingTable(t *testing.T) {
	l := newRESTLake(t)
	_, err := l.LoadTable(context.Background(), TableName{Namespace: "nowhere", Name: "nothing"})
	if !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("load of a missing table: %v, want ErrTableNotFound", err)
	}
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		t.Errorf("the error %v leaks the client's sentinel", err)
	}
}

// TestRESTSchemaChange: a batch with a new column commits its schema
// change through the catalog (add-schema, set-current-schema) with its
// snapshot. Another writer's schema change landing first makes the commit
// fail its requirements (409); the retry finds the field id taken and
// leaves the batch out (ErrSchemaChanged, as without a catalog), and the
// batch prepared again on the newest schema commits.
func TestRESTSchemaChange(t *testing.T) {
	ctx := context.Background()
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	l := openRESTLake(t, srv, wh, srv.URI)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "old.csv", day0, 3)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	battery := func() arrow.RecordBatch {
		return withColumn(t, tbl, day0.Add(time.Hour), 2, "battery", arrow.PrimitiveTypes.Float64, func(i int) any { return 80.5 + float64(i) })
	}
	rec := battery()
	defer rec.Release()
	p, err := tbl.Prepare(ctx, "battery.csv", []arrow.RecordBatch{rec}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultyCatalog{Catalog: l.cat, before: func() {
		orec := withColumn(t, other, day0.Add(2*time.Hour), 2, "pressure", arrow.PrimitiveTypes.Float64, func(i int) any { return 1013.0 })
		defer orec.Release()
		prepareCommit(t, other, "pressure.csv", orec)
	}}
	l.cat = fc
	res, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{})
	l.cat = fc.Catalog
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Attempts != 2 || !errors.Is(res[0].SchemaConflict, ErrSchemaChanged) {
		t.Fatalf("commit %+v: want a lost race (409) and the batch left out on the retry", res[0])
	}
	again := battery()
	defer again.Release()
	if r := prepareCommit(t, tbl, "battery.csv", again); fmt.Sprint(r.SchemaChanges) != `[added "battery" double]` {
		t.Errorf("prepared again: %+v", r)
	}
	got := independentLoad(t, srv, wh, testName)
	var cols []string
	for _, f := range got.Metadata().CurrentSchema().Fields() {
		cols = append(cols, fmt.Sprintf("%d:%s", f.ID, f.Name))
	}
	if want := "[1:time 2:device 3:value 4:pressure 5:battery]"; fmt.Sprint(cols) != want {
		t.Errorf("columns %v, want %s", cols, want)
	}
	if n := independentRows(t, got); n != 7 {
		t.Errorf("%d rows, want 7", n)
	}
}

// TestRESTSigV4 signs the catalog's requests with the S3 client's
// credentials and region (storage.SigV4Config), as AWS Glue and S3 Tables
// want, instead of an OAuth2 token: the server's keys are accepted, a
// wrong secret is not.
func TestRESTSigV4(t *testing.T) {
	ctx := context.Background()
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	for _, secret := range []string{srv.SecretKey, "not-the-secret"} {
		client, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: srv.S3Endpoint, Region: srv.Region,
			AccessKeyID: srv.AccessKey, SecretAccessKey: secret, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(ctx, wh, Options{S3: client, Catalog: &RESTCatalog{URI: srv.URI, SigV4: true, SigV4Service: "s3tables"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.CatalogNamespaces(ctx)
		if secret == srv.SecretKey && err != nil {
			t.Fatalf("namespaces with SigV4: %v", err)
		}
		if secret != srv.SecretKey && err == nil {
			t.Fatal("namespaces with SigV4 and a wrong secret: accepted")
		}
	}
}
