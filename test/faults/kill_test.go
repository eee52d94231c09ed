package faults

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// timelakeBinary builds cmd/timelake once per test process.
func timelakeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "timelake-faults-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "timelake")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/timelake/timelake/cmd/timelake").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build timelake: %v", buildErr)
	}
	return binPath
}

// ingestCommand is `timelake ingest` as cron runs it, against endpoint.
func (e *env) ingestCommand(t *testing.T, endpoint string, args ...string) *exec.Cmd {
	return e.command(t, endpoint, append([]string{"ingest", "--parallel", "2", "--files-per-commit", "2"}, args...)...)
}

// command is `timelake args...` on the trial's buckets and table, its S3
// requests sent to endpoint.
func (e *env) command(t *testing.T, endpoint string, args ...string) *exec.Cmd {
	cmd := exec.Command(timelakeBinary(t), args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(), // no ~/.aws of the developer
		"AWS_ENDPOINT_URL_S3=" + endpoint,
		"AWS_REGION=" + e.srv.Region,
		"AWS_ACCESS_KEY_ID=" + e.srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + e.srv.SecretKey,
		"LANDING_BUCKET=" + e.landingBucket,
		"TIMELAKE_WAREHOUSE=s3://" + e.lakeBucket + "/" + warehousePrefix,
		"TIMELAKE_TABLE=" + e.table.String(),
	}
	return cmd
}

// exitCode runs cmd and returns its exit code and output.
func exitCode(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("run %s: %v", cmd.Path, err)
	return -1, ""
}

// TestKill9: `timelake ingest` is killed with SIGKILL at a random moment
// (while it lists, loads, commits or deletes), then cron's next run
// starts: it must not be blocked by the dead run's lease (exit 11 or 12), must
// finish (exit 0), and the table must hold every row of every file once.
// One table lives through all trials, each adding files.
func TestKill9(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a dead holder is recognised from /proc")
	}
	seed := firstSeed()
	rng := rand.New(rand.NewPCG(seed, seed))
	e := newEnv(t, seed)
	var want []string
	trials := scale(3, 40)
	// Kills land at a random moment of a typical run: as long as the last
	// run that was not killed.
	typical := time.Second
	for trial := range trials {
		want = append(want, e.dropFiles(t, "", trial*100, scale(8, 12), 20)...)
		slices.Sort(want)

		killed, after, out := runKilled(t, e.ingestCommand(t, e.srv.Endpoint), rng, typical)

		start := time.Now()
		code, log := exitCode(t, e.ingestCommand(t, e.srv.Endpoint))
		typical = max(time.Since(start), 50*time.Millisecond)
		switch {
		case code == 11 || code == 12:
			t.Fatalf("trial %d: the run after the kill (at %s) was blocked by the dead run's lease:\n%s", trial, after, log)
		case code != 0:
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
		record("kill -9", 2, 0, nil, len(st.rowIDs), 0)
		if trial == trials-1 {
			figures.Lock()
			figures.Strays += len(st.strays) // what the killed runs left for table maintenance
			figures.Unlock()
			t.Logf("%d trials, %d rows, %d files left by killed runs for maintenance", trials, len(st.rowIDs), len(st.strays))
		}
	}

	// Maintenance (an hour later: the orphans are old enough) removes what
	// the killed runs left: no file is left that no snapshot references,
	// and no row moved.
	tbl, err := e.maintenanceLake(t).LoadTable(context.Background(), e.table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Maintain(context.Background(), lake.MaintainOptions{Force: true, Orphans: true}); err != nil {
		t.Fatal(err)
	}
	st := e.read(t)
	checkRows(t, st, want)
	if len(st.strays) != 0 {
		t.Fatalf("after maintenance %d files are left that nothing references: %v", len(st.strays), head(st.strays))
	}
}

// runKilled starts cmd and kills it with SIGKILL at a random moment before
// typical, unless it exits first. It returns whether the kill hit a
// running process, when, and the killed run's output.
func runKilled(t *testing.T, cmd *exec.Cmd, rng *rand.Rand, typical time.Duration) (killed bool, after time.Duration, out string) {
	t.Helper()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	after = time.Duration(rng.Int64N(int64(typical)))
	select {
	case <-exited:
	case <-time.After(after):
		killed = cmd.Process.Kill() == nil
		<-exited
	}
	return killed, after, buf.String()
}

// TestLostLeaseResponseBinary is the cron case of a lost response on the
// lease's conditional create: the SDK retries it and gets 412 for its own
// write. The run holds the lease and loads everything (exit 0), and so does
// the next one.
func TestLostLeaseResponseBinary(t *testing.T) {
	e := newEnv(t, firstSeed())
	want := e.dropFiles(t, "", 0, 4, 10)
	e.proxy.Add(s3fault.Rule{Name: "lease", Method: http.MethodPut, Bucket: e.landingBucket, Key: "_timelake/lease/*",
		Header: "If-None-Match", Action: s3fault.LoseResponse, Times: 1})
	code, log := exitCode(t, e.ingestCommand(t, e.proxy.URL))
	if code != 0 || e.proxy.Counts("lease").Injected != 1 {
		t.Fatalf("exit %d with %d lost responses:\n%s", code, e.proxy.Counts("lease").Injected, log)
	}
	checkRows(t, e.read(t), want)
	more := e.dropFiles(t, "", 10, 2, 10)
	if code, log := exitCode(t, e.ingestCommand(t, e.proxy.URL)); code != 0 {
		t.Fatalf("next run: exit %d:\n%s", code, log)
	}
	st := e.read(t)
	all := append(want, more...)
	slices.Sort(all)
	checkRows(t, st, all)
	record("lost lease response (binary)", 2, 0, e.proxy, len(st.rowIDs), len(st.strays))
}
