package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// Environment of the long run (bench/faults.sh).
const (
	// EnvLong set to 1 runs the long version: more files, more seeds, more
	// kill -9 trials.
	EnvLong = "TIMELAKE_FAULTS_LONG"
	// EnvSeed fixes the first seed (default 1).
	EnvSeed = "TIMELAKE_FAULTS_SEED"
	// EnvFigures names a file the suite writes its figures to (JSON).
	EnvFigures = "TIMELAKE_FAULTS_FIGURES"
)

var long = os.Getenv(EnvLong) == "1"

// scale picks the short or the long figure.
func scale(short, longer int) int {
	if long {
		return longer
	}
	return short
}

func firstSeed() uint64 {
	if s, err := strconv.ParseUint(os.Getenv(EnvSeed), 10, 64); err == nil {
		return s
	}
	return 1
}

// figures are the suite's totals, printed at the end and written to
// EnvFigures.
var figures = struct {
	sync.Mutex
	Trials      int            `json:"trials"`       // scenario runs and kill -9 trials
	Runs        int            `json:"runs"`         // timelake runs (cron ticks) in them
	FailedRuns  int            `json:"failed_runs"`  // runs that ended with an error (and were run again)
	Faults      map[string]int `json:"faults"`       // injected, by kind
	Kills       int            `json:"kills"`        // kill -9 that hit a running process
	RowsChecked int            `json:"rows_checked"` // rows compared by the independent reader
	// ObjectsChecked are uploaded objects compared with their spool file.
	ObjectsChecked int      `json:"objects_checked"`
	Strays         int      `json:"strays"` // data files no snapshot references, left by killed or failed runs
	Scenarios      []string `json:"scenarios"`
}{Faults: map[string]int{}}

func TestMain(m *testing.M) {
	code := m.Run()
	figures.Lock()
	b, _ := json.MarshalIndent(&figures, "", "  ")
	figures.Unlock()
	if figures.Trials > 0 {
		fmt.Fprintf(os.Stderr, "faults: %d trials, %d runs (%d failed and were run again), %d kills, %d faults injected %v, %d rows and %d uploaded objects checked, %d files left for table maintenance\n",
			figures.Trials, figures.Runs, figures.FailedRuns, figures.Kills, sum(figures.Faults), figures.Faults,
			figures.RowsChecked, figures.ObjectsChecked, figures.Strays)
	}
	if p := os.Getenv(EnvFigures); p != "" {
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// record adds a finished trial to the figures.
func record(name string, runs, failed int, p *s3fault.Proxy, rows, strays int) {
	figures.Lock()
	figures.Trials++
	figures.Runs += runs
	figures.FailedRuns += failed
	figures.RowsChecked += rows
	figures.Strays += strays
	figures.Scenarios = append(figures.Scenarios, name)
	figures.Unlock()
	recordFaults(p)
}

// recordFaults adds the faults p injected to the figures (nothing when p
// is nil).
func recordFaults(p *s3fault.Proxy) {
	if p == nil {
		return
	}
	figures.Lock()
	defer figures.Unlock()
	for _, a := range []s3fault.Action{s3fault.Fail, s3fault.LoseResponse, s3fault.Drop} {
		if n := p.Injected(a); n > 0 {
			figures.Faults[a.String()] += n
		}
	}
}

// env is one trial's world: a landing bucket and a lake bucket on the test
// S3 server, a fault proxy in front of it, clients through the proxy (for
// timelake) and straight to the server (for the checks).
type env struct {
	srv           s3test.Server
	proxy         *s3fault.Proxy
	direct        *s3.Client
	client        *s3.Client
	landingBucket string
	lakeBucket    string
	landing       storage.Store
	lake          *lake.Lake
	table         lake.TableName
}

const warehousePrefix = "warehouse"

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	srv := s3test.FromEnv(t)
	e := &env{srv: srv, direct: srv.Client(t), table: lake.TableName{Namespace: "iot", Name: "faults"}}
	e.landingBucket, e.lakeBucket = srv.NewBucket(t), srv.NewBucket(t)
	e.proxy = s3fault.StartT(t, srv.Endpoint, seed)
	e.client = proxiedClient(t, srv, e.proxy.URL)
	e.landing = storage.NewS3Store(e.client, e.landingBucket, "", storage.S3StoreOptions{})
	var err error
	if e.lake, err = lake.Open(context.Background(), "s3://"+e.lakeBucket+"/"+warehousePrefix, lake.Options{S3: e.client, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	return e
}

// quiet drops the warnings timelake logs while faults hit it.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// proxiedClient is timelake's own S3 client (storage.NewSDKClient: its
// retry policy, attempts and retryable errors) aimed at the proxy, with
// the waits between retries cut to a few milliseconds so that storms do
// not make the suite slow.
func proxiedClient(t *testing.T, srv s3test.Server, endpoint string) *s3.Client {
	t.Helper()
	c, err := storage.NewSDKClient(context.Background(), storage.S3Config{Endpoint: endpoint, Region: srv.Region,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return s3.New(c.Options(), func(o *s3.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, 20*time.Millisecond)
	})
}

// gatewayFile is a CSV landing file whose rows carry ids unique in the
// trial (row_id), so the checks can tell a lost row from a doubled one.
func gatewayFile(file, rows int) (body []byte, ids []string) {
	var b strings.Builder
	b.WriteString("time,device_id,seq,value,row_id\n")
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(file) * time.Hour)
	for r := range rows {
		id := fmt.Sprintf("f%04d-r%03d", file, r)
		fmt.Fprintf(&b, "%s,dev-%d,%d,%d.5,%s\n", base.Add(time.Duration(r)*time.Second).Format(time.RFC3339),
			r%3, file*1000+r, r, id)
		ids = append(ids, id)
	}
	return []byte(b.String()), ids
}

// badFile is a landing file that must be quarantined (a value that is not
// a number in the numeric column).
func badFile() []byte {
	return []byte("time,device_id,seq,value,row_id\n2026-01-05T00:00:00Z,dev-0,1,warm,bad-r000\n")
}

// dropFiles puts n gateway files (two gateways) into the landing bucket
// straight to the server and returns the row ids they hold, sorted.
func (e *env) dropFiles(t *testing.T, prefix string, first, n, rows int) []string {
	t.Helper()
	var ids []string
	for i := first; i < first+n; i++ {
		body, fileIDs := gatewayFile(i, rows)
		e.putDirect(t, e.landingBucket, fmt.Sprintf("%sgw-%d/%04d.csv", prefix, i%2, i), body)
		ids = append(ids, fileIDs...)
	}
	slices.Sort(ids)
	return ids
}

func (e *env) putDirect(t *testing.T, bucket, key string, body []byte) {
	t.Helper()
	if _, err := e.direct.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader(string(body))}); err != nil {
		t.Fatal(err)
	}
}

// waitingFiles lists the landing files still to load (outside _timelake/
// and _rejected/).
func (e *env) waitingFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, k := range listKeys(t, e.direct, e.landingBucket, "") {
		if !strings.HasPrefix(k, "_timelake/") && !strings.HasPrefix(k, "_rejected/") {
			out = append(out, k)
		}
	}
	return out
}

// read reads the table with the suite's own reader.
func (e *env) read(t *testing.T) tableState {
	t.Helper()
	return readTable(t, e.direct, e.lakeBucket, warehousePrefix, e.table.Namespace, e.table.Name)
}

// checkRows compares the table's rows with want: none lost, none twice.
func checkRows(t *testing.T, st tableState, want []string) {
	t.Helper()
	if slices.Equal(st.rowIDs, want) {
		return
	}
	seen := map[string]int{}
	for _, id := range st.rowIDs {
		seen[id]++
	}
	var lost, twice []string
	for _, id := range want {
		if seen[id] == 0 {
			lost = append(lost, id)
		}
	}
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, id)
		}
	}
	t.Fatalf("table rows differ from the files: %d rows, want %d; lost %d %v; twice %d %v",
		len(st.rowIDs), len(want), len(lost), head(lost), len(twice), head(twice))
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
