package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/upload"
)

// operation is a timelake job the suite runs under faults: one run per
// cron tick until nothing is left to do, then the invariants. Adding a job
// (table maintenance) is one more entry in operations with its faults.
type operation struct {
	name string
	// setup puts the work in place, straight to the server.
	setup func(t *testing.T, e *env) *work
	// run is one run through the proxy.
	run func(ctx context.Context, t *testing.T, e *env, w *work) error
	// done reports whether nothing is left to do.
	done func(t *testing.T, e *env, w *work) bool
	// check verifies the invariants after the last run and returns the
	// rows it compared and the stray files it found.
	check func(t *testing.T, e *env, w *work) (rows, strays int)
	// faults are the faults that apply to the job.
	faults func(e *env) []fault
}

// work is what setup prepared and the checks need.
type work struct {
	want   []string          // row ids the table must hold
	spool  string            // upload: the spool folder
	files  map[string][]byte // upload: spool file name -> content
	holder landing.Holder    // ingest: the runs' lease holder
	done   bool              // maintenance: a round finished with nothing pending
}

// fault is a set of proxy rules. lostResponse faults must not fail any
// run: the write landed, and timelake must find that out.
type fault struct {
	name         string
	rules        []s3fault.Rule
	lostResponse bool
}

// lose is a lost-response fault on the requests rule selects.
func lose(name string, times int, r s3fault.Rule) fault {
	r.Name, r.Action, r.Times = name, s3fault.LoseResponse, times
	return fault{name: "lost response: " + name, rules: []s3fault.Rule{r}, lostResponse: true}
}

// slowed adds a delay rule to f, so that a run lasts long enough for what
// f selects to happen (a lease renewal comes a third of the TTL after the
// lease was taken).
func slowed(f fault, delay s3fault.Rule) fault {
	delay.Name, delay.Action = "slow", s3fault.Forward
	f.rules = append(f.rules, delay)
	return f
}

// storms fail a share of every request to both buckets with 503 SlowDown
// or 500 InternalError, or delay them.
func storms(e *env) []fault {
	n := scale(60, 300)
	// Each storm acts on the job's first request for certain, then at
	// random: a job of a few requests (an upload of four files) would
	// otherwise meet no fault at all under some seeds.
	first := func(r s3fault.Rule) s3fault.Rule { r.Name, r.Prob, r.Times = r.Name+" (first)", 0, 1; return r }
	slowdown := s3fault.Rule{Name: "slowdown", Action: s3fault.Fail, Status: http.StatusServiceUnavailable, Code: "SlowDown", Prob: 0.25, Times: n}
	fivexx := s3fault.Rule{Name: "5xx", Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError", Prob: 0.2, Times: n}
	drop := s3fault.Rule{Name: "drop", Action: s3fault.Drop, Prob: 0.1, Times: n / 2}
	return []fault{
		{name: "SlowDown storm", rules: []s3fault.Rule{first(slowdown), slowdown}},
		{name: "5xx storm", rules: []s3fault.Rule{first(fivexx), fivexx}},
		{name: "dropped connections and delays", rules: []s3fault.Rule{
			first(drop), drop,
			{Name: "delay", Action: s3fault.Forward, Delay: 30 * time.Millisecond, Prob: 0.3, Times: n},
		}},
	}
}

var operations = []operation{ingestOp, uploadOp, expireOp, maintainOp}

// TestFaults runs every operation under each of its faults, for a few
// seeds in the long version.
func TestFaults(t *testing.T) {
	seeds := scale(1, 5)
	for _, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			probe := newEnvNoProxyRules(t)
			for _, f := range op.faults(probe) {
				t.Run(f.name, func(t *testing.T) {
					for i := range seeds {
						runScenario(t, op, f, firstSeed()+uint64(i))
					}
				})
			}
		})
	}
}

// newEnvNoProxyRules is an env used only to name buckets in fault rules;
// runScenario rebinds the rules to its own env.
func newEnvNoProxyRules(*testing.T) *env {
	return &env{landingBucket: landingMark, lakeBucket: lakeMark}
}

const landingMark, lakeMark = "<landing>", "<lake>"

func runScenario(t *testing.T, op operation, f fault, seed uint64) {
	ctx := context.Background()
	e := newEnv(t, seed)
	w := op.setup(t, e)
	for _, r := range f.rules {
		switch r.Bucket {
		case landingMark:
			r.Bucket = e.landingBucket
		case lakeMark:
			r.Bucket = e.lakeBucket
		}
		e.proxy.Add(r)
	}
	maxRuns := 8
	runs, failed := 0, 0
	for ; runs < maxRuns && !op.done(t, e, w); runs++ {
		err := op.run(ctx, t, e, w)
		if errors.Is(err, landing.ErrLeaseHeld) || errors.Is(err, ingest.ErrLeaseLost) {
			t.Fatalf("run %d was blocked by the lease of an earlier run of this poller: %v", runs+1, err)
		}
		if err != nil {
			if f.lostResponse {
				t.Fatalf("run %d failed on a lost response (the write landed; timelake must find out): %v", runs+1, err)
			}
			failed++
			t.Logf("run %d: %v", runs+1, err)
		}
	}
	if !op.done(t, e, w) {
		t.Fatalf("work left after %d runs", runs)
	}
	injected := e.proxy.Injected(s3fault.Forward)
	if injected == 0 && e.proxy.Counts("delay").Injected == 0 {
		t.Fatalf("no fault was injected: the scenario tested nothing")
	}
	rows, strays := op.check(t, e, w)
	if f.lostResponse && strays > 0 {
		// Every outcome became known: what a losing attempt wrote is
		// removed by the run itself (storms and kills may leave files for
		// table maintenance).
		t.Fatalf("%d files left behind that nothing references", strays)
	}
	t.Logf("seed %d: %d runs (%d failed), %d faults injected, %d rows checked, %d stray files", seed, runs, failed, injected, rows, strays)
	record(op.name+"/"+f.name, runs, failed, e.proxy, rows, strays)
}

// deadHolder makes each in-process ingest run look like a cron run whose
// process has ended when the next one starts (the PID of a process that
// exited, on this host): a lease left behind by a failed run is then
// taken over at once, as it is for a process that died. The kill -9 test
// does this with real processes.
func deadHolder(t *testing.T) landing.Holder {
	t.Helper()
	h := landing.NewHolder()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	h.PID, h.Start = cmd.Process.Pid, 0
	return h
}

var ingestOp = operation{
	name: "ingest",
	setup: func(t *testing.T, e *env) *work {
		files := scale(10, 24)
		want := e.dropFiles(t, "", 0, files, 12)
		e.putDirect(t, e.landingBucket, "gw-0/zz-bad.csv", badFile())
		return &work{want: want, holder: deadHolder(t)}
	},
	run: func(ctx context.Context, t *testing.T, e *env, w *work) error {
		h := w.holder
		var b [4]byte
		_, _ = rand.Read(b[:])
		h.Token = "faults-run-" + hex.EncodeToString(b[:]) // a new run
		_, err := ingest.Run(ctx, ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table,
			Parallel: 2, FilesPerCommit: 2, CommitWait: 10 * time.Millisecond,
			LeaseTTL: 900 * time.Millisecond, // renewed every 300 ms: a run renews a few times
			Holder:   h, Logger: quiet})
		return err
	},
	done: func(t *testing.T, e *env, w *work) bool { return len(e.waitingFiles(t)) == 0 },
	check: func(t *testing.T, e *env, w *work) (int, int) {
		st := e.read(t)
		checkRows(t, st, w.want)
		// The bad file was quarantined with its report, never loaded.
		q := listKeys(t, e.direct, e.landingBucket, "_rejected/")
		if !slices.Contains(q, "_rejected/gw-0/zz-bad.csv") || !slices.Contains(q, "_rejected/gw-0/zz-bad.csv.error.json") {
			t.Fatalf("quarantine holds %v, want the bad file and its report", q)
		}
		if leases := listKeys(t, e.direct, e.landingBucket, "_timelake/lease/"); len(leases) != 0 {
			t.Fatalf("leases left behind: %v", leases)
		}
		return len(st.rowIDs), len(st.strays)
	},
	faults: func(e *env) []fault {
		put, del := http.MethodPut, http.MethodDelete
		lb, kb := e.landingBucket, e.lakeBucket
		return append([]fault{
			lose("lease create", 1, s3fault.Rule{Method: put, Bucket: lb, Key: "_timelake/lease/*", Header: "If-None-Match"}),
			slowed(lose("lease renewal", 2, s3fault.Rule{Method: put, Bucket: lb, Key: "_timelake/lease/*", Header: "If-Match"}),
				s3fault.Rule{Method: http.MethodGet, Bucket: lb, Key: "gw-*", Delay: 150 * time.Millisecond}),
			lose("lease release", 1, s3fault.Rule{Method: del, Bucket: lb, Key: "_timelake/lease/*"}),
			lose("data file", 3, s3fault.Rule{Method: put, Bucket: kb, Key: "*/data/*"}),
			lose("manifest", 3, s3fault.Rule{Method: put, Bucket: kb, Key: "*/metadata/*.avro"}),
			lose("metadata", 2, s3fault.Rule{Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json"}),
			lose("version hint", 2, s3fault.Rule{Method: put, Bucket: kb, Key: "*/metadata/version-hint.text"}),
			lose("landing delete", 3, s3fault.Rule{Method: del, Bucket: lb, Key: "gw-*"}),
			lose("quarantine copy", 1, s3fault.Rule{Method: put, Bucket: lb, Key: "_rejected/*", Header: "X-Amz-Copy-Source"}),
			lose("quarantine report", 1, s3fault.Rule{Method: put, Bucket: lb, Key: "_rejected/*.error.json"}),
		}, storms(e)...)
	},
}

// uploadFiles are the spool files of the upload trials: small CSV files
// (single PUTs), one of 11 MiB (a multipart upload of 5 MiB parts) and
// one invalid file (rejected).
const uploadPart = 5 << 20

var uploadOp = operation{
	name: "upload",
	setup: func(t *testing.T, e *env) *work {
		w := &work{spool: t.TempDir(), files: map[string][]byte{}}
		for i := range scale(4, 10) {
			body, _ := gatewayFile(i, 20)
			w.files[fmt.Sprintf("small-%02d.csv", i)] = body
		}
		var big bytes.Buffer
		big.WriteString("time,device_id,seq,value,row_id\n")
		for r := 0; big.Len() < 2*uploadPart+1<<20; r++ {
			fmt.Fprintf(&big, "2026-01-06T00:00:00Z,dev-%d,%d,%d.5,big-%07d\n", r%5, r, r%100, r)
		}
		w.files["big.csv"] = big.Bytes()
		for name, body := range w.files {
			if err := os.WriteFile(filepath.Join(w.spool, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(w.spool, "invalid.csv"), []byte("a,b\n1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return w
	},
	run: func(ctx context.Context, t *testing.T, e *env, w *work) error {
		_, err := upload.Run(ctx, upload.Config{Store: e.landing, Spool: w.spool, Gateway: "gw-up", Validate: true,
			Parallel: 2, MultipartThreshold: uploadPart, PartSize: uploadPart})
		if errors.Is(err, upload.ErrRejected) {
			return nil // the invalid file, moved aside: the run did its work
		}
		return err
	},
	done: func(t *testing.T, e *env, w *work) bool {
		left, err := upload.SpoolFiles(w.spool, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(left) == 0
	},
	check: func(t *testing.T, e *env, w *work) (int, int) {
		// Every file went up once, whole, under its own key.
		var got []string
		for _, key := range listKeys(t, e.direct, e.landingBucket, "") {
			got = append(got, sha(getObject(t, e.direct, e.landingBucket, key)))
		}
		var want []string
		for _, body := range w.files {
			want = append(want, sha(body))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("landing holds %d objects, want the %d spool files once each", len(got), len(want))
		}
		if _, err := os.Stat(filepath.Join(w.spool, "rejected", "invalid.csv.error.json")); err != nil {
			t.Fatalf("the invalid file was not rejected: %v", err)
		}
		// No multipart upload left open (a lost CreateMultipartUpload
		// response makes a second one).
		out, err := e.direct.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(e.landingBucket)})
		if err != nil {
			t.Fatal(err)
		}
		figures.Lock()
		figures.ObjectsChecked += len(want)
		figures.Unlock()
		return 0, len(out.Uploads)
	},
	faults: func(e *env) []fault {
		put, post := http.MethodPut, http.MethodPost
		lb := e.landingBucket
		return append([]fault{
			lose("put object", 2, s3fault.Rule{Method: put, Bucket: lb, Without: "uploadId"}),
			lose("create multipart upload", 1, s3fault.Rule{Method: post, Bucket: lb, Query: "uploads"}),
			lose("upload part", 2, s3fault.Rule{Method: put, Bucket: lb, Query: "uploadId"}),
			lose("complete multipart upload", 1, s3fault.Rule{Method: post, Bucket: lb, Query: "uploadId"}),
		}, storms(e)...)
	},
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// smallFilesTable loads small files into the table without faults, one
// snapshot per file, and returns their row ids.
func (e *env) smallFilesTable(t *testing.T) []string {
	t.Helper()
	return e.load(t, 0, scale(8, 20), 5)
}

// load puts n gateway files of rows rows each, from file first, into the
// landing bucket and loads them without faults (no maintenance), one
// snapshot per file, and returns their row ids, sorted.
func (e *env) load(t *testing.T, first, n, rows int) []string {
	t.Helper()
	want := e.dropFiles(t, "", first, n, rows)
	_, err := ingest.Run(context.Background(), ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table,
		Parallel: 1, FilesPerCommit: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// expireKeep is how many snapshots the expire trials keep.
const expireKeep = 2

var expireOp = operation{
	name: "tables expire",
	setup: func(t *testing.T, e *env) *work {
		want := e.smallFilesTable(t)
		time.Sleep(5 * time.Millisecond) // every snapshot is older than OlderThan
		return &work{want: want}
	},
	run: func(ctx context.Context, t *testing.T, e *env, w *work) error {
		tbl, err := e.lake.LoadTable(ctx, e.table)
		if err != nil {
			return err
		}
		_, err = tbl.Expire(ctx, lake.ExpireOptions{OlderThan: time.Millisecond, RetainLast: expireKeep})
		return err
	},
	done: func(t *testing.T, e *env, w *work) bool { return e.read(t).snapshots <= expireKeep },
	check: func(t *testing.T, e *env, w *work) (int, int) {
		st := e.read(t)
		checkRows(t, st, w.want)
		if st.snapshots != expireKeep {
			t.Fatalf("%d snapshots left, want %d", st.snapshots, expireKeep)
		}
		return len(st.rowIDs), len(st.strays)
	},
	faults: func(e *env) []fault {
		kb := e.lakeBucket
		return append([]fault{
			lose("metadata", 1, s3fault.Rule{Method: http.MethodPut, Bucket: kb, Key: "*/metadata/v*.metadata.json"}),
			lose("load history segment", 1, s3fault.Rule{Method: http.MethodPut, Bucket: kb, Key: "*/_load-history-*"}),
			lose("delete of expired files", 3, s3fault.Rule{Method: http.MethodDelete, Bucket: kb}),
			lose("batch delete of expired files", 1, s3fault.Rule{Method: http.MethodPost, Bucket: kb, Query: "delete"}),
		}, storms(e)...)
	},
}

// later is a clock two hours ahead: maintenance then takes the files a
// killed run left behind for orphans (they are older than
// timelake.orphan-min-age, an hour by default) and every snapshot for old
// enough to expire.
func later() time.Time { return time.Now().Add(2 * time.Hour) }

// maintenanceLake opens the warehouse through the proxy with the clock of
// later.
func (e *env) maintenanceLake(t *testing.T) *lake.Lake {
	t.Helper()
	l, err := lake.Open(context.Background(), "s3://"+e.lakeBucket+"/"+warehousePrefix, lake.Options{S3: e.client, Logger: quiet, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// plantOrphans copies a data file and a manifest of the table to names no
// snapshot references, as a run killed before its commit leaves them.
func (e *env) plantOrphans(t *testing.T) {
	t.Helper()
	root := warehousePrefix + "/" + e.table.Namespace + "/" + e.table.Name + "/"
	planted := 0
	for _, key := range listKeys(t, e.direct, e.lakeBucket, root) {
		rel := strings.TrimPrefix(key, root)
		var dst string
		switch {
		case strings.HasPrefix(rel, "data/") && strings.HasSuffix(rel, ".parquet") && planted&1 == 0:
			dst = root + "data/killed-run-00000.parquet"
			planted |= 1
		case strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".avro") && !strings.HasPrefix(rel, "metadata/snap-") && planted&2 == 0:
			dst = root + "metadata/killed-run-m0.avro"
			planted |= 2
		default:
			continue
		}
		e.putDirect(t, e.lakeBucket, dst, getObject(t, e.direct, e.lakeBucket, key))
	}
	if planted != 3 {
		t.Fatalf("found no data file and manifest to copy (%b)", planted)
	}
}

var maintainOp = operation{
	name: "tables maintain",
	setup: func(t *testing.T, e *env) *work {
		// Small files, one snapshot each, and what a killed run leaves.
		want := e.smallFilesTable(t)
		e.plantOrphans(t)
		if st := e.read(t); len(st.strays) != 2 {
			t.Fatalf("planted 2 orphans, the reader finds %d", len(st.strays))
		}
		return &work{want: want}
	},
	run: func(ctx context.Context, t *testing.T, e *env, w *work) error {
		tbl, err := e.maintenanceLake(t).LoadTable(ctx, e.table)
		if err != nil {
			return err
		}
		rep, err := tbl.Maintain(ctx, lake.MaintainOptions{Force: true, Orphans: true})
		w.done = err == nil && !rep.Pending
		return err
	},
	done: func(t *testing.T, e *env, w *work) bool { return w.done },
	check: func(t *testing.T, e *env, w *work) (int, int) {
		st := e.read(t)
		checkRows(t, st, w.want)
		if len(st.strays) != 0 {
			t.Fatalf("after maintenance %d files are left that nothing references: %v", len(st.strays), head(st.strays))
		}
		return len(st.rowIDs), len(st.strays)
	},
	faults: func(e *env) []fault {
		kb := e.lakeBucket
		return append([]fault{
			lose("compacted data file", 2, s3fault.Rule{Method: http.MethodPut, Bucket: kb, Key: "*/data/*"}),
			lose("manifest", 2, s3fault.Rule{Method: http.MethodPut, Bucket: kb, Key: "*/metadata/*.avro"}),
			lose("metadata", 1, s3fault.Rule{Method: http.MethodPut, Bucket: kb, Key: "*/metadata/v*.metadata.json"}),
			lose("delete of orphans and replaced files", 3, s3fault.Rule{Method: http.MethodDelete, Bucket: kb}),
			lose("batch delete of orphans and replaced files", 2, s3fault.Rule{Method: http.MethodPost, Bucket: kb, Query: "delete"}),
		}, storms(e)...)
	},
}
