package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

func init() { lake.CommitRetryBase = time.Millisecond }

func TestGatewayOf(t *testing.T) {
	for _, tc := range []struct {
		key   string
		depth int
		want  string
	}{
		{"gateway-7/20260105T1000.csv", 1, "gateway-7"},
		{"gateway-7/20260105T1000.csv", 0, "gateway-7"},
		{"site-3/gateway-7/x.csv", 1, "site-3"},
		{"site-3/gateway-7/x.csv", 2, "site-3/gateway-7"},
		{"site-3/gateway-7/x.csv", 5, "site-3/gateway-7"},
		{"x.csv", 1, ""},
		{"x.csv", 0, ""},
		// The default: the folder that holds the file.
		{"site-3/gateway-7/x.csv", 0, "site-3/gateway-7"},
		{"gateway-7/2026/01/05/x.csv", 0, "gateway-7/2026/01/05"},
		{"gateway-7/2026/01/05/x.csv", 1, "gateway-7"},
	} {
		if got := GatewayOf(tc.key, tc.depth); got != tc.want {
			t.Errorf("GatewayOf(%q, %d) = %q, want %q", tc.key, tc.depth, got, tc.want)
		}
	}
}

func TestReasonClass(t *testing.T) {
	a := ReasonClass("gw-1/a.csv", `gw-1/a.csv: row 3 (line 4), column "temp": "abc" is not a number`, "abc")
	b := ReasonClass("gw-2/b.csv", `gw-2/b.csv: row 17 (line 18), column "temp": "x1" is not a number`, "x1")
	if a != b || a != `column "temp": "…" is not a number` {
		t.Errorf("classes %q and %q, want one without key, row and value", a, b)
	}
	if c := ReasonClass("k", "k: line 2: expected 5 fields, got 4", ""); c != "expected N fields, got N" {
		t.Errorf("class %q", c)
	}
}

// stores is a landing store and a warehouse: a local folder each, or
// buckets of the test S3 server.
type stores struct {
	landing storage.Store
	lake    *lake.Lake
	// warehouse is the lake's store, to delete a file by hand.
	warehouse storage.Store
	// local: file times can be set (os.Chtimes); on S3 the audit's clock
	// moves instead.
	local string
}

func forEachStore(t *testing.T, test func(t *testing.T, s stores)) {
	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		st, err := storage.NewLocalStore(filepath.Join(dir, "landing"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := lake.Open(context.Background(), filepath.Join(dir, "lake"), lake.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wh, err := storage.NewLocalStore(filepath.Join(dir, "lake"))
		if err != nil {
			t.Fatal(err)
		}
		test(t, stores{landing: st, lake: l, warehouse: wh, local: filepath.Join(dir, "landing")})
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.FromEnv(t)
		client := srv.Client(t)
		lakeBucket := srv.NewBucket(t)
		l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
		if err != nil {
			t.Fatal(err)
		}
		test(t, stores{landing: storage.NewS3Store(client, srv.NewBucket(t), "", storage.S3StoreOptions{}), lake: l,
			warehouse: storage.NewS3Store(client, lakeBucket, "warehouse", storage.S3StoreOptions{})})
	})
}

func (s stores) put(t *testing.T, key, body string) storage.ObjectInfo {
	t.Helper()
	info, err := s.landing.Put(context.Background(), key, strings.NewReader(body), storage.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var tableName = lake.TableName{Namespace: "iot", Name: "readings"}

func newTable(t testing.TB, l *lake.Lake) *lake.Table {
	t.Helper()
	tbl, err := l.CreateTable(context.Background(), tableName, schema, lake.CreateSpec{TimeColumn: "time", Partition: lake.Day})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// load appends one row at rowTime as the file key with the landing
// object's facts (size, SHA-256 of body, modification time, how it came).
func load(t testing.TB, tbl *lake.Table, key, body string, rowTime, landed time.Time, by string) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(rowTime.UnixMicro()))
	b.Field(1).(*array.StringBuilder).Append("d1")
	rec := b.NewRecordBatch()
	defer rec.Release()
	summary := map[string]string{lake.SummarySourceSize: itoa(len(body)), lake.SummarySourceSHA256: sha(body),
		lake.SummarySourceModified: landed.UTC().Format(time.RFC3339Nano)}
	if by != "" {
		summary[lake.SummaryLoadedBy] = by
	}
	if _, err := tbl.Append(context.Background(), key, []arrow.RecordBatch{rec}, lake.AppendOptions{Summary: summary}); err != nil {
		t.Fatal(err)
	}
}

// expireAll moves every snapshot's key but the newest into the load
// history.
func expireAll(t *testing.T, tbl *lake.Table) {
	t.Helper()
	time.Sleep(2 * time.Millisecond)
	if _, err := tbl.Expire(context.Background(), lake.ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
}

func quarantine(t *testing.T, s stores, key, reason, value string, at time.Time) {
	t.Helper()
	s.put(t, key, "bad")
	rep := landing.Report{Reason: reason, Value: value, At: at, Kind: landing.KindSetting}
	if _, err := (&landing.Bucket{Store: s.landing}).Quarantine(context.Background(), key, rep); err != nil {
		t.Fatal(err)
	}
}

// age sets a local file's modification time.
func (s stores) age(t *testing.T, key string, at time.Time) {
	t.Helper()
	if s.local == "" {
		return
	}
	if err := os.Chtimes(filepath.Join(s.local, filepath.FromSlash(key)), at, at); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func sha(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}
