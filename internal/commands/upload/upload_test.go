package upload_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	uploadcmd "github.com/timelake/timelake/internal/commands/upload"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/upload"
)

func getenv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func TestNewCmdUpload(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c upload.Config)
		wantErr string // usage error substring
	}{
		{
			name: "one file",
			args: []string{"--landing", landing, "--gateway", "gateway-7", "r.csv"},
			check: func(t *testing.T, c upload.Config) {
				if c.Gateway != "gateway-7" || len(c.Files) != 1 || c.Store.URI() != landing || !c.Validate || c.Time != upload.TimeModified || c.Gzip {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "settings from the environment",
			args: []string{"--validate=false", "--gzip", "--time", "now", "r.csv"},
			env: map[string]string{"LANDING_BUCKET": "my-landing", "TIMELAKE_GATEWAY": "gw1", "TIMELAKE_UPLOAD_PREFIX": "/site-3/", "TIMELAKE_TIME_COLUMN": "ts",
				"TIMELAKE_ASSUME_TIMEZONE": "Europe/Berlin"},
			check: func(t *testing.T, c upload.Config) {
				if c.Store.URI() != "s3://my-landing" || c.Gateway != "gw1" || c.Prefix != "site-3" || c.Validate || !c.Gzip || c.Time != upload.TimeNow || c.ValidateOptions.TimeColumn != "ts" ||
					c.ValidateOptions.AssumeLocation.String() != "Europe/Berlin" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "spool from the environment",
			env:  map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_GATEWAY": "gw1", "TIMELAKE_SPOOL": "/var/spool/tl", "TIMELAKE_SPOOL_DONE": "/var/spool/done"},
			args: []string{"--min-age", "30s"},
			check: func(t *testing.T, c upload.Config) {
				if c.Spool != "/var/spool/tl" || c.Done != "/var/spool/done" || c.MinAge != 30*time.Second || len(c.Files) != 0 {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "a spool waits for complete files by default",
			env:  map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_GATEWAY": "gw1"},
			args: []string{"--spool", "/var/spool/tl"},
			check: func(t *testing.T, c upload.Config) {
				if c.MinAge != 30*time.Second || c.OpenEndMinAge != 10*time.Minute {
					t.Errorf("min ages %s, %s; want 30s, 10m", c.MinAge, c.OpenEndMinAge)
				}
			},
		},
		{
			name: "files win over a spool from the environment",
			env:  map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_GATEWAY": "gw1", "TIMELAKE_SPOOL": "/var/spool/tl"},
			args: []string{"a.csv", "b.csv"},
			check: func(t *testing.T, c upload.Config) {
				if c.Spool != "" || len(c.Files) != 2 {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "explicit key needs no gateway",
			args: []string{"--landing", landing, "--key", "gateway-7/20260105T1000.csv", "r.csv"},
			check: func(t *testing.T, c upload.Config) {
				if c.Key != "gateway-7/20260105T1000.csv" || c.Gateway != "" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{name: "nothing to upload", args: []string{"--landing", landing, "--gateway", "g"}, wantErr: "nothing to upload"},
		{name: "files and spool", args: []string{"--landing", landing, "--gateway", "g", "--spool", dir, "a.csv"}, wantErr: "not both"},
		{name: "key with two files", args: []string{"--landing", landing, "--key", "k.csv", "a.csv", "b.csv"}, wantErr: "exactly one file"},
		{name: "key with spool", args: []string{"--landing", landing, "--key", "k.csv", "--spool", dir}, wantErr: "exactly one file"},
		{name: "absolute key", args: []string{"--landing", landing, "--key", "/k.csv", "a.csv"}, wantErr: "must not start with /"},
		{name: "dot-dot key", args: []string{"--landing", landing, "--key", "a/../k.csv", "a.csv"}, wantErr: `".."`},
		{name: "no gateway", args: []string{"--landing", landing, "a.csv"}, wantErr: "pass --gateway or set TIMELAKE_GATEWAY"},
		{name: "bad gateway", args: []string{"--landing", landing, "--gateway", "a/b", "a.csv"}, wantErr: "invalid gateway name"},
		{name: "bad time", args: []string{"--landing", landing, "--gateway", "g", "--time", "ctime", "a.csv"}, wantErr: "not one of mtime, now"},
		{name: "done without spool", args: []string{"--landing", landing, "--gateway", "g", "--done", dir, "a.csv"}, wantErr: "only apply with --spool"},
		{name: "done is the spool", args: []string{"--landing", landing, "--gateway", "g", "--spool", dir, "--done", dir + "/"}, wantErr: "another folder"},
		{name: "bad prefix", args: []string{"--landing", landing, "--gateway", "g", "--prefix", "a/../b", "a.csv"}, wantErr: "--prefix"},
		{name: "bad time unit", args: []string{"--landing", landing, "--gateway", "g", "--time-unit", "h", "a.csv"}, wantErr: "--time-unit"},
		{name: "bad zone", args: []string{"--landing", landing, "--gateway", "g", "--assume-timezone", "Mars/Olympus", "a.csv"}, wantErr: "--assume-timezone"},
		{name: "no landing", args: []string{"--gateway", "g", "a.csv"}, wantErr: "pass --landing or set LANDING_BUCKET"},
		{name: "bad landing", args: []string{"--gateway", "g", "--landing", "Bad_Bucket", "a.csv"}, wantErr: "invalid bucket name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _ := iostreams.Test()
			f := &cmdutil.Factory{IO: ios, Getenv: getenv(tt.env)}
			var got *uploadcmd.Options
			cmd := uploadcmd.NewCmdUpload(f, func(_ context.Context, o *uploadcmd.Options) error {
				got = o
				return nil
			}, nil)
			// The S3 connection flags are the root's persistent flags.
			root := &cobra.Command{Use: "timelake", SilenceErrors: true, SilenceUsage: true}
			settings.Bind(root.PersistentFlags(), settings.Global)
			root.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
			root.AddCommand(cmd)
			root.SetArgs(append([]string{"upload"}, tt.args...))
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			err := root.ExecuteContext(t.Context())
			if tt.wantErr != "" {
				if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got.Config)
		})
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

const readings = "time,sensor,value\n2026-01-05T10:00:00Z,s1,1.5\n2026-01-05T10:01:00Z,s1,2.5\n"

var t0 = time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

func writeFile(t *testing.T, path, content string, mtime time.Time) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return path
}

// run executes `timelake upload args...` as main does and returns the exit
// code, stdout and stderr.
func run(t *testing.T, env map[string]string, stderrTTY bool, args ...string) (cmdutil.ExitCode, string, string) {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	ios.SetStderrTTY(stderrTTY)
	code := commands.Execute(t.Context(), append([]string{"upload"}, args...), ios, getenv(env))
	return code, out.String(), errOut.String()
}

func TestOutputAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	file := writeFile(t, filepath.Join(dir, "readings.csv"), readings, t0)
	broken := writeFile(t, filepath.Join(dir, "broken.csv"), readings+"2026-01-05T10:02:00Z,s1\n", t0)
	other := writeFile(t, filepath.Join(dir, "other.csv"), strings.Replace(readings, "s1", "s2", -1), t0)
	key := "gateway-7/20260105T100000Z-" + sum(readings)[:8] + ".csv"
	env := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_GATEWAY": "gateway-7"}
	tests := []struct {
		name       string
		args       []string
		wantCode   cmdutil.ExitCode
		wantOut    string
		wantErrOut string
	}{
		{name: "uploaded", args: []string{file}, wantOut: fmt.Sprintf("uploaded         %s -> %s  74 bytes\n", file, key)},
		{name: "already uploaded", args: []string{file}, wantOut: fmt.Sprintf("already uploaded %s -> %s  74 bytes\n", file, key)},
		{name: "invalid file", args: []string{broken}, wantCode: cmdutil.ExitFailed,
			wantErrOut: fmt.Sprintf("Error: %s: row 3 (line 4): wrong number of fields: the line has 2, the header has 3\n", broken)},
		{name: "conflict", args: []string{"--key", key, other}, wantCode: cmdutil.ExitFailed,
			wantErrOut: "Error: " + key + ": key already exists with different content in " + landing},
		{name: "usage", args: []string{"--time", "x", file}, wantCode: cmdutil.ExitUsage,
			wantErrOut: "Error: --time: \"x\" is not one of mtime, now\nTry: timelake upload --help\n"},
		{name: "several files", args: []string{file, broken}, wantCode: cmdutil.ExitFailed,
			wantOut:    fmt.Sprintf("already uploaded %s -> %s  74 bytes\nfailed           %s: row 3 (line 4): wrong number of fields: the line has 2, the header has 3\n", file, key, broken),
			wantErrOut: "Error: 1 of 2 files failed\n"},
	}
	summary := regexp.MustCompile(`(?m)^0 uploaded \(0 bytes\), 1 already uploaded, 1 failed to .*/landing in \d+\.\ds\n`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, env, false, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if tt.name == "several files" {
				if !summary.MatchString(out) {
					t.Errorf("no summary line in %q", out)
				}
				out = summary.ReplaceAllString(out, "")
			}
			if out != tt.wantOut {
				t.Errorf("stdout:\n%q\nwant:\n%q", out, tt.wantOut)
			}
			if !strings.HasPrefix(errOut, tt.wantErrOut) || (tt.wantErrOut == "" && errOut != "") {
				t.Errorf("stderr:\n%q\nwant prefix:\n%q", errOut, tt.wantErrOut)
			}
		})
	}
}

func TestJSONReport(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	writeFile(t, filepath.Join(spool, "a.csv"), readings, t0)
	writeFile(t, filepath.Join(spool, "b.csv.part"), "partial", t0)
	env := map[string]string{"LANDING_BUCKET": filepath.Join(dir, "landing"), "TIMELAKE_GATEWAY": "gw"}
	code, out, errOut := run(t, env, false, "--json", "--spool", spool, "--gzip")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var rep upload.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if rep.Uploaded != 1 || len(rep.Files) != 1 || !rep.Files[0].Deleted || !rep.Files[0].Gzipped ||
		!strings.HasSuffix(rep.Files[0].Key, ".csv.gz") || rep.Files[0].SourceSHA256 != sum(readings) {
		t.Fatalf("report = %+v", rep)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("--json in a pipe is not one line:\n%s", out)
	}
	// An empty spool is an empty list, not null.
	code, out, _ = run(t, env, false, "--json", "--spool", spool)
	if code != 0 || !strings.Contains(out, `"files":[]`) {
		t.Fatalf("exit %d, stdout %s", code, out)
	}
	code, out, _ = run(t, env, false, "--spool", spool)
	if code != 0 || out != "nothing to upload in "+spool+"\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestProgressOnlyOnATerminal(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("2026-01-05T10:00:00Z,s1,1.5\n", (uploadcmd.ProgressMinBytes/28)+1)
	file := writeFile(t, filepath.Join(dir, "big.csv"), "time,sensor,value\n"+big, t0)
	tests := []struct {
		name string
		tty  bool
	}{{"terminal", true}, {"pipe", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"LANDING_BUCKET": filepath.Join(t.TempDir(), "landing"), "TIMELAKE_GATEWAY": "gw"}
			code, out, errOut := run(t, env, tt.tty, file)
			if code != 0 || !strings.HasPrefix(out, "uploaded ") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if tt.tty != (errOut != "") {
				t.Fatalf("stderr %q on a terminal=%v", errOut, tt.tty)
			}
			if tt.tty && !strings.Contains(errOut, "\r") {
				t.Fatalf("stderr %q holds no progress bar", errOut)
			}
		})
	}
}

// TestValidationBeforeAnyRequest runs the command against an S3 endpoint
// that counts requests: an invalid file is refused with none.
func TestValidationBeforeAnyRequest(t *testing.T) {
	var requests atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer ts.Close()
	dir := t.TempDir()
	broken := writeFile(t, filepath.Join(dir, "broken.csv"), "time,sensor,value\n2026-01-05T10:00:00Z,s1,\"1.5\n", t0)
	env := map[string]string{
		"LANDING_BUCKET": "landing", "TIMELAKE_GATEWAY": "gw", "AWS_ENDPOINT_URL_S3": ts.URL,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
	}
	code, _, errOut := run(t, env, false, broken)
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, broken+": row 1 (line 2): malformed csv") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests sent for an invalid file", n)
	}
	if code, _, _ := run(t, env, false, "--validate=false", broken); code != cmdutil.ExitFailed || requests.Load() == 0 {
		t.Fatalf("without --validate: exit %d, %d requests; the endpoint should have been reached", code, requests.Load())
	}
}

// TestSpoolRejects: an invalid spool file is moved to <spool>/rejected/
// with its report, the others go up, and the run exits 3 (partial).
func TestSpoolRejects(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	writeFile(t, filepath.Join(spool, "a.csv"), readings, t0)
	bad := writeFile(t, filepath.Join(spool, "bad.csv"), readings+"2026-01-05T10:02:00Z,s1\n", t0.Add(time.Minute))
	env := map[string]string{"LANDING_BUCKET": filepath.Join(dir, "landing"), "TIMELAKE_GATEWAY": "gw"}
	code, out, errOut := run(t, env, false, "--spool", spool)
	rejected := filepath.Join(spool, "rejected", "bad.csv")
	if code != cmdutil.ExitPartial || errOut != "" {
		t.Fatalf("exit %d, want %d; stderr %q", code, cmdutil.ExitPartial, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("rejected         %s: row 3 (line 4): wrong number of fields: the line has 2, the header has 3 -> %s\n", bad, rejected)) ||
		!strings.Contains(out, "1 uploaded") || !strings.Contains(out, "; 1 rejected to "+filepath.Dir(rejected)) {
		t.Fatalf("stdout:\n%s", out)
	}
	if _, err := os.Stat(rejected + ".error.json"); err != nil {
		t.Fatal(err)
	}
	// The next run has nothing left to fail on.
	if code, out, _ := run(t, env, false, "--spool", spool); code != cmdutil.ExitOK {
		t.Fatalf("next run: exit %d\n%s", code, out)
	}
}

// TestValidateWithRoutes: with routes, --validate checks a file with the
// rules of the route that takes its key (and of its table once it
// exists), refuses a key no route takes as ingest reports it, and routes
// beside --table are a usage error.
func TestValidateWithRoutes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	file := writeFile(t, filepath.Join(dir, "r.csv"), "ts,sensor,value\n2026-01-05T10:00:00Z,s1,abc\n", t0)
	routes := "a/**=iot.a;time-column=ts, b/**=iot.b;time-column=at"
	env := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_ROUTES": routes}
	uploaded := func(key string) bool {
		_, err := os.Stat(filepath.Join(landing, filepath.FromSlash(key)))
		return err == nil
	}

	// Its route's table: time column ts. The generated key is under a/.
	code, out, errOut := run(t, env, false, "--prefix", "a", "--gateway", "gw", file)
	key := "a/gw/20260105T100000Z-" + sum("ts,sensor,value\n2026-01-05T10:00:00Z,s1,abc\n")[:8] + ".csv"
	if code != cmdutil.ExitOK || !uploaded(key) {
		t.Fatalf("under a/: exit %d, %s uploaded %v\n%s%s", code, key, uploaded(key), out, errOut)
	}
	// The other route's table takes its time from a column at.
	code, out, errOut = run(t, env, false, "--key", "b/f.csv", file)
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, `"at"`) || uploaded("b/f.csv") {
		t.Errorf("under b/: exit %d, uploaded %v; want a refusal naming the column at\n%s%s", code, uploaded("b/f.csv"), out, errOut)
	}
	// The route's options win over the run's: under a/ the time column
	// is ts whatever --time-column says.
	if code, out, errOut := run(t, env, false, "--time-column", "at", "--key", "a/f2.csv", file); code != cmdutil.ExitOK || !uploaded("a/f2.csv") {
		t.Errorf("under a/ with --time-column at: exit %d\n%s%s", code, out, errOut)
	}
	// A key no route takes: refused with ingest's reason, not uploaded.
	code, out, errOut = run(t, env, false, "--key", "c/f.csv", file)
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, "Error: "+file+`: no route takes the key "c/f.csv" (routes: `+routes+")") || uploaded("c/f.csv") {
		t.Errorf("unrouted key: exit %d, uploaded %v\n%s%s", code, uploaded("c/f.csv"), out, errOut)
	}
	// Without --validate, routes do not stop an upload.
	if code, out, errOut := run(t, env, false, "--validate=false", "--key", "c/f.csv", file); code != cmdutil.ExitOK || !uploaded("c/f.csv") {
		t.Errorf("unrouted key without --validate: exit %d\n%s%s", code, out, errOut)
	}
	// Routes and a table: a usage error, nothing sent.
	code, out, errOut = run(t, env, false, "--table", "iot.a", "--key", "a/f3.csv", file)
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--table") || !strings.Contains(errOut, "both name tables") || uploaded("a/f3.csv") {
		t.Errorf("routes and --table: exit %d\n%s%s", code, out, errOut)
	}

	// A route whose options do not go together: a usage error naming it.
	bad := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_ROUTES": "a/**=iot.a;time-column=ts;column=ts:string"}
	code, out, errOut = run(t, bad, false, "--key", "a/f6.csv", file)
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "route a/**=iot.a;time-column=ts;column=ts:string: ") || uploaded("a/f6.csv") {
		t.Errorf("bad route options: exit %d\n%s%s", code, out, errOut)
	}

	// Once iot.a exists, its schema applies: value is a double there, so
	// "abc" is refused under a/ (the route's defaults alone let it pass).
	lake := filepath.Join(dir, "lake")
	sample := writeFile(t, filepath.Join(dir, "sample.csv"), "ts,sensor,value\n2026-01-05T10:00:00Z,s1,1.5\n", t0)
	ios, _, cerr := iostreams.Test()
	if code := commands.Execute(t.Context(), []string{"tables", "create", "iot.a", "--from-file", sample, "--time-column", "ts", "--warehouse", lake}, ios, getenv(nil)); code != cmdutil.ExitOK {
		t.Fatalf("tables create: exit %d\n%s", code, cerr)
	}
	withLake := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_ROUTES": routes, "TIMELAKE_WAREHOUSE": lake}
	code, out, errOut = run(t, withLake, false, "--key", "a/f4.csv", file)
	if code != cmdutil.ExitFailed || !strings.Contains(errOut, `column "value"`) || uploaded("a/f4.csv") {
		t.Errorf("under a/ with the table: exit %d, uploaded %v; want a refusal naming value\n%s%s", code, uploaded("a/f4.csv"), out, errOut)
	}
	// iot.b does not exist: its route's defaults still apply.
	if code, out, errOut := run(t, withLake, false, "--key", "b/f5.csv", file); code != cmdutil.ExitFailed || !strings.Contains(errOut, `"at"`) {
		t.Errorf("under b/ with the lake: exit %d\n%s%s", code, out, errOut)
	}
}

// TestFileLineNamesRowsSetAside: a file validated under skip-rows says
// how many rows ingest will set aside and the first one's reason.
func TestFileLineNamesRowsSetAside(t *testing.T) {
	r := upload.FileResult{File: "r.csv", Key: "gw/r.csv", Status: upload.Uploaded, Size: 10, RowsSetAside: 3,
		SetAside: []decode.RejectedRow{{Row: 17, Column: "temperature_c", Reason: `cannot parse "warm" as double`}}}
	want := `uploaded         r.csv -> gw/r.csv  10 bytes; 3 rows ingest sets aside if it reads the file with on-error skip-rows (it quarantines the file otherwise), the first row 17, column "temperature_c": cannot parse "warm" as double`
	if got := uploadcmd.FileLine(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r.SampledRows = 1000
	if got := uploadcmd.FileLine(r); !strings.Contains(got, "; 3 rows of the first 1000 checked ingest sets aside") {
		t.Errorf("a sample: %s", got)
	}
	r.RowsSetAside, r.SetAside = 0, nil
	if got := uploadcmd.FileLine(r); strings.Contains(got, "set aside") {
		t.Errorf("no row set aside: %s", got)
	}
}

// TestSummaryNamesTheSettingWaitedFor: files waiting to be complete are
// counted by the setting they wait for.
func TestSummaryNamesTheSettingWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		openEnd []bool
		want    string
	}{
		{[]bool{false}, "; 1 waiting to be complete (--min-age)"},
		{[]bool{true}, "; 1 waiting to be complete (--open-end-min-age)"},
		{[]bool{true, false, false}, "; 3 waiting to be complete (2 --min-age, 1 --open-end-min-age)"},
	} {
		rep := &upload.Report{Landing: "s3://l", Waiting: len(tc.openEnd)}
		for i, oe := range tc.openEnd {
			rep.Files = append(rep.Files, upload.FileResult{File: fmt.Sprintf("f%d.csv", i), Status: upload.Waiting, OpenEnd: oe})
		}
		if got := uploadcmd.Summary(rep); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%v: %s, want it to end in %q", tc.openEnd, got, tc.want)
		}
	}
}

// TestFileLineNamesOpenEnd: a spool file uploaded as it is with its end
// open (past --open-end-min-age) says so on its line.
func TestFileLineNamesOpenEnd(t *testing.T) {
	note := "its last line has no line end and it was not modified for 12m4s, past the open-end settle time of 10m0s: taken as it is (check its last row)"
	r := upload.FileResult{File: "/spool/d7.csv", Key: "gw/d7.csv", Status: upload.Uploaded, Size: 412, Deleted: true, OpenEnd: true, Reason: note}
	want := "uploaded         /spool/d7.csv -> gw/d7.csv  412 bytes; deleted; " + note
	if got := uploadcmd.FileLine(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
