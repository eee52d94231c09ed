package faults

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/catalogtest"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// catalogEnv is the world of a trial whose table lives in the test REST
// catalog (SeaweedFS): a table bucket of its own as the warehouse, a plain
// bucket of the same S3 server as the landing bucket, and a fault proxy in
// front of the catalog's port.
type catalogEnv struct {
	srv       catalogtest.Server
	proxy     *s3fault.Proxy
	direct    *s3.Client
	landing   string
	warehouse string // s3://<table bucket>
	table     lake.TableName
}

func newCatalogEnv(t *testing.T, seed uint64) *catalogEnv {
	t.Helper()
	srv := catalogtest.FromEnv(t)
	e := &catalogEnv{srv: srv, direct: srv.S3Client(), warehouse: srv.NewWarehouse(t),
		table: lake.TableName{Namespace: "iot", Name: "faults"}, landing: s3test.UniqueBucketName(t.Name())}
	if _, err := e.direct.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(e.landing)}); err != nil {
		t.Fatal(err)
	}
	e.proxy = s3fault.StartT(t, srv.URI, seed)
	return e
}

// ingestCommand is `timelake ingest` as cron runs it, with its catalog at
// catalogURI (the proxy's or the server's).
func (e *catalogEnv) ingestCommand(t *testing.T, catalogURI string, args ...string) *exec.Cmd {
	cmd := exec.Command(timelakeBinary(t), append([]string{"ingest", "--parallel", "2", "--files-per-commit", "2"}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"AWS_ENDPOINT_URL_S3=" + e.srv.S3Endpoint,
		"AWS_REGION=" + e.srv.Region,
		"AWS_ACCESS_KEY_ID=" + e.srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + e.srv.SecretKey,
		"LANDING_BUCKET=" + e.landing,
		"TIMELAKE_WAREHOUSE=" + e.warehouse,
		"TIMELAKE_TABLE=" + e.table.String(),
		"TIMELAKE_CATALOG=rest",
		"TIMELAKE_CATALOG_URI=" + catalogURI,
		"TIMELAKE_CATALOG_CREDENTIAL=" + e.srv.Credential(),
	}
	return cmd
}

// dropFiles puts n gateway files (gateways gw-0 and gw-1) below prefix into
// the landing bucket and returns the row ids they hold, sorted.
func (e *catalogEnv) dropFiles(t *testing.T, first, n, rows int) []string {
	t.Helper()
	var ids []string
	for i := first; i < first+n; i++ {
		body, fileIDs := gatewayFile(i, rows)
		if _, err := e.direct.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(e.landing),
			Key: aws.String(fmt.Sprintf("gw-%d/%04d.csv", i%2, i)), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fileIDs...)
	}
	slices.Sort(ids)
	return ids
}

func (e *catalogEnv) waitingFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, k := range listKeys(t, e.direct, e.landing, "") {
		if !strings.HasPrefix(k, "_timelake/") && !strings.HasPrefix(k, "_rejected/") {
			out = append(out, k)
		}
	}
	return out
}

// read reads the table with the suite's reader, from the metadata file the
// catalog names.
func (e *catalogEnv) read(t *testing.T) tableState {
	t.Helper()
	return readCatalogTable(t, e.direct, e.srv, e.warehouse, e.table)
}

// runUntilDone runs ingest (a cron tick each) until no file is left, at
// most max runs; it returns the runs and how many failed.
func (e *catalogEnv) runUntilDone(t *testing.T, catalogURI string, max int) (runs, failed int) {
	t.Helper()
	for ; runs < max && len(e.waitingFiles(t)) > 0; runs++ {
		if code, log := exitCode(t, e.ingestCommand(t, catalogURI)); code != 0 {
			failed++
			t.Logf("run %d exited %d (cron runs it again):\n%s", runs+1, code, lastLines(log, 5))
		}
	}
	if left := e.waitingFiles(t); len(left) != 0 {
		t.Fatalf("files left after %d runs: %v", runs, head(left))
	}
	return runs, failed
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// restCommits selects the commits of tables (updateTable).
func restCommits(r s3fault.Rule) s3fault.Rule {
	r.Method, r.Bucket, r.Key = http.MethodPost, "v1", "*/namespaces/*/tables/*"
	return r
}

// TestCatalogFaults: ingest through a REST catalog behind the fault proxy
// (commit responses lost after the catalog committed, 409 storms, 503s and
// delays of every catalog request) loads every row of every file once, as
// the suite's reader counts from the metadata file the catalog names;
// files re-sent under loaded keys load nothing.
func TestCatalogFaults(t *testing.T) {
	n := scale(12, 40)
	for _, f := range []struct {
		name  string
		rules []s3fault.Rule
		// lost: the commits landed, so no run may fail
		lost bool
	}{
		{"lost commit responses", []s3fault.Rule{restCommits(s3fault.Rule{Name: "lost", Action: s3fault.LoseResponse, Prob: 0.5, Times: n})}, true},
		{"409 storm", []s3fault.Rule{restCommits(s3fault.Rule{Name: "409", Action: s3fault.Fail, Status: http.StatusConflict,
			Code: "CommitFailedException", Prob: 0.6, Times: n})}, false},
		{"503 and delays", []s3fault.Rule{
			restCommits(s3fault.Rule{Name: "503", Action: s3fault.Fail, Status: http.StatusServiceUnavailable, Code: "ServiceUnavailableException", Prob: 0.3, Times: n}),
			{Name: "delay", Method: http.MethodGet, Action: s3fault.Forward, Delay: 30 * time.Millisecond, Prob: 0.3, Times: n},
		}, false},
	} {
		t.Run(f.name, func(t *testing.T) {
			e := newCatalogEnv(t, firstSeed())
			want := e.dropFiles(t, 0, scale(10, 30), 15)
			for _, r := range f.rules {
				e.proxy.Add(r)
			}
			runs, failed := e.runUntilDone(t, e.proxy.URL, 8)
			if f.lost && failed > 0 {
				t.Errorf("%d runs failed although every lost commit had landed", failed)
			}
			if e.proxy.Injected(s3fault.Forward) == 0 {
				t.Fatal("no fault was injected")
			}
			st := e.read(t)
			checkRows(t, st, want)

			// Re-sent keys load nothing.
			e.dropFiles(t, 0, 4, 15)
			if code, log := exitCode(t, e.ingestCommand(t, e.proxy.URL)); code != 0 {
				t.Fatalf("run of re-sent files: exit %d:\n%s", code, log)
			}
			after := e.read(t)
			checkRows(t, after, want)
			if after.snapshots != st.snapshots {
				t.Errorf("re-sent files made %d snapshots more", after.snapshots-st.snapshots)
			}
			record("catalog: "+f.name, runs+1, failed, e.proxy, len(after.rowIDs), len(after.strays))
		})
	}
}

// TestCatalogKill9: ingest through the REST catalog is killed with SIGKILL
// at a random moment, then cron's next run loads what is left: every row
// once.
func TestCatalogKill9(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a dead holder is recognised from /proc")
	}
	seed := firstSeed()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	e := newCatalogEnv(t, seed)
	var want []string
	typical := time.Second
	for trial := range scale(3, 20) {
		want = append(want, e.dropFiles(t, trial*100, scale(8, 12), 15)...)
		slices.Sort(want)
		killed, after, out := runKilled(t, e.ingestCommand(t, e.srv.URI), rng, typical)
		start := time.Now()
		code, log := exitCode(t, e.ingestCommand(t, e.srv.URI))
		typical = max(time.Since(start), 50*time.Millisecond)
		if code != 0 {
			t.Fatalf("trial %d: the run after the kill (at %s) exited %d:\n%s\nkilled run:\n%s", trial, after, code, log, out)
		}
		if left := e.waitingFiles(t); len(left) != 0 {
			t.Fatalf("trial %d: files left after the next run: %v", trial, left)
		}
		st := e.read(t)
		checkRows(t, st, want)
		figures.Lock()
		if killed {
			figures.Kills++
		}
		figures.Unlock()
		record("catalog: kill -9", 2, 0, nil, len(st.rowIDs), 0)
	}
}

// TestCatalogConcurrentWriters: two pollers on disjoint prefixes commit
// to the same table through the catalog at once; each one's lost races
// are retried on the other's commits, never over them: every row of both
// once.
func TestCatalogConcurrentWriters(t *testing.T) {
	e := newCatalogEnv(t, firstSeed())
	// The table exists before they race (its creation is not the race).
	first := e.dropFiles(t, 0, 2, 5)
	if code, log := exitCode(t, e.ingestCommand(t, e.srv.URI)); code != 0 {
		t.Fatalf("first run: exit %d:\n%s", code, log)
	}
	want := append(first, e.dropFiles(t, 100, scale(16, 40), 10)...)
	slices.Sort(want)
	var wg sync.WaitGroup
	logs := make([]string, 2)
	codes := make([]int, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One file per commit: as many commits, and races, as files.
			codes[g], logs[g] = exitCode(t, e.ingestCommand(t, e.srv.URI, "--prefix", fmt.Sprintf("gw-%d/", g), "--files-per-commit", "1"))
		}()
	}
	wg.Wait()
	for g := range 2 {
		if codes[g] != 0 {
			t.Fatalf("poller of gw-%d/: exit %d:\n%s", g, codes[g], logs[g])
		}
	}
	if left := e.waitingFiles(t); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
	st := e.read(t)
	checkRows(t, st, want)
	record("catalog: two pollers at once", 3, 0, nil, len(st.rowIDs), len(st.strays))
}
