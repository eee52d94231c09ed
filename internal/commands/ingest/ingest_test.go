package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

func getenv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// complete is the environment of tests whose landing files are complete
// when they are written: no settle time.
var complete = map[string]string{"TIMELAKE_SETTLE_TIME": "0"}

// TestSettingsPrecedence checks flags > environment > --env-file, and that
// the env file in the shell form of the public docs is read.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	if err := os.WriteFile(envFile, []byte(`# production settings
TIMELAKE_WAREHOUSE=`+filepath.Join(dir, "lake-from-file")+`
TIMELAKE_TABLE='iot.from_file'
export LANDING_BUCKET="`+filepath.Join(dir, "landing-from-file")+`"
TIMELAKE_SERIES_KEY=device_id
TIMELAKE_MAX_FILES=7
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		table     string
		landing   string
		warehouse string
		maxFiles  int
	}{
		{"env file only", []string{"--env-file", envFile}, nil,
			"iot.from_file", "landing-from-file", "lake-from-file", 7},
		{"environment beats env file", []string{"--env-file", envFile}, map[string]string{"TIMELAKE_TABLE": "iot.from_env"},
			"iot.from_env", "landing-from-file", "lake-from-file", 7},
		{"flag beats environment", []string{"--env-file", envFile, "--table", "iot.from_flag", "--max-files", "2"},
			map[string]string{"TIMELAKE_TABLE": "iot.from_env", "TIMELAKE_MAX_FILES": "9"},
			"iot.from_flag", "landing-from-file", "lake-from-file", 2},
		{"env file named by TIMELAKE_ENV_FILE", nil, map[string]string{"TIMELAKE_ENV_FILE": envFile},
			"iot.from_file", "landing-from-file", "lake-from-file", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, errOut := iostreams.Test()
			var got *ingestcmd.Options
			f := &cmdutil.Factory{IO: ios, Getenv: getenv(tc.env)}
			root := commands.NewRootCmd(f)
			for _, c := range root.Commands() {
				if c.Name() == "ingest" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(ingestcmd.NewCmdIngest(f, func(_ context.Context, o *ingestcmd.Options) error { got = o; return nil }))
			root.SetArgs(append([]string{"ingest"}, tc.args...))
			if err := root.Execute(); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			c := got.Config
			if c.Table.String() != tc.table || !strings.HasSuffix(c.Landing.URI(), tc.landing) ||
				!strings.HasSuffix(c.Lake.URI(), tc.warehouse) || c.MaxFiles != tc.maxFiles ||
				strings.Join(c.SeriesKey, ",") != "device_id" || c.Partition != "day" || c.LeaseTTL != 10*time.Minute {
				t.Fatalf("config: table %s landing %s lake %s max %d series %v partition %s ttl %s",
					c.Table, c.Landing.URI(), c.Lake.URI(), c.MaxFiles, c.SeriesKey, c.Partition, c.LeaseTTL)
			}
		})
	}
}

func TestHelpNamesTheVariables(t *testing.T) {
	ios, out, _ := iostreams.Test()
	code := commands.Execute(context.Background(), []string{"ingest", "--help"}, ios, getenv(nil))
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, v := range []string{"LANDING_BUCKET", "TIMELAKE_WAREHOUSE", "TIMELAKE_TABLE", "TIMELAKE_TIME_COLUMN",
		"TIMELAKE_SERIES_KEY", "TIMELAKE_PARTITION", "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_ENDPOINT", "AWS_REGION", "TIMELAKE_ENV_FILE"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("help does not name %s", v)
		}
	}
}

func TestOutputLines(t *testing.T) {
	for _, tc := range []struct {
		r    ingest.FileResult
		want string
	}{
		{ingest.FileResult{Key: "gw/a.csv", Status: ingest.Loaded, Rows: 300, SnapshotID: 42}, "loaded          gw/a.csv  300 rows  snapshot 42"},
		{ingest.FileResult{Key: "gw/d7.csv", Status: ingest.Loaded, Rows: 4, SnapshotID: 43, OpenEnd: true,
			Reason: "its last line has no line end and it was not modified for 12m0s, past the open-end settle time of 10m0s: taken as it is (check its last row)"},
			"loaded          gw/d7.csv  4 rows  snapshot 43; its last line has no line end and it was not modified for 12m0s, past the open-end settle time of 10m0s: taken as it is (check its last row)"},
		{ingest.FileResult{Key: "gw/a.csv", Status: ingest.AlreadyLoaded, SnapshotID: 42}, "already loaded  gw/a.csv  snapshot 42, deleted"},
		{ingest.FileResult{Key: "gw/a.csv", Status: ingest.AlreadyLoaded, SnapshotID: 42, Reason: "snapshot 42; a run without --dry-run deletes it"},
			"already loaded  gw/a.csv  snapshot 42; a run without --dry-run deletes it"},
		{ingest.FileResult{Key: "gw/b.csv", Status: ingest.Quarantined, QuarantinedTo: "_rejected/gw/b.csv", Reason: "gw/b.csv: row 2: bad"},
			"quarantined     gw/b.csv  -> _rejected/gw/b.csv: gw/b.csv: row 2: bad"},
		{ingest.FileResult{Key: "gw/c.csv", Status: ingest.WouldLoad, Size: 10}, "would load      gw/c.csv  10 bytes"},
		{ingest.FileResult{Key: "site-berlin/c.csv", Status: ingest.WouldLoad, Size: 10, Profile: "berlin"}, "would load      site-berlin/c.csv  10 bytes; profile berlin"},
		{ingest.FileResult{Key: "site-berlin/c.tsv", Status: ingest.WouldLoad, Size: 10, Reason: "the key matches two source profiles: berlin (site-berlin/) and tsv (**/*.tsv)"},
			"would load      site-berlin/c.tsv  10 bytes; would be quarantined: the key matches two source profiles: berlin (site-berlin/) and tsv (**/*.tsv)"},
	} {
		if got := lakecmd.FileLine(tc.r); got != tc.want {
			t.Errorf("FileLine = %q\nwant       %q", got, tc.want)
		}
	}
}

func TestExecuteExitCodes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(landing, "gw", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.csv", "time,v\n2026-01-05T10:00:00Z,1\n")
	write("b.csv", "time,v\n2026-01-05T10:00:00Z\n")
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "t"}
	ios, out, errOut := iostreams.Test()
	if code := commands.Execute(context.Background(), args, ios, getenv(complete)); code != cmdutil.ExitPartial {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitPartial, out, errOut)
	}
	ios, out, errOut = iostreams.Test()
	if code := commands.Execute(context.Background(), append(args, "--json"), ios, getenv(complete)); code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.HasPrefix(out.String(), "{") || errOut.Len() != 0 {
		t.Fatalf("json run: stdout %q stderr %q", out, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	write("c.csv", "time,v\n2026-01-05T11:00:00Z,1\n")
	ios, _, errOut = iostreams.Test()
	if code := commands.Execute(ctx, args, ios, getenv(complete)); code != cmdutil.ExitCancelled {
		t.Fatalf("cancelled run: exit %d\n%s", code, errOut)
	}
}

func TestSettingsErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badEnv := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(badEnv, []byte("TIMELAKE_TABLE=iot.readings\nAWS_SECRET_ACCESS_KEY=\"tsec_SUPERSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sizeEnv := filepath.Join(dir, "size.env")
	if err := os.WriteFile(sizeEnv, []byte("LANDING_BUCKET="+filepath.Join(dir, "l")+"\nTIMELAKE_WAREHOUSE="+filepath.Join(dir, "w")+
		"\nTIMELAKE_TABLE=a.b\nTIMELAKE_MEMORY_BUDGET=lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
		env  map[string]string
	}{
		{"number from a variable", []string{"ingest", "--landing", filepath.Join(dir, "l"), "--warehouse", filepath.Join(dir, "w"), "--table", "a.b"},
			`TIMELAKE_MAX_FILES (environment): expected a whole number >= 0, got "abc"`, map[string]string{"TIMELAKE_MAX_FILES": "abc"}},
		{"size from the env file", []string{"ingest", "--env-file", sizeEnv}, `TIMELAKE_MEMORY_BUDGET (env file): "lots" is not a size`, nil},
		{"warehouse inside landing", []string{"ingest", "--landing", dir, "--warehouse", filepath.Join(dir, "lake"), "--table", "a.b"}, "overlap", nil},
		{"landing inside warehouse", []string{"ingest", "--landing", filepath.Join(dir, "lake", "in"), "--warehouse", filepath.Join(dir, "lake"), "--table", "a.b"}, "overlap", nil},
		{"bad quarantine prefix", []string{"ingest", "--landing", filepath.Join(dir, "l"), "--warehouse", filepath.Join(dir, "w"), "--table", "a.b", "--quarantine-prefix", "../out/"}, "quarantine-prefix", nil},
		{"env file syntax", []string{"ingest", "--env-file", badEnv}, "line 2", nil},
		{"missing env file", []string{"ingest", "--env-file", filepath.Join(dir, "nope.env")}, "nope.env", nil},
		{"endpoint without scheme", []string{"ingest", "--landing", "my-landing", "--warehouse", filepath.Join(dir, "w"), "--table", "a.b", "--endpoint", "127.0.0.1:9000"}, "invalid S3 endpoint", nil},
		{"time column typed by --column", []string{"ingest", "--landing", filepath.Join(dir, "l"), "--warehouse", filepath.Join(dir, "w"), "--table", "a.b", "--time-column", "ts", "--column", "ts:string"},
			`--column ts:string: "ts" is the time column, which is always timestamptz`, nil},
		{"memory budget", []string{"ingest", "--landing", filepath.Join(dir, "l"), "--warehouse", filepath.Join(dir, "w"), "--table", "a.b", "--memory-budget", "lots"}, "memory-budget", nil},
		{"one name for both source columns", []string{"ingest", "--landing", filepath.Join(dir, "l"), "--warehouse", filepath.Join(dir, "w"), "--table", "a.b", "--source-column", "_src", "--load-time-column", "_src"},
			`--source-column and --load-time-column are both "_src"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, out, errOut := iostreams.Test()
			code := commands.Execute(context.Background(), tc.args, ios, getenv(tc.env))
			if code != cmdutil.ExitUsage || !strings.Contains(errOut.String(), tc.msg) {
				t.Fatalf("exit %d, want %d with %q\nstderr: %s", code, cmdutil.ExitUsage, tc.msg, errOut)
			}
			if strings.Contains(out.String()+errOut.String(), "SUPERSECRET") {
				t.Fatal("a secret was printed")
			}
		})
	}
}

// A --column that types the inferred time column stops the run that would
// create the table with a usage error; the file stays.
func TestColumnTypingTheTimeColumnIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, "gw", "a.csv"), []byte("time,v\n2026-01-05T10:00:00Z,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, out, errOut := iostreams.Test()
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "t", "--column", "time:string"}
	if code := commands.Execute(context.Background(), args, ios, getenv(complete)); code != cmdutil.ExitUsage ||
		!strings.Contains(errOut.String(), `--column time:string: "time" is the time column, which is always timestamptz`) {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(landing, "gw", "a.csv")); err != nil {
		t.Errorf("the file left the landing folder: %v", err)
	}
}

// A source column the table cannot fill (its time column here) stops the
// run with a usage error before a file is taken; the file stays.
func TestSourceColumnTheTableCannotFillIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(landing, "gw", name), []byte("time,v\n2026-01-05T10:00:00Z,1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "t"}
	write("a.csv")
	ios, out, errOut := iostreams.Test()
	if code := commands.Execute(context.Background(), args, ios, getenv(complete)); code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	write("b.csv")
	ios, out, errOut = iostreams.Test()
	if code := commands.Execute(context.Background(), append(args, "--source-column", "time"), ios, getenv(complete)); code != cmdutil.ExitUsage ||
		!strings.Contains(errOut.String(), `column "time", chosen to hold each row's landing key (--source-column or timelake.source-column), is the table's time column`) {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitUsage, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(landing, "gw", "b.csv")); err != nil {
		t.Errorf("the file left the landing folder: %v", err)
	}
}

// TestRunOutput checks ingest's output for a cron log: in a pipe every
// line starts with its time (RFC 3339, UTC), the summary names the run's
// start and duration, and --json is one line with started_at; on a
// terminal lines carry no time.
func TestRunOutput(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(landing, "gw", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	exec := func(tty bool, extra ...string) (string, string) {
		t.Helper()
		clock := start
		ios, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		f := &cmdutil.Factory{IO: ios, Getenv: getenv(complete)}
		root := commands.NewRootCmd(f)
		for _, c := range root.Commands() {
			if c.Name() == "ingest" {
				root.RemoveCommand(c)
			}
		}
		root.AddCommand(ingestcmd.NewCmdIngest(f, func(ctx context.Context, o *ingestcmd.Options) error {
			o.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
			return ingestcmd.Run(ctx, o)
		}))
		root.SetArgs(append([]string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "iot.t"}, extra...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		return out.String(), errOut.String()
	}

	write("a.csv", "time,v\n2026-01-05T10:00:00Z,1\n")
	out, _ := exec(false)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	stamp := regexp.MustCompile(`^2026-01-05T09:00:0\dZ `)
	for _, l := range lines {
		if !stamp.MatchString(l) {
			t.Errorf("line without a UTC time: %q", l)
		}
	}
	if !strings.HasPrefix(lines[0], "2026-01-05T09:00:02Z created table iot.t") ||
		!regexp.MustCompile(`Z loaded +gw/a.csv  1 row `).MatchString(out) {
		t.Errorf("output:\n%s", out)
	}
	summary := regexp.MustCompile(`Z iot.t: 1 loaded \(1 row\), 0 already loaded, 0 quarantined; current snapshot \d+ \(metadata v\d+\); ` +
		`run started 2026-01-05T09:00:01Z, took \d+\.\ds$`)
	if !summary.MatchString(lines[len(lines)-1]) {
		t.Errorf("summary %q does not name the start and duration", lines[len(lines)-1])
	}

	write("b.csv", "time,v\n2026-01-05T11:00:00Z,2\n")
	out, _ = exec(true)
	if !strings.HasPrefix(out, "loaded          gw/b.csv  1 row ") || !strings.Contains(out, "; run started 2026-01-05T09:00:01Z, took ") {
		t.Errorf("terminal output:\n%s", out)
	}

	write("c.csv", "time,v\n2026-01-05T12:00:00Z,3\n")
	out, _ = exec(false, "--json")
	var rep struct {
		StartedAt time.Time `json:"started_at"`
		Loaded    int       `json:"loaded"`
		Seconds   float64   `json:"seconds"`
	}
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Loaded != 1 ||
		!rep.StartedAt.Equal(start.Add(time.Second)) || rep.StartedAt.Location() != time.UTC {
		t.Errorf("--json in a pipe: %+v\n%s", rep, out)
	}

	out, _ = exec(false)
	if !regexp.MustCompile(`^2026-01-05T09:00:02Z iot.t: nothing to load in .*; run started 2026-01-05T09:00:01Z, took \d+\.\ds\n$`).MatchString(out) {
		t.Errorf("empty run: %q", out)
	}
}

// TestTimedErrors checks that ingest's final error line in a pipe starts
// with its time, like its other lines.
func TestTimedErrors(t *testing.T) {
	ios, _, errOut := iostreams.Test()
	code := commands.Execute(context.Background(), []string{"ingest"}, ios, getenv(map[string]string{"TIMELAKE_MAX_FILES": "x"}))
	if code != cmdutil.ExitUsage || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ Error: missing setting: pass --landing`).MatchString(errOut.String()) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestLeaseAndPlanOutput: a stale lease makes the run exit 11 with who
// holds it and how to break it; --break-lease says whose lease it broke
// and since when, and loads; a dry run on a missing table says it would
// create it, on its first line; a file still being written is reported as
// waiting.
func TestLeaseAndPlanOutput(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	old := time.Now().Add(-time.Minute)
	write := func(name, body string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(landing, "gw", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("a.csv", "time,v\n2026-01-05T10:00:00Z,1.5\n", old)
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "iot.t"}
	exec := func(extra ...string) (cmdutil.ExitCode, string, string) {
		ios, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(true)
		code := commands.Execute(context.Background(), append(args, extra...), ios, getenv(nil))
		return code, out.String(), errOut.String()
	}

	code, out, errOut := exec("--dry-run")
	if code != cmdutil.ExitOK || !strings.HasPrefix(out, "table iot.t does not exist in "+filepath.Join(dir, "lake")+": this run would create it") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}

	lease := `{"holder":"poller-1:4242:0a1b2c","host":"poller-1","pid":4242,"prefix":"","acquired":"2026-01-05T09:00:00Z","expires":"2999-01-01T00:00:00Z"}`
	if err := os.MkdirAll(filepath.Join(landing, "_timelake", "lease"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, "_timelake", "lease", "iot.t.json"), []byte(lease), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = exec()
	if code != cmdutil.ExitLeaseHeld || !strings.Contains(errOut, "Error: poller-1:4242:0a1b2c (host poller-1, pid 4242) holds the lease _timelake/lease/iot.t.json since 2026-01-05T09:00:00Z until 2999-01-01T00:00:00Z (if that run died, its lease expires by itself at 2999-01-01T00:00:00Z)") ||
		strings.Contains(errOut, "--break-lease") {
		t.Fatalf("held lease: exit %d\n%s", code, errOut)
	}

	write("b.csv", "time,v\n2026-01-05T11:00:00Z,2.5\n", old)
	f, err := os.OpenFile(filepath.Join(landing, "gw", "c.csv"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a writer that keeps appending
		fmt.Fprint(f, "time,v\n")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				fmt.Fprintf(f, "2026-01-05T12:%02d:00Z,%d.5\n", i%60, i)
			}
		}
	}()
	code, out, errOut = exec("--break-lease")
	if code != cmdutil.ExitOK {
		t.Fatalf("--break-lease: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], `broke lease _timelake/lease/iot.t.json of poller-1:4242:0a1b2c (landing prefix ""): held since 2026-01-05T09:00:00Z, valid until 2999-01-01T00:00:00Z`) ||
		!strings.HasPrefix(lines[1], "created table iot.t") {
		t.Fatalf("--break-lease output:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^waiting +gw/c.csv  modified .* ago, within the settle time of 30s: it may still be being written; a later run loads it$`).MatchString(out) ||
		!strings.Contains(out, ", 1 waiting for the next run") {
		t.Fatalf("the file being written is not reported as waiting:\n%s", out)
	}
}

// TestStorageErrorsAreExplained: a missing lake bucket fails the run (not
// "nothing to load"), with env check's reason and a Fix: line.
func TestStorageErrorsAreExplained(t *testing.T) {
	srv := s3test.FromEnv(t)
	env := map[string]string{"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region,
		"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}
	ios, out, errOut := iostreams.Test()
	landing := t.TempDir()
	code := commands.Execute(context.Background(), []string{"ingest", "--landing", landing,
		"--warehouse", "s3://tl-no-such-lake-bucket/warehouse", "--table", "iot.t"}, ios, getenv(env))
	if code != cmdutil.ExitFailed || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "Error: lake bucket s3://tl-no-such-lake-bucket/warehouse: bucket tl-no-such-lake-bucket does not exist\n") ||
		!strings.Contains(errOut.String(), "Fix: create bucket tl-no-such-lake-bucket (docs/tigris.md) or fix --warehouse\n") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	ios, _, errOut = iostreams.Test()
	commands.Execute(context.Background(), []string{"ingest", "--json", "--landing", landing,
		"--warehouse", "s3://tl-no-such-lake-bucket/warehouse", "--table", "iot.t"}, ios, getenv(env))
	if !strings.Contains(errOut.String(), `"fix":"create bucket tl-no-such-lake-bucket (docs/tigris.md) or fix --warehouse"`) {
		t.Fatalf("the JSON exit error has no fix: %s", errOut)
	}
}

// TestPreviousRunStillWorking: a run that finds the previous ingest of the
// same table and prefix still holding the lease says so on one line (no
// Error:) and exits 12; with --json the report names the lease; a serve
// holding the table is an error (exit 11) that says a serve loads it.
func TestPreviousRunStillWorking(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	leaseFile := filepath.Join(landing, "_timelake", "lease", "iot.t.json")
	if err := os.MkdirAll(filepath.Dir(leaseFile), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "iot.t"}
	exec := func(kind string, extra ...string) (cmdutil.ExitCode, string, string) {
		t.Helper()
		lease := `{"holder":"poller-1:4242:0a1b2c","kind":"` + kind + `","host":"poller-1","pid":4242,"prefix":"","acquired":"2026-01-05T09:00:00Z","expires":"2999-01-01T00:00:00Z"}`
		if err := os.WriteFile(leaseFile, []byte(lease), 0o644); err != nil {
			t.Fatal(err)
		}
		ios, out, errOut := iostreams.Test()
		code := commands.Execute(context.Background(), append(args, extra...), ios, getenv(nil))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := exec("ingest")
	if code != cmdutil.ExitBusy || errOut != "" ||
		!regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ iot\.t: the previous run is still working: ingest poller-1:4242:0a1b2c \(host poller-1, pid 4242\) holds the lease _timelake/lease/iot\.t\.json since 2026-01-05T09:00:00Z, renewed until 2999-01-01T00:00:00Z; this run did nothing \(if that run died, its lease expires by itself at 2999-01-01T00:00:00Z\); run started \S+\n$`).MatchString(out) {
		t.Errorf("previous run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = exec("ingest", "--json")
	var rep struct {
		StillWorking *struct{ Holder, Kind, Host string } `json:"still_working"`
		Files        []any                                `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != cmdutil.ExitBusy || errOut != "" || rep.StillWorking == nil ||
		rep.StillWorking.Kind != "ingest" || rep.StillWorking.Host != "poller-1" || rep.Files == nil {
		t.Errorf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	code, out, errOut = exec("serve")
	if code != cmdutil.ExitLeaseHeld || out != "" || !strings.Contains(errOut, "Error: serve poller-1:4242:0a1b2c (host poller-1, pid 4242) holds the lease") ||
		!strings.Contains(errOut, "a serve loads this table, so ingest does not") || strings.Contains(errOut, "--break-lease") {
		t.Errorf("serve: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestMaintenanceLine: the maintenance line of a run says what it left
// and why, and a round with nothing to do is not printed.
func TestMaintenanceLine(t *testing.T) {
	next, last := time.Date(2026, 1, 5, 11, 0, 0, 0, time.UTC), time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		m    lake.MaintainReport
		want string
	}{
		{lake.MaintainReport{Expired: lake.ExpireResult{Expired: make([]lake.ExpiredSnapshot, 2), Remembered: 2},
			Compacted:   lake.CompactResult{Version: 3, Idle: "every data file is at least 8MiB (timelake.target-file-size)"},
			OrphansNext: next, OrphansCheckedAt: last, Took: 100 * time.Millisecond},
			"maintenance     expired 2 snapshots (2 keys into the load history, 0 files deleted) in 0.1s; nothing to compact: every data file is at least 8MiB (timelake.target-file-size); orphan files looked for next at 2026-01-05T11:00:00Z (last at 2026-01-05T10:00:00Z)"},
		{lake.MaintainReport{Compacted: lake.CompactResult{Groups: []lake.CompactionGroup{{FilesIn: 4, BytesIn: 4096, FilesOut: 1}}, Deferred: 3},
			Pending: true, Took: 10 * time.Second},
			"maintenance     compacted 4 files (4.0 KiB) into 1 in 10.0s; more next run (the budget ran out); compaction left 3 groups for the next run (its bound on the bytes one round rewrites is spent, or their rewrite would not end within the budget)"},
		{lake.MaintainReport{Expired: lake.ExpireResult{Expired: make([]lake.ExpiredSnapshot, 1), Remembered: 1, FilesDeleted: 1},
			Compacted: lake.CompactResult{Groups: []lake.CompactionGroup{{FilesIn: 2, BytesIn: 2048, FilesOut: 1}}, Deferred: 1},
			Orphans:   &lake.OrphanResult{Files: []string{"data/orphan.parquet"}}, Took: time.Second},
			"maintenance     compacted 2 files (2.0 KiB) into 1, expired 1 snapshot (1 key into the load history, 1 file deleted), removed 1 orphan file in 1.0s; compaction left 1 group for the next run (its bound on the bytes one round rewrites is spent, or their rewrite would not end within the budget)"},
		{lake.MaintainReport{Compacted: lake.CompactResult{Deferred: 1}, Pending: true, Took: 100 * time.Millisecond},
			"maintenance     nothing done in 0.1s; more next run (the budget ran out); compaction left 1 group whose rewrite would not end within the budget: timelake tables maintain with a longer --budget (or none) rewrites them"},
		{lake.MaintainReport{Compacted: lake.CompactResult{Skipped: "the table has row-level delete files"}, Took: 100 * time.Millisecond},
			"maintenance     nothing to do in 0.1s; compaction skipped: the table has row-level delete files"},
	} {
		if !tc.m.Notable() {
			t.Errorf("%+v is not printed", tc.m)
		}
		if got := lakecmd.MaintenanceLine(&tc.m); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if m := (lake.MaintainReport{Compacted: lake.CompactResult{Version: 3, Idle: "x"}, OrphansNext: next}); m.Notable() {
		t.Error("a round with nothing to do is printed")
	}
}

// TestFailedLine: a file that failed says why on its line, and the summary
// counts it.
func TestFailedLine(t *testing.T) {
	r := ingest.FileResult{Key: "gw/big.csv", Status: ingest.Failed, Reason: "gw/big.csv (1.0 MiB) does not fit in the download folder /tmp (0.0 MiB free)"}
	if got, want := lakecmd.FileLine(r), "failed          gw/big.csv  gw/big.csv (1.0 MiB) does not fit"; !strings.HasPrefix(got, want) {
		t.Errorf("line %q, want it to start with %q", got, want)
	}
	rep := &ingest.Report{Table: "iot.t", Files: []ingest.FileResult{r}, Failed: 1}
	if got := ingestcmd.Summary(rep, time.Now()); !strings.Contains(got, "0 quarantined, 1 failed (left for the next run)") {
		t.Errorf("summary %q", got)
	}
}

// TestGatewayFoldersKept: a run that empties a gateway's folder two levels
// down (site-berlin/gw-7/) keeps it, as the gateway writes into it; a date
// folder below a gateway's is removed.
func TestGatewayFoldersKept(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	for _, p := range []string{"site-berlin/gw-7/a.csv", "gw-8/2026/01/05/b.csv"} {
		full := filepath.Join(landing, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("time,v\n2026-01-05T10:00:00Z,1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ios, out, errOut := iostreams.Test()
	args := []string{"ingest", "--landing", landing, "--warehouse", filepath.Join(dir, "lake"), "--table", "iot.t"}
	if code := commands.Execute(context.Background(), args, ios, getenv(complete)); code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for p, kept := range map[string]bool{"site-berlin/gw-7": true, "gw-8/2026": true, "gw-8/2026/01": false} {
		_, err := os.Stat(filepath.Join(landing, filepath.FromSlash(p)))
		if (err == nil) != kept {
			t.Errorf("%s: kept %v (%v), want %v", p, err == nil, err, kept)
		}
	}
}

// TestExpiryLine: the line of the snapshot expiry between a run's
// commits, and of one that stopped.
func TestExpiryLine(t *testing.T) {
	e := &ingest.RunExpiry{Rounds: 3, SnapshotsExpired: 1500, KeysRemembered: 1500, FilesDeleted: 3000, Seconds: 4.25}
	want := "expiry          expired 1500 snapshots during the run (1500 keys into the load history, 3000 files deleted) in 4.2s"
	if got := ingestcmd.ExpiryLine(e); got != want {
		t.Fatalf("line:\n%s\nwant:\n%s", got, want)
	}
	e.Error = "commit failed"
	if got := ingestcmd.ExpiryLine(e); !strings.HasSuffix(got, "; stopped: commit failed (the loaded files are committed; the maintenance after the run goes on)") {
		t.Fatalf("line of a stopped expiry: %s", got)
	}
}
