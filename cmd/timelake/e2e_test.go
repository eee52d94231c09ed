package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// binary is the timelake binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "timelake-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "timelake")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build timelake: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary in dir with only the given environment (plus PATH and HOME).
func run(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errOut.String()}
}

// complete gives a file written whole an old modification time, as the
// quick start does to its copies: ingest then takes it at once instead of
// waiting the settle time of a local landing folder.
func complete(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// copyExamples copies examples/landing into dir/landing, complete.
func copyExamples(t *testing.T, dir string) []string {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "landing")
	var keys []string
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "landing", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		complete(t, dst)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestLocalDefault(t *testing.T) {
	dir := t.TempDir()
	keys := copyExamples(t, dir)
	r := run(t, dir, nil, "ingest", "--landing", "./landing", "--warehouse", "./lake", "--table", "iot.readings", "--series-key", "device_id")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, k := range keys {
		if !strings.Contains(r.stdout, "loaded          "+k+"  300 rows") {
			t.Errorf("no output line for %s:\n%s", k, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "created table iot.readings") || !strings.Contains(r.stdout, "7 loaded (2100 rows)") {
		t.Fatalf("output:\n%s", r.stdout)
	}
	hint, err := os.ReadFile(filepath.Join(dir, "lake", "iot", "readings", "metadata", "version-hint.text"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lake", "iot", "readings", "metadata", "v"+string(hint)+".metadata.json")); err != nil {
		t.Fatal(err)
	}

	meta, err := os.ReadFile(filepath.Join(dir, "lake", "iot", "readings", "metadata", "v"+string(hint)+".metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var current struct {
		SnapshotID int64 `json:"current-snapshot-id"`
	}
	if err := json.Unmarshal(meta, &current); err != nil {
		t.Fatal(err)
	}

	// The same files again: already loaded, deleted, the table's data
	// unchanged; the duplicates go into its outcome log (one version).
	copyExamples(t, dir)
	r = run(t, dir, nil, "ingest", "--landing", "./landing", "--warehouse", "./lake", "--table", "iot.readings", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var rep struct {
		AlreadyLoaded   int   `json:"already_loaded"`
		Loaded          int   `json:"loaded"`
		MetadataVersion int   `json:"metadata_version"`
		SnapshotID      int64 `json:"snapshot_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json output is not one JSON document: %v\n%s", err, r.stdout)
	}
	if rep.AlreadyLoaded != 7 || rep.Loaded != 0 || rep.SnapshotID != current.SnapshotID || fmt.Sprint(rep.MetadataVersion-1) != string(hint) {
		t.Fatalf("second run: %+v, want the snapshot %d of v%s, in the next version", rep, current.SnapshotID, hint)
	}
	r = run(t, dir, nil, "tables", "history", "iot.readings", "--warehouse", "./lake", "--status", "duplicate")
	if n := strings.Count(r.stdout, "\tduplicate\t"); r.code != 0 || n != 7 {
		t.Errorf("tables history --status duplicate: exit %d, %d duplicates\n%s%s", r.code, n, r.stdout, r.stderr)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	copyExamples(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "landing", "gateway-1", "zz-ragged.csv"),
		[]byte("time,device_id,temperature_c,humidity_pct,battery_v\n2026-01-05T10:00:00Z,d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	complete(t, filepath.Join(dir, "landing", "gateway-1", "zz-ragged.csv"))
	args := []string{"ingest", "--landing", "./landing", "--warehouse", "./lake", "--table", "iot.readings"}

	r := run(t, dir, nil, args...)
	if r.code != 3 || !strings.Contains(r.stdout, "quarantined     gateway-1/zz-ragged.csv") {
		t.Fatalf("partial run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "landing", "_rejected", "gateway-1", "zz-ragged.csv.error.json")); err != nil {
		t.Fatal(err)
	}

	// A lease held by another run: exit 11 at once, nothing touched.
	lease := filepath.Join(dir, "landing", "_timelake", "lease", "iot.readings.json")
	if err := os.MkdirAll(filepath.Dir(lease), 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"holder":"poller-1:42","acquired":%q,"expires":%q}`,
		time.Now().UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if err := os.WriteFile(lease, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, nil, args...)
	if r.code != 11 || !strings.Contains(r.stderr, "poller-1:42") {
		t.Fatalf("lease held: exit %d\n%s", r.code, r.stderr)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing table", []string{"ingest", "--landing", "./landing", "--warehouse", "./lake"}, 2, "TIMELAKE_TABLE"},
		{"bad table name", []string{"ingest", "--landing", "./landing", "--warehouse", "./lake", "--table", "a/b"}, 2, "invalid table name"},
		{"bad partition", append(args, "--partition", "week"), 2, "hour, day or month"},
		{"unknown flag", []string{"ingest", "--nope"}, 2, "unknown flag"},
		{"no such table", append(args, "--table", "iot.other", "--no-create"), 1, "no-create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.code, tc.code, tc.msg, r.stderr)
			}
		})
	}
	if r := run(t, dir, nil, "--version"); r.code != 0 || !strings.Contains(r.stdout, "timelake version") {
		t.Fatalf("--version: %d %s", r.code, r.stdout)
	}
}

// TestS3EnvFile runs the production form against the S3 server: the
// settings file of the public docs (AWS_ENDPOINT, TIMELAKE_WAREHOUSE,
// TIMELAKE_TABLE, LANDING_BUCKET), given with --env-file, and the same
// values from the environment; then two processes started at once.
func TestS3EnvFile(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	dir := t.TempDir()
	keys := copyExamples(t, dir)
	putAll := func() {
		for _, k := range keys {
			b, err := os.ReadFile(filepath.Join(dir, "landing", filepath.FromSlash(k)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String(landing), Key: aws.String(k), Body: bytes.NewReader(b)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	envFile := strings.Join([]string{
		"# timelake settings",
		"AWS_ENDPOINT=" + srv.Endpoint,
		"AWS_REGION=" + srv.Region,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey,
		`AWS_SECRET_ACCESS_KEY="` + srv.SecretKey + `"`,
		"TIMELAKE_WAREHOUSE=s3://" + lakeBucket + "/warehouse",
		"TIMELAKE_TABLE=iot.readings",
		"LANDING_BUCKET=" + landing,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "timelake.env"), []byte(envFile), 0o600); err != nil {
		t.Fatal(err)
	}
	putAll()
	r := run(t, dir, nil, "ingest", "--env-file", "timelake.env")
	if r.code != 0 || !strings.Contains(r.stdout, "7 loaded (2100 rows)") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, srv.SecretKey) {
		t.Fatal("secret printed")
	}

	// The same settings from the environment (set -a; . ./timelake.env),
	// with the endpoint under AWS_ENDPOINT_URL_S3, for a new table: two
	// processes started at the same moment.
	putAll()
	env := []string{
		"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_REGION=" + srv.Region,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
		"TIMELAKE_WAREHOUSE=s3://" + lakeBucket + "/warehouse", "TIMELAKE_TABLE=iot.race", "LANDING_BUCKET=" + landing,
	}
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(t, dir, env, "ingest", "--json")
		}()
	}
	wg.Wait()
	loaded := 0
	for _, r := range results {
		switch r.code {
		case 0:
			var rep struct {
				Loaded int `json:"loaded"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatal(err)
			}
			loaded += rep.Loaded
		case 12: // the other run still worked: a backlog, not an error
			var rep struct {
				StillWorking *struct{ Kind string } `json:"still_working"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.StillWorking == nil || rep.StillWorking.Kind != "ingest" ||
				strings.Contains(r.stderr, "Error:") {
				t.Fatalf("exit 12 without the report saying so: %v %s%s", err, r.stdout, r.stderr)
			}
		default:
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	if loaded != 7 {
		t.Fatalf("%d files loaded by the two runs, want 7", loaded)
	}
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(landing)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Fatalf("landing bucket not empty: %d objects", len(out.Contents))
	}
	l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(context.Background(), lake.TableName{Namespace: "iot", Name: "race"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var rows int64
	for _, b := range tbl.Batches() {
		if seen[b.BatchID] {
			t.Fatalf("batch %s twice", b.BatchID)
		}
		seen[b.BatchID] = true
		rows += b.Rows
	}
	if len(seen) != 7 || rows != 2100 {
		t.Fatalf("%d batches with %d rows, want 7 with 2100", len(seen), rows)
	}
}
