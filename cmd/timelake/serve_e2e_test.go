package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// serveProc is a `timelake serve` process.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer

	mu    sync.Mutex
	lines []string
	seen  chan struct{} // a token per line read
	eof   chan struct{}
}

// startServe starts the binary with `serve --listen 127.0.0.1:0` and waits
// for the line that says where it listens.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, stderr: &bytes.Buffer{}, seen: make(chan struct{}, 1<<16), eof: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.seen <- struct{}{}
		}
	}()
	addr := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+) `)
	line := p.waitLine(t, "serving table")
	m := addr.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	p.url = m[1]
	return p
}

// waitLine waits for an output line containing s (at most two minutes: a
// bound on a hang) and returns it.
func (p *serveProc) waitLine(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if strings.Contains(l, s) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-p.seen:
		case <-p.eof:
			t.Fatalf("serve ended without a line %q:\n%s\n%s", s, p.output(), p.stderr)
		case <-deadline:
			t.Fatalf("no line %q:\n%s\n%s", s, p.output(), p.stderr)
		}
	}
}

// waitCount waits for n output lines containing s.
func (p *serveProc) waitCount(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for p.count(s) < n {
		select {
		case <-p.seen:
		case <-p.eof:
			t.Fatalf("serve ended before %d lines %q:\n%s\n%s", n, s, p.output(), p.stderr)
		case <-deadline:
			t.Fatalf("fewer than %d lines %q:\n%s\n%s", n, s, p.output(), p.stderr)
		}
	}
}

func (p *serveProc) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func (p *serveProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// exit waits for the process and returns its exit code.
func (p *serveProc) exit(t *testing.T) int {
	t.Helper()
	<-p.eof
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// s3Env is the environment of a command on the S3 server.
func s3Env(srv s3test.Server, landing, lakeBucket string, extra ...string) []string {
	return append([]string{
		"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_REGION=" + srv.Region,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
		"TIMELAKE_WAREHOUSE=s3://" + lakeBucket + "/warehouse", "TIMELAKE_TABLE=iot.readings", "LANDING_BUCKET=" + landing,
		"TIMELAKE_SERIES_KEY=device_id",
	}, extra...)
}

func putObject(t *testing.T, c *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func listKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// readingsCSV is a small gateway file whose rows depend on i.
func readingsCSV(i, rows int) []byte {
	var b bytes.Buffer
	b.WriteString("time,device_id,temperature_c\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	for j := range rows {
		fmt.Fprintf(&b, "%s,dev-%d,%d.25\n", t0.Add(time.Duration(j)*time.Second).Format(time.RFC3339), j%4, i*100+j)
	}
	return b.Bytes()
}

// checkTable checks that the table holds each of keys once with rows rows.
func checkTable(t *testing.T, c *s3.Client, lakeBucket string, keys []string, rows int64) {
	t.Helper()
	l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: c})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(context.Background(), lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, b := range tbl.Batches() {
		if _, dup := got[b.BatchID]; dup {
			t.Fatalf("batch %s loaded twice", b.BatchID)
		}
		got[b.BatchID] = b.Rows
	}
	for _, k := range keys {
		if got[k] != rows {
			t.Errorf("batch %s: %d rows, want %d", k, got[k], rows)
		}
	}
	if len(got) != len(keys) {
		t.Errorf("%d batches, want %d", len(got), len(keys))
	}
}

// TestServeStops: serve loads what it finds and what a notification
// announces; SIGTERM stops it with exit 0 and its lease released, so a cron
// ingest runs at once.
func TestServeStops(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	env := s3Env(srv, landing, lakeBucket, "TIMELAKE_WEBHOOK_TOKEN=e2e-token")
	if r := run(t, t.TempDir(), s3Env(srv, landing, lakeBucket), "serve", "--listen", ":0"); r.code != 2 || !strings.Contains(r.stderr, "TIMELAKE_WEBHOOK_TOKEN") {
		t.Fatalf("serve on every address without authentication: exit %d\n%s", r.code, r.stderr)
	}
	putObject(t, client, landing, "gw/a.csv", readingsCSV(1, 20))
	p := startServe(t, env)
	p.waitLine(t, "loaded          gw/a.csv  20 rows")

	putObject(t, client, landing, "gw/b.csv", readingsCSV(2, 20))
	body := `{"events":[{"eventName":"OBJECT_CREATED_PUT","bucket":"` + landing + `","object":{"key":"gw/b.csv"}}]}`
	req, _ := http.NewRequest(http.MethodPost, p.url+"/notify", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer e2e-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("notify: %d", resp.StatusCode)
	}
	p.waitLine(t, "loaded          gw/b.csv  20 rows")

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s\n%s", code, p.output(), p.stderr)
	}
	if p.count("stopped") != 1 {
		t.Errorf("no stop line:\n%s", p.output())
	}
	if left := listKeys(t, client, landing, "_timelake/"); len(left) != 0 {
		t.Fatalf("lease left after SIGTERM: %v", left)
	}
	r := run(t, t.TempDir(), env, "ingest")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to load") {
		t.Fatalf("ingest after serve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkTable(t, client, lakeBucket, []string{"gw/a.csv", "gw/b.csv"}, 20)
}

// TestServeKilled: a serve killed with SIGKILL in the middle of its loads
// loses nothing and loads nothing twice: the next ingest loads the rest.
func TestServeKilled(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	env := s3Env(srv, landing, lakeBucket)
	var keys []string
	for i := range 60 {
		k := fmt.Sprintf("gw-%d/%03d.csv", i%3, i)
		putObject(t, client, landing, k, readingsCSV(i, 10))
		keys = append(keys, k)
	}
	p := startServe(t, env, "--files-per-commit", "4", "--parallel", "2")
	p.waitCount(t, "loaded ", 10) // the table exists, commits follow each other
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.exit(t)
	loadedBefore := p.count("loaded ")

	// The lease of the killed process names a process that no longer runs
	// on this host: the next run takes it over at once.
	r := run(t, t.TempDir(), env, "ingest", "--json")
	if r.code != 0 {
		t.Fatalf("ingest after the kill: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("serve loaded %d of %d files before the kill", loadedBefore, len(keys))
	if left := listKeys(t, client, landing, ""); len(left) != 0 {
		t.Fatalf("landing bucket after the next ingest: %v", left)
	}
	checkTable(t, client, lakeBucket, keys, 10)
}

// TestServeReleasesLeaseOnEverySignal: a stop signal sent twice at once
// (timeout(1) sends SIGTERM to the process and to its process group; a
// Ctrl-C may reach it both ways) is one graceful stop: exit 0, the lease
// released, on a local folder and on the S3 server, for SIGTERM and SIGINT
// alike. On the S3 server the second signal arrives while the stop is
// still under way (the fault proxy holds the lease's release for two
// seconds); on the local folder the stop is quick and the second signal
// may come after it, while the process exits, which is the same stop too
// (TestSignalAfterTheStopIsTheSameStop in cmdutil).
func TestServeReleasesLeaseOnEverySignal(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	type where struct {
		name string
		env  func(t *testing.T) (env []string, lease func() []string)
	}
	places := []where{
		{"local", func(t *testing.T) ([]string, func() []string) {
			d := t.TempDir()
			landing := filepath.Join(d, "landing")
			if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(landing, "gw", "a.csv"), readingsCSV(1, 20), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{"LANDING_BUCKET=" + landing, "TIMELAKE_WAREHOUSE=" + filepath.Join(d, "lake"),
				"TIMELAKE_TABLE=iot.readings", "TIMELAKE_SERIES_KEY=device_id"}
			return env, func() []string {
				left, _ := filepath.Glob(filepath.Join(landing, "_timelake", "lease", "*"))
				return left
			}
		}},
		{"s3", func(t *testing.T) ([]string, func() []string) {
			landing := srv.NewBucket(t)
			proxy := s3fault.StartT(t, srv.Endpoint, 1)
			proxy.Add(s3fault.Rule{Name: "slow release", Method: http.MethodDelete, Bucket: landing,
				Key: "_timelake/lease/*", Delay: 2 * time.Second})
			env := s3Env(srv, landing, srv.NewBucket(t), "AWS_ENDPOINT_URL_S3="+proxy.URL)
			return env, func() []string { return listKeys(t, client, landing, "_timelake/") }
		}},
	}
	for _, w := range places {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(w.name+"/"+sig.String(), func(t *testing.T) {
				env, lease := w.env(t)
				p := startServe(t, env)
				p.waitLine(t, "took the ingest lease")
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				p.waitLine(t, "stopping")
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatalf("the stop was over before the second %s: %v", sig, err)
				}
				if code := p.exit(t); code != 0 || p.count("stopped") != 1 {
					t.Fatalf("exit %d after %s twice\n%s\n%s", code, sig, p.output(), p.stderr)
				}
				if left := lease(); len(left) != 0 {
					t.Fatalf("lease left after %s twice: %v\n%s", sig, left, p.stderr)
				}
			})
		}
	}
}
