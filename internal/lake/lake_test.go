package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

func init() { CommitRetryBase = time.Millisecond }

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

var testName = TableName{Namespace: "iot", Name: "readings"}

// rows builds one batch of the table's schema: n rows starting at start,
// one minute apart, devices cycling through d0..d2 in reverse order.
func rows(t testing.TB, sc *arrow.Schema, start time.Time, n int, nullTime bool) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := 0; i < n; i++ {
		ts := b.Field(0).(*array.TimestampBuilder)
		if nullTime && i == n-1 {
			ts.AppendNull()
		} else {
			ts.Append(arrow.Timestamp(start.Add(time.Duration(n-i) * time.Minute).UnixMicro()))
		}
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("d%d", 2-i%3))
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	return b.NewRecordBatch()
}

func newLocalLake(t testing.TB) *Lake {
	t.Helper()
	l, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newS3Lake(t testing.TB) *Lake {
	t.Helper()
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	bucket := srv.NewBucket(t)
	l, err := Open(context.Background(), "s3://"+bucket+"/warehouse", Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// forEachLake runs test on a local warehouse and on one in the test S3
// server.
func forEachLake(t *testing.T, test func(t *testing.T, l *Lake)) {
	for _, tc := range []struct {
		name string
		open func(testing.TB) *Lake
	}{{"local", newLocalLake}, {"s3", newS3Lake}} {
		t.Run(tc.name, func(t *testing.T) { test(t, tc.open(t)) })
	}
}

// forS3AndREST runs test on a warehouse on the S3 server and on one whose
// versions live in the test REST catalog (rest), as subtests "files" and
// "rest".
func forS3AndREST(t *testing.T, test func(t *testing.T, l *Lake, rest bool)) {
	for _, tc := range []struct {
		name string
		open func(testing.TB) *Lake
	}{{"files", newS3Lake}, {"rest", newRESTLake}} {
		t.Run(tc.name, func(t *testing.T) { test(t, tc.open(t), tc.name == "rest") })
	}
}

// forEachCatalog runs test on a catalog-free local warehouse and on one
// whose versions live in the test REST catalog: the commit protocol's
// suite, which both catalogs must pass alike.
func forEachCatalog(t *testing.T, test func(t *testing.T, l *Lake)) {
	for _, tc := range []struct {
		name string
		open func(testing.TB) *Lake
	}{{"files", newLocalLake}, {"rest", newRESTLake}} {
		t.Run(tc.name, func(t *testing.T) { test(t, tc.open(t)) })
	}
}

func createTestTable(t testing.TB, l *Lake) *Table {
	t.Helper()
	tbl, err := l.CreateTable(context.Background(), testName, testSchema,
		CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}, Partition: Day})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func appendRows(t testing.TB, tbl *Table, batch string, start time.Time, n int) AppendResult {
	t.Helper()
	rec := rows(t, tbl.ArrowSchema(), start, n, false)
	defer rec.Release()
	res, err := tbl.Append(context.Background(), batch, []arrow.RecordBatch{rec}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func scanCount(t testing.TB, tbl *Table) int64 {
	t.Helper()
	at, err := tbl.Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

var day0 = time.Date(2026, 1, 5, 23, 0, 0, 0, time.UTC)

func TestAppendIdempotentByBatchID(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		r1 := appendRows(t, tbl, "gw-1/a.csv", day0, 120) // crosses midnight: two partitions
		if r1.Duplicate || r1.Rows != 120 || r1.DataFiles != 2 || r1.Bytes <= 0 || r1.Version != 2 {
			t.Fatalf("first append: %+v", r1)
		}
		r2 := appendRows(t, tbl, "gw-1/a.csv", day0, 120)
		if !r2.Duplicate || r2.Rows != 0 || r2.SnapshotID != r1.SnapshotID || r2.DataFiles != 0 {
			t.Fatalf("second append of the same batch: %+v", r2)
		}
		// A fresh handle with stale metadata must also see the duplicate.
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		appendRows(t, tbl, "gw-2/b.csv", day0, 10)
		r3 := appendRows(t, other, "gw-1/a.csv", day0, 120)
		if !r3.Duplicate {
			t.Fatalf("stale handle committed a duplicate: %+v", r3)
		}
		if got := scanCount(t, tbl); got != 130 {
			t.Fatalf("rows = %d, want 130", got)
		}
		b, ok := tbl.FindBatch("gw-1/a.csv")
		if !ok || b.Rows != 120 || b.SnapshotID != r1.SnapshotID {
			t.Fatalf("FindBatch = %+v, %v", b, ok)
		}
		if _, ok := tbl.FindBatch("gw-9/none.csv"); ok {
			t.Fatal("unknown batch found")
		}
		hint, _, err := storage.ReadAll(ctx, l.store, catalog.MetadataPrefix(testName)+"version-hint.text")
		if err != nil || string(hint) != "3" {
			t.Fatalf("version hint = %q, %v; want 3", hint, err)
		}
		assertNoOrphans(t, l, tbl)
	})
}

func TestAppendRejectsNullInRequiredColumn(t *testing.T) {
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	rec := rows(t, tbl.ArrowSchema(), day0, 5, true)
	defer rec.Release()
	_, err := tbl.Append(context.Background(), "bad", []arrow.RecordBatch{rec}, AppendOptions{})
	if !errors.Is(err, ErrRequiredNull) || !strings.Contains(err.Error(), `"time"`) {
		t.Fatalf("err = %v, want ErrRequiredNull naming the time column", err)
	}
	if tbl.Metadata().CurrentSnapshot() != nil {
		t.Fatal("a snapshot was committed")
	}
}

func TestDataFilesSortedBySeriesThenTime(t *testing.T) {
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "b", day0.Add(-12*time.Hour), 30) // one partition
	at, err := tbl.Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, -1)
	defer tr.Release()
	var keys []string
	for tr.Next() {
		r := tr.RecordBatch()
		ts := r.Column(0).(*array.Timestamp)
		dev := r.Column(1).(*array.String)
		for i := 0; i < int(r.NumRows()); i++ {
			keys = append(keys, fmt.Sprintf("%s|%020d", dev.Value(i), ts.Value(i)))
		}
	}
	if len(keys) != 30 || !sort.StringsAreSorted(keys) {
		t.Fatalf("rows not sorted by (device, time): %v", keys)
	}
	so := tbl.Metadata().SortOrder()
	if so.Len() != 2 {
		t.Fatalf("sort order = %v", so)
	}
	spec := tbl.Metadata().PartitionSpec()
	if got := spec.Field(0).Name; got != "time_day" {
		t.Fatalf("partition field = %q", got)
	}
}

func TestConcurrentWritersLinearHistory(t *testing.T) {
	forEachLake(t, concurrentWritersLinearHistory)
	t.Run("rest", func(t *testing.T) { concurrentWritersLinearHistory(t, newRESTLake(t)) })
}

func concurrentWritersLinearHistory(t *testing.T, l *Lake) {
	{
		ctx := context.Background()
		createTestTable(t, l)
		const writers, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tbl, err := l.LoadTable(ctx, testName)
				if err != nil {
					errs <- err
					return
				}
				for i := range each {
					rec := rows(t, tbl.ArrowSchema(), day0, 10, false)
					_, err := tbl.Append(ctx, fmt.Sprintf("w%d/%d", w, i), []arrow.RecordBatch{rec}, AppendOptions{})
					rec.Release()
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		tbl, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		anc := ancestry(tbl.Metadata())
		if len(anc) != writers*each || len(tbl.Metadata().Snapshots()) != writers*each {
			t.Fatalf("ancestry %d, snapshots %d, want %d", len(anc), len(tbl.Metadata().Snapshots()), writers*each)
		}
		seen := map[string]bool{}
		for _, b := range tbl.Batches() {
			if seen[b.BatchID] {
				t.Fatalf("batch %s twice", b.BatchID)
			}
			seen[b.BatchID] = true
		}
		if len(seen) != writers*each {
			t.Fatalf("%d batches", len(seen))
		}
		if got := scanCount(t, tbl); got != writers*each*10 {
			t.Fatalf("rows = %d", got)
		}
		assertNoOrphans(t, l, tbl)
	}
}

// lostResponseStore performs the first conditional metadata write it sees
// and then reports 412, like an SDK retry of a PUT whose response was lost.
type lostResponseStore struct {
	storage.Store
	mu   sync.Mutex
	done bool
}

func (s *lostResponseStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, body, opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && opts.IfAbsent && strings.HasSuffix(key, "v2.metadata.json") && !s.done {
		s.done = true
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", key, storage.ErrPreconditionFailed)
	}
	return info, err
}

// useStore has l read and commit through s, the metadata-file catalog
// included.
func useStore(l *Lake, s storage.Store) {
	l.store = s
	if _, ok := l.cat.(*catalog.Files); ok {
		l.cat = catalog.NewFiles(l.warehouse())
	}
}

func TestLostCommitResponseIsNotADuplicate(t *testing.T) {
	l := newLocalLake(t)
	createTestTable(t, l)
	useStore(l, &lostResponseStore{Store: l.store})
	tbl, err := l.LoadTable(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	res := appendRows(t, tbl, "gw/x.csv", day0, 7)
	if res.Duplicate || res.Rows != 7 || res.Attempts != 2 {
		t.Fatalf("result %+v: want a success on the second attempt", res)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
	if got := scanCount(t, tbl); got != 7 {
		t.Fatalf("rows = %d", got)
	}
	assertNoOrphans(t, l, tbl)
}

func TestRefusesNewerTimelakeFormat(t *testing.T) {
	l := newLocalLake(t)
	ctx := context.Background()
	_, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{TimeColumn: "time",
		Properties: map[string]string{PropFormatVersion: "2.0.0"}})
	if !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("err = %v, want ErrUnsupportedFormat", err)
	}
}

func TestParseTableName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"iot.readings", "iot.readings", true},
		{"readings", "default.readings", true},
		{"a-b.c_d", "a-b.c_d", true},
		{"a.b.c", "", false},
		{"../x", "", false},
		{"iot.", "", false},
		{"iot.read ings", "", false},
	} {
		n, err := ParseTableName(tc.in)
		if (err == nil) != tc.ok || (tc.ok && n.String() != tc.want) {
			t.Errorf("ParseTableName(%q) = %v, %v", tc.in, n, err)
		}
	}
}

// assertNoOrphans checks that every file under the table's data/ and
// metadata/ is referenced by the current metadata (or is a metadata file).
func assertNoOrphans(t testing.TB, l *Lake, tbl *Table) {
	t.Helper()
	ctx := context.Background()
	fs, err := l.fsF(ctx)
	if err != nil {
		t.Fatal(err)
	}
	referenced := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		referenced[s.ManifestList] = true
		mfs, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mfs {
			referenced[m.FilePath()] = true
		}
	}
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		referenced[task.File.FilePath()] = true
	}
	prefix := testName.Namespace + "/" + testName.Name + "/"
	segs, err := segmentsOfVersions(ctx, l.store, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range segs {
		referenced[tbl.Location()+"/"+l.cat.OwnFolder()+name] = true
	}
	err = l.store.List(ctx, prefix, func(o storage.ObjectInfo) error {
		rel := strings.TrimPrefix(o.Key, prefix)
		if strings.HasPrefix(rel, "metadata/v") || rel == "metadata/version-hint.text" || rel == l.cat.OwnFolder()+maintenanceStateName {
			return nil
		}
		uri := tbl.Location() + "/" + rel
		if !referenced[uri] {
			t.Errorf("orphan file %s", uri)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCommitSeveralBatchesInOneMetadataWrite(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		// Another writer commits batch b2 first.
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		appendRows(t, other, "b2", day0, 3)

		var ps []*Prepared
		for i := range 5 {
			rec := rows(t, tbl.ArrowSchema(), day0.Add(time.Duration(i)*time.Hour), 10, false)
			p, err := tbl.Prepare(ctx, fmt.Sprintf("b%d", i), []arrow.RecordBatch{rec}, map[string]string{SummarySourceSize: "10"}, 0)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		res, err := tbl.Commit(ctx, ps, CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.BatchID != fmt.Sprintf("b%d", i) || r.Duplicate != (i == 2) {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
		// v1 create, v2 the other writer, v3 our four snapshots at once.
		if tbl.Version() != 3 || len(ancestry(tbl.Metadata())) != 5 {
			t.Fatalf("version %d, ancestry %d", tbl.Version(), len(ancestry(tbl.Metadata())))
		}
		if got := scanCount(t, tbl); got != 43 {
			t.Fatalf("rows = %d, want 43", got)
		}
		for _, id := range []string{"b0", "b1", "b3", "b4"} {
			b, ok := tbl.FindBatch(id)
			if !ok || b.Rows != 10 || b.Summary[SummarySourceSize] != "10" {
				t.Fatalf("batch %s: %+v %v", id, b, ok)
			}
		}
		assertNoOrphans(t, l, tbl)
	})
}

// TestBatchWithoutRows: a batch with no rows is recorded as a snapshot that
// carries its batch id and adds no data file, alone or among batches with
// rows in one commit, with manifest merging on and off; a second append of
// it is a duplicate.
func TestBatchWithoutRows(t *testing.T) {
	for _, merge := range []string{"true", "false"} {
		t.Run("merge="+merge, func(t *testing.T) {
			forEachLake(t, func(t *testing.T, l *Lake) {
				ctx := context.Background()
				tbl, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"},
					Partition: Day, Properties: map[string]string{table.ManifestMergeEnabledKey: merge}})
				if err != nil {
					t.Fatal(err)
				}
				// First on an empty table: a snapshot without manifests.
				r, err := tbl.Append(ctx, "gw/empty-0.csv", nil, AppendOptions{})
				if err != nil || r.Duplicate || r.Rows != 0 || r.DataFiles != 0 || r.SnapshotID == 0 {
					t.Fatalf("empty first batch: %+v, %v", r, err)
				}
				// Then among batches with rows, in one commit.
				var ps []*Prepared
				for i, n := range []int{10, 0, 5, 0} {
					var recs []arrow.RecordBatch
					if n > 0 {
						rec := rows(t, tbl.ArrowSchema(), day0.Add(time.Duration(i)*time.Hour), n, false)
						defer rec.Release()
						recs = append(recs, rec)
					}
					p, err := tbl.Prepare(ctx, fmt.Sprintf("gw/%d.csv", i), recs, nil, 0)
					if err != nil {
						t.Fatal(err)
					}
					ps = append(ps, p)
				}
				res, err := tbl.Commit(ctx, ps, CommitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range []int64{10, 0, 5, 0} {
					if res[i].Rows != want || res[i].Duplicate {
						t.Fatalf("result %d: %+v", i, res[i])
					}
					b, ok := tbl.FindBatch(fmt.Sprintf("gw/%d.csv", i))
					if !ok || b.Rows != want {
						t.Fatalf("batch %d: %+v, %v", i, b, ok)
					}
				}
				if got := scanCount(t, tbl); got != 15 {
					t.Fatalf("rows = %d, want 15", got)
				}
				if len(ancestry(tbl.Metadata())) != 5 {
					t.Fatalf("ancestry %d, want 5 snapshots", len(ancestry(tbl.Metadata())))
				}
				again, err := tbl.Append(ctx, "gw/empty-0.csv", nil, AppendOptions{})
				if err != nil || !again.Duplicate {
					t.Fatalf("second append of an empty batch: %+v, %v", again, err)
				}
				if err := checkSnapshots(tbl.Metadata()); err != nil {
					t.Fatal(err)
				}
				assertNoOrphans(t, l, tbl)
			})
		})
	}
}
