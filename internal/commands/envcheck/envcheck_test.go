package envcheck_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// result is one run of the CLI.
type result struct {
	code        cmdutil.ExitCode
	out, errOut string
	report      envcheck.Report // parsed when --json was given
}

// execute runs `timelake args...` with env as the whole environment.
func execute(t *testing.T, env map[string]string, tty bool, args ...string) result {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := commands.Execute(ctx, args, ios, getenv)
	r := result{code: code, out: out.String(), errOut: errOut.String()}
	for _, a := range args {
		if a == "--json" && strings.HasPrefix(r.out, "{") {
			if err := json.Unmarshal(out.Bytes(), &r.report); err != nil {
				t.Fatalf("stdout is not a JSON report: %v\n%s", err, r.out)
			}
		}
	}
	return r
}

// checkJSON runs `env check --json` and parses the report.
func checkJSON(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return execute(t, env, false, append([]string{"env", "check", "--json"}, args...)...)
}

func (r result) check(t *testing.T, name string) envcheck.Check {
	t.Helper()
	for _, c := range r.report.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in report:\n%s", name, r.out)
	return envcheck.Check{}
}

// expect asserts the result of each named check, and that detail contains
// each of the given substrings.
func (r result) expect(t *testing.T, name string, want envcheck.Result, contains ...string) envcheck.Check {
	t.Helper()
	c := r.check(t, name)
	if c.Result != want {
		t.Errorf("check %s = %s (%s; fix: %s), want %s", name, c.Result, c.Detail, c.Fix, want)
	}
	for _, s := range contains {
		if !strings.Contains(c.Detail+" | "+c.Fix, s) {
			t.Errorf("check %s: %q not in detail %q / fix %q", name, s, c.Detail, c.Fix)
		}
	}
	return c
}

// noFailures asserts that no check failed or was skipped, except skips
// named in allowSkip and the catalog checks of a run without one.
func (r result) noFailures(t *testing.T, allowSkip ...string) {
	t.Helper()
	for _, c := range r.report.Checks {
		switch {
		case c.Result == envcheck.Fail, c.Result == envcheck.Warn:
			t.Errorf("check %s: %s: %s (fix: %s)", c.Name, c.Result, c.Detail, c.Fix)
		case c.Result == envcheck.Skip && c.Detail == "not used: --catalog none":
		case c.Result == envcheck.Skip && !contains(allowSkip, c.Name):
			t.Errorf("check %s skipped: %s", c.Name, c.Detail)
		}
	}
	if r.code != cmdutil.ExitOK {
		t.Errorf("exit code %d, want 0; stderr: %s", r.code, r.errOut)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var localOnlySkips = []string{envcheck.CheckEndpoint, envcheck.CheckRegion, envcheck.CheckCredentials,
	envcheck.CheckConnect, envcheck.CheckClock, envcheck.CheckAuth}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// createTable creates iot.readings in l with n rows (none when n is 0).
func createTable(t *testing.T, l *lake.Lake, n int, props map[string]string) {
	t.Helper()
	ctx := context.Background()
	name := lake.TableName{Namespace: "iot", Name: "readings"}
	tbl, err := l.CreateTable(ctx, name, testSchema, lake.CreateSpec{TimeColumn: "time", Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	start := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(start.Add(time.Duration(i) * time.Minute).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append("d1")
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tbl.Append(ctx, "gateway-1/20260105T1000.csv", []arrow.RecordBatch{rec}, lake.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

func localEnv(t *testing.T) (map[string]string, string, string) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "spool", "landing")
	warehouse := filepath.Join(dir, "data", "lake")
	return map[string]string{
		"LANDING_BUCKET":     landing,
		"TIMELAKE_WAREHOUSE": warehouse,
		"TIMELAKE_TABLE":     "iot.readings",
	}, landing, warehouse
}

func TestCheckLocalFoldersThatDoNotExistYet(t *testing.T) {
	env, landing, warehouse := localEnv(t)
	r := checkJSON(t, env)
	r.noFailures(t, localOnlySkips...)
	r.expect(t, envcheck.CheckLandingBucket, envcheck.OK, "can be created", "put/get/delete")
	r.expect(t, envcheck.CheckLakeCommit, envcheck.OK, "412")
	r.expect(t, envcheck.CheckTable, envcheck.OK, "does not exist yet")
	// The check leaves nothing behind, not even the folders it tried.
	for _, d := range []string{landing, filepath.Dir(landing), warehouse, filepath.Dir(warehouse)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left behind (err %v)", d, err)
		}
	}
	if !r.report.OK || r.report.Version == "" {
		t.Errorf("report ok=%v version=%q", r.report.OK, r.report.Version)
	}
}

func TestCheckLocalTable(t *testing.T) {
	tests := []struct {
		name    string
		rows    int
		props   map[string]string
		want    envcheck.Result
		code    cmdutil.ExitCode
		contain []string
	}{
		{"empty table", 0, nil, envcheck.OK, 0, []string{"metadata v1", "no snapshot yet"}},
		{"with rows", 5, nil, envcheck.OK, 0, []string{"metadata v2", "5 rows in 1 data files", "format-version 1 (unset)"}},
		{"newer format", 0, map[string]string{lake.PropFormatVersion: "2.0.0"}, envcheck.Fail, cmdutil.ExitFailed,
			[]string{"newer than this timelake", "install a newer timelake"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, landing, warehouse := localEnv(t)
			if err := os.MkdirAll(landing, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(landing, "a.csv"), []byte("time,v\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := lake.Open(context.Background(), warehouse, lake.Options{})
			if err != nil {
				t.Fatal(err)
			}
			createTableAllowingFormat(t, l, tt.rows, tt.props)
			r := checkJSON(t, env)
			r.expect(t, envcheck.CheckTable, tt.want, tt.contain...)
			r.expect(t, envcheck.CheckLandingBucket, envcheck.OK, "1 file waits")
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d", r.code, tt.code)
			}
		})
	}
}

// createTableAllowingFormat is createTable, but a table with a newer
// timelake.format-version is expected to be refused on load.
func createTableAllowingFormat(t *testing.T, l *lake.Lake, n int, props map[string]string) {
	t.Helper()
	if props == nil {
		createTable(t, l, n, nil)
		return
	}
	name := lake.TableName{Namespace: "iot", Name: "readings"}
	if _, err := l.CreateTable(context.Background(), name, testSchema, lake.CreateSpec{TimeColumn: "time", Properties: props}); err == nil {
		t.Fatal("CreateTable accepted a newer format")
	}
}

func TestCheckSettings(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check string
		want  envcheck.Result
		text  []string
	}{
		{"nothing set", map[string]string{}, envcheck.CheckWarehouse, envcheck.Fail, []string{"not set", "TIMELAKE_WAREHOUSE="}},
		{"nothing set", map[string]string{}, envcheck.CheckTableName, envcheck.Fail, []string{"not set", "TIMELAKE_TABLE="}},
		{"nothing set", map[string]string{}, envcheck.CheckLanding, envcheck.Fail, []string{"not set", "LANDING_BUCKET="}},
		{"bad table", map[string]string{"TIMELAKE_TABLE": "iot.read*ings"}, envcheck.CheckTableName, envcheck.Fail,
			[]string{"invalid table name", "from TIMELAKE_TABLE (environment)"}},
		{"bad bucket", map[string]string{"LANDING_BUCKET": "s3://Bad_Bucket"}, envcheck.CheckLanding, envcheck.Fail,
			[]string{"invalid bucket name", "from LANDING_BUCKET (environment)"}},
		{"warehouse inside landing", map[string]string{"LANDING_BUCKET": "s3://lake", "TIMELAKE_WAREHOUSE": "s3://lake/warehouse"},
			envcheck.CheckLanding, envcheck.Fail, []string{"lies inside it"}},
		{"endpoint source", map[string]string{"AWS_ENDPOINT": "https://t3.storage.dev", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckEndpoint, envcheck.OK, []string{"https://t3.storage.dev from AWS_ENDPOINT (environment) (Tigris)"}},
		{"endpoint precedence", map[string]string{"AWS_ENDPOINT": "https://t3.storage.dev", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1",
			"LANDING_BUCKET": "b-landing"}, envcheck.CheckEndpoint, envcheck.OK, []string{"from AWS_ENDPOINT_URL_S3 (environment)"}},
		{"endpoint not a URL", map[string]string{"AWS_ENDPOINT": "t3.storage.dev", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckEndpoint, envcheck.Fail, []string{"not an http(s) URL"}},
		{"plain http remote", map[string]string{"AWS_ENDPOINT": "http://s3.example.com", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckEndpoint, envcheck.Warn, []string{"plain HTTP"}},
		{"tigris region", map[string]string{"AWS_ENDPOINT": "https://t3.storage.dev", "AWS_REGION": "us-east-1", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckRegion, envcheck.Warn, []string{"Tigris uses auto", "AWS_REGION=auto"}},
		{"half static keys", map[string]string{"AWS_ACCESS_KEY_ID": "tid_abcdefgh", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckCredentials, envcheck.Fail, []string{"AWS_SECRET_ACCESS_KEY is not set"}},
		{"profile", map[string]string{"AWS_PROFILE": "lake", "LANDING_BUCKET": "b-landing"},
			envcheck.CheckCredentials, envcheck.Fail, []string{`profile "lake" from AWS_PROFILE (environment)`}},
		{"local only", map[string]string{"LANDING_BUCKET": "./landing", "TIMELAKE_WAREHOUSE": "./lake"},
			envcheck.CheckEndpoint, envcheck.Skip, []string{"landing and warehouse are local folders"}},
		{"every other value valid", map[string]string{"TIMELAKE_MAX_FILES": "10", "TIMELAKE_SPOOL_MIN_AGE": "30s"},
			envcheck.CheckSettings, envcheck.OK, []string{"other settings valid"}},
		{"bad number", map[string]string{"TIMELAKE_MAX_FILES": "abc"}, envcheck.CheckSettings, envcheck.Fail,
			[]string{`TIMELAKE_MAX_FILES (environment): expected a whole number >= 0, got "abc"`, "docs/configuration.md"}},
		{"bad values of other commands", map[string]string{"TIMELAKE_UPLOAD_PARALLEL": "0", "TIMELAKE_EXPIRE_OLDER_THAN": "soon"},
			envcheck.CheckSettings, envcheck.Fail, []string{"TIMELAKE_UPLOAD_PARALLEL (environment)", "TIMELAKE_EXPIRE_OLDER_THAN (environment)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.check, func(t *testing.T) {
			t.Chdir(t.TempDir())
			r := checkJSON(t, tt.env, "--timeout", "1s")
			r.expect(t, tt.check, tt.want, tt.text...)
		})
	}
}

// TestCheckRefusesBadValues checks that a bad value of any setting fails
// env check (exit 1) naming the variable and where it came from.
func TestCheckRefusesBadValues(t *testing.T) {
	env, _, _ := localEnv(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	if err := os.WriteFile(envFile, []byte("TIMELAKE_MAX_FILES=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := checkJSON(t, env, "--env-file", envFile)
	r.expect(t, envcheck.CheckSettings, envcheck.Fail, `TIMELAKE_MAX_FILES (env file): expected a whole number >= 0, got "abc"`)
	if r.code != cmdutil.ExitFailed || r.report.OK {
		t.Errorf("exit %d, ok %v; want 1 and false", r.code, r.report.OK)
	}
}

func TestCheckEnvFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	body := "# poller settings\nLANDING_BUCKET=./landing\nTIMELAKE_WAREHOUSE='./lake'\nexport TIMELAKE_TABLE=\"iot.readings\"\n"
	if err := os.WriteFile("timelake.env", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "timelake.env")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want envcheck.Result
		code cmdutil.ExitCode
		text []string
	}{
		{"relative flag", nil, []string{"--env-file", "timelake.env"}, envcheck.Warn, 0,
			[]string{"relative", "cron starts jobs in $HOME", "cd $HOME/timelake"}},
		{"absolute flag", nil, []string{"--env-file", abs}, envcheck.OK, 0, []string{abs + " (from --env-file)"}},
		{"from variable", map[string]string{"TIMELAKE_ENV_FILE": abs}, nil, envcheck.OK, 0,
			[]string{"from TIMELAKE_ENV_FILE (environment)"}},
		{"missing", nil, []string{"--env-file", filepath.Join(dir, "nope.env")}, envcheck.Fail, cmdutil.ExitFailed,
			[]string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkJSON(t, tt.env, tt.args...)
			r.expect(t, envcheck.CheckEnvFile, tt.want, tt.text...)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d", r.code, tt.code)
			}
			if tt.want != envcheck.Fail {
				r.expect(t, envcheck.CheckTableName, envcheck.OK, "iot.readings from TIMELAKE_TABLE (env file)")
				r.expect(t, envcheck.CheckLakeCommit, envcheck.OK)
			} else {
				r.expect(t, envcheck.CheckTable, envcheck.Skip, "env file not readable")
			}
		})
	}
}

func TestCheckConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	env := map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-never-printed",
		"LANDING_BUCKET": "landing-bucket", "TIMELAKE_WAREHOUSE": "s3://lake-bucket/warehouse", "TIMELAKE_TABLE": "iot.readings",
	}
	r := checkJSON(t, env, "--timeout", "3s")
	r.expect(t, envcheck.CheckConnect, envcheck.Fail, endpoint, "connection refused", "AWS_ENDPOINT_URL (environment)")
	for _, n := range []string{envcheck.CheckClock, envcheck.CheckAuth, envcheck.CheckLandingBucket, envcheck.CheckLakeBucket,
		envcheck.CheckLakeCommit, envcheck.CheckTable} {
		r.expect(t, n, envcheck.Skip, "endpoint not reachable")
	}
	if r.code != cmdutil.ExitFailed {
		t.Errorf("exit code %d, want 1", r.code)
	}
	if strings.Contains(r.out+r.errOut, "secret-never-printed") {
		t.Error("the secret key was printed")
	}
}

func TestCheckTimeoutIsApplied(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answer only when the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "x",
		"LANDING_BUCKET": "landing-bucket", "TIMELAKE_WAREHOUSE": "s3://lake-bucket/warehouse", "TIMELAKE_TABLE": "iot.readings",
	}
	r := checkJSON(t, env, "--timeout", "300ms")
	r.expect(t, envcheck.CheckConnect, envcheck.Fail, srv.URL, "no answer within 300ms (--timeout)")
	if r.code != cmdutil.ExitFailed {
		t.Errorf("exit code %d, want 1", r.code)
	}
}

func TestCheckTimeoutFlag(t *testing.T) {
	for _, bad := range []string{"0s", "-1s"} {
		r := execute(t, map[string]string{}, false, "env", "check", "--timeout", bad)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "--timeout") {
			t.Errorf("--timeout %s: code %d, stderr %q", bad, r.code, r.errOut)
		}
	}
	var got *envcheck.CheckOptions
	ios, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IO: ios, Getenv: func(k string) (string, bool) {
		v, ok := map[string]string{"LANDING_BUCKET": "from-env", "TIMELAKE_TABLE": "iot.readings"}[k]
		return v, ok
	}}
	// The root command owns the connection flags.
	root := &cobra.Command{Use: "timelake"}
	settings.Bind(root.PersistentFlags(), settings.Global)
	root.AddCommand(envcheck.NewCmdEnv(f, &envcheck.RunFuncs{Check: func(_ context.Context, o *envcheck.CheckOptions) error {
		got = o
		return nil
	}}, nil))
	root.SetArgs([]string{"env", "check", "--landing", "s3://flag-bucket/in", "--timeout", "2s", "--region", "auto"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Timeout != 2*time.Second || got.Settings.Landing.Value != "s3://flag-bucket/in" ||
		got.Settings.Landing.Describe() != "--landing" || got.Settings.Table.Describe() != "TIMELAKE_TABLE (environment)" ||
		got.Settings.Region.Describe() != "--region" {
		t.Errorf("options = timeout %s landing %+v table %+v", got.Timeout, got.Settings.Landing, got.Settings.Table)
	}
}

func TestCheckStoreIgnoringIfNoneMatch(t *testing.T) {
	fake, srv := newFakeS3(t, 0)
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "fake-secret",
		"LANDING_BUCKET": "landing-bucket", "TIMELAKE_WAREHOUSE": "s3://lake-bucket/warehouse", "TIMELAKE_TABLE": "iot.readings",
	}
	r := checkJSON(t, env)
	r.expect(t, envcheck.CheckLakeCommit, envcheck.Fail, "ignores conditional writes", "committing is unsafe", "If-None-Match")
	r.expect(t, envcheck.CheckLandingLease, envcheck.Warn, "ignores conditional writes")
	r.expect(t, envcheck.CheckLakeBucket, envcheck.OK)
	r.expect(t, envcheck.CheckLandingBucket, envcheck.OK, "put/get/delete")
	r.expect(t, envcheck.CheckTable, envcheck.OK, "does not exist yet")
	r.expect(t, envcheck.CheckAuth, envcheck.OK)
	if r.code != cmdutil.ExitFailed {
		t.Errorf("exit code %d, want 1", r.code)
	}
	if fake.ifNoneMatchSeen < 4 {
		t.Errorf("If-None-Match: * sent %d times, want 4 (two per conditional probe)", fake.ifNoneMatchSeen)
	}
	if keys := fake.keys(); len(keys) != 0 {
		t.Errorf("probes left behind: %v", keys)
	}
}

func TestCheckClockSkew(t *testing.T) {
	tests := []struct {
		offset time.Duration
		want   envcheck.Result
		text   string
	}{
		{0, envcheck.OK, "within 1s"},
		{-30 * time.Second, envcheck.OK, "ahead of the server's"},
		{2 * time.Minute, envcheck.Warn, "behind the server's"},
		{-20 * time.Minute, envcheck.Fail, "more than 15 minutes"},
	}
	for _, tt := range tests {
		t.Run(tt.offset.String(), func(t *testing.T) {
			_, srv := newFakeS3(t, tt.offset)
			env := map[string]string{
				"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "fake-secret",
				"LANDING_BUCKET": "landing-bucket", "TIMELAKE_WAREHOUSE": "./lake", "TIMELAKE_TABLE": "iot.readings",
			}
			t.Chdir(t.TempDir())
			r := checkJSON(t, env)
			r.expect(t, envcheck.CheckClock, tt.want, tt.text)
		})
	}
}

func TestCheckOutput(t *testing.T) {
	env, _, _ := localEnv(t)
	t.Run("pipe", func(t *testing.T) {
		r := execute(t, env, false, "env", "check")
		if r.code != 0 {
			t.Fatalf("exit %d: %s%s", r.code, r.out, r.errOut)
		}
		lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
		if len(lines) != 26 {
			t.Errorf("%d lines, want a header and one per check (25):\n%s", len(lines), r.out)
		}
		for _, l := range lines {
			if f := strings.Split(l, "\t"); len(f) != 4 {
				t.Errorf("line %q has %d tab-separated fields, want 4", l, len(f))
			}
		}
		if lines[0] != "check\tresult\tdetail\tfix" || !strings.HasPrefix(lines[1], "version\tok\ttimelake ") {
			t.Errorf("first lines %q", lines[:2])
		}
	})
	t.Run("terminal", func(t *testing.T) {
		r := execute(t, env, true, "env", "check")
		if r.code != 0 {
			t.Fatalf("exit %d: %s%s", r.code, r.out, r.errOut)
		}
		first := strings.Fields(strings.SplitN(r.out, "\n", 2)[0])
		if strings.Join(first, " ") != "CHECK RESULT DETAIL FIX" {
			t.Errorf("header %q", first)
		}
		if !strings.Contains(r.out, "0 failed") || !strings.Contains(r.out, "ready for cron") {
			t.Errorf("no summary line:\n%s", r.out)
		}
	})
}

func TestEnvShow(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	const secret, token, hook = "tsec_Zq9xKp2wLm7vRt4yBn8j", "FQoGZXIvYXdzEJr8Hk3QwEaDMx7pL", "T0ABC/B0DEF/xQ9zLm2pWv7Rk4yTn8uJ"
	body := "AWS_ENDPOINT=https://t3.storage.dev\nAWS_SECRET_ACCESS_KEY=" + secret +
		"\nAWS_SESSION_TOKEN='" + token + "'\nTIMELAKE_TABLE=iot.readings\nTIMELAKE_PARTITION=hour\nTIMELAKE_MAX_FILES=50\n" +
		"TIMELAKE_NOTIFY_URL=https://hooks.slack.com/services/" + hook + "\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"AWS_ACCESS_KEY_ID": "tid_accesskeyvalue", "AWS_REGION": "auto", "LANDING_BUCKET": "my-lake-landing",
		"TIMELAKE_UPLOAD_PREFIX": "site-3",
	}
	args := []string{"env", "show", "--env-file", envFile, "--warehouse", "s3://my-lake/warehouse"}

	t.Run("json", func(t *testing.T) {
		r := execute(t, env, false, append(args, "--json")...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		var rows []envcheck.ShownSetting
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
			t.Fatal(err)
		}
		got := map[string]envcheck.ShownSetting{}
		for _, s := range rows {
			got[s.Name+" "+strings.Join(s.Commands, ",")] = s
		}
		want := map[string]envcheck.ShownSetting{
			"env-file all": {Value: envFile, Source: "flag"},
			"landing ingest,serve,upload,landing,env":          {Value: "my-lake-landing", Source: "environment", Variable: "LANDING_BUCKET"},
			"warehouse ingest,serve,upload,tables,landing,env": {Value: "s3://my-lake/warehouse", Source: "flag"},
			"table ingest,serve,upload,landing,env":            {Value: "iot.readings", Source: "env file", Variable: "TIMELAKE_TABLE"},
			"endpoint all":                                     {Value: "https://t3.storage.dev", Source: "env file", Variable: "AWS_ENDPOINT"},
			"region all":                                       {Value: "auto", Source: "environment", Variable: "AWS_REGION"},
			"AWS_ACCESS_KEY_ID all":                            {Value: "tid_********", Source: "environment", Variable: "AWS_ACCESS_KEY_ID"},
			"AWS_SECRET_ACCESS_KEY all":                        {Value: "set (25 characters)", Source: "env file", Variable: "AWS_SECRET_ACCESS_KEY"},
			"AWS_SESSION_TOKEN all":                            {Value: "set (29 characters)", Source: "env file", Variable: "AWS_SESSION_TOKEN"},
			"credentials all":                                  {Value: envcheck.CredStatic, Source: "derived"},
			"partition ingest,serve,tables create":             {Value: "hour", Source: "env file", Variable: "TIMELAKE_PARTITION"},
			"max-files ingest":                                 {Value: "50", Source: "env file", Variable: "TIMELAKE_MAX_FILES"},
			"quarantine-prefix ingest,serve,landing":           {Value: "_rejected/", Source: "default"},
			"lease-ttl ingest,serve":                           {Value: "10m", Source: "default"},
			"prefix ingest,serve,landing audit,landing status": {},
			"notify-url ingest,serve,landing audit,landing status": {Value: "https://hooks.slack.com/…", Source: "env file",
				Variable: "TIMELAKE_NOTIFY_URL"},
			"prefix upload":            {Value: "site-3", Source: "environment", Variable: "TIMELAKE_UPLOAD_PREFIX"},
			"parallel upload":          {Value: "4", Source: "default"},
			"older-than tables expire": {},
			"time-column ingest,serve,upload,tables create": {},
			"log-level all": {Value: "warn", Source: "default"},
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok || g.Value != w.Value || g.Source != w.Source || g.Variable != w.Variable {
				t.Errorf("%s = %+v (listed %v), want %+v", k, g, ok, w)
			}
		}
		// Every setting that can come from a variable is listed, once.
		listed := 0
		for _, s := range settings.All() {
			if len(s.Env) > 0 {
				listed++
				if _, ok := got[s.Name()+" "+strings.Join(s.CommandNames(), ",")]; !ok {
					t.Errorf("setting %s (%v) not listed", s.Name(), s.Env)
				}
			}
		}
		if len(rows) != listed+1 { // and the derived credentials row
			t.Errorf("%d rows, want %d", len(rows), listed+1)
		}
		if strings.Count(r.out, "\n") != 1 {
			t.Errorf("--json in a pipe is not one line:\n%s", r.out)
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r := execute(t, env, false, args...)
		if !strings.HasPrefix(r.out, "setting\tvalue\tsource\tcommands\n") {
			t.Errorf("no header line:\n%s", r.out)
		}
		for _, line := range []string{
			"landing\tmy-lake-landing\tLANDING_BUCKET (environment)\tingest, serve, upload, landing, env\n",
			"warehouse\ts3://my-lake/warehouse\t--warehouse\tingest, serve, upload, tables, landing, env\n",
			"AWS_SECRET_ACCESS_KEY\tset (25 characters)\tAWS_SECRET_ACCESS_KEY (env file)\tall\n",
			"time-column\t-\tnot set\tingest, serve, upload, tables create\n",
			"max-files\t50\tTIMELAKE_MAX_FILES (env file)\tingest\n",
		} {
			if !strings.Contains(r.out, line) {
				t.Errorf("missing line %q in:\n%s", line, r.out)
			}
		}
	})
	// Not one 4-character piece of a secret is printed, in any form.
	for _, mode := range [][]string{nil, {"--json"}} {
		for _, tty := range []bool{false, true} {
			r := execute(t, env, tty, append(args, mode...)...)
			all := r.out + r.errOut
			for _, sec := range []string{secret, token, hook} {
				for i := 0; i+4 <= len(sec); i++ {
					if strings.Contains(all, sec[i:i+4]) {
						t.Fatalf("tty=%v %v: %q of a secret was printed:\n%s", tty, mode, sec[i:i+4], all)
					}
				}
			}
		}
	}
}

func TestCheckSourceProfiles(t *testing.T) {
	env, landing, warehouse := localEnv(t)
	for _, key := range []string{"site-berlin/a.csv", "site-berlin/b.tsv", "site-paris/c.csv"} {
		path := filepath.Join(landing, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("time,v\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := lake.Open(context.Background(), warehouse, lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, l, 0, map[string]string{
		"timelake.profile.berlin.match":         "site-berlin/",
		"timelake.profile.berlin.csv-delimiter": ";",
	})
	r := checkJSON(t, env)
	r.expect(t, envcheck.CheckProfiles, envcheck.OK, "1 source profiles: berlin (site-berlin/)", "read with berlin 2, with the run's settings 1")

	// A second profile whose glob takes the .tsv file too: ingest refuses
	// that file, and so does the check.
	tbl, err := l.LoadTable(context.Background(), lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(context.Background(), map[string]string{"timelake.profile.tsv.match": "**/*.tsv"}, nil); err != nil {
		t.Fatal(err)
	}
	r = checkJSON(t, env)
	r.expect(t, envcheck.CheckProfiles, envcheck.Fail, "1 files match two profiles", "berlin (site-berlin/) and tsv (**/*.tsv)")
}

// all returns the details of every row named name, in order.
func (r result) all(name string) []string {
	var out []string
	for _, c := range r.report.Checks {
		if c.Name == name {
			out = append(out, string(c.Result)+": "+c.Detail)
		}
	}
	return out
}

// TestCheckRoutes: with TIMELAKE_ROUTES, env check lists each route and its
// table, and checks each table a route names whatever the key (one that
// exists is loaded, one that does not is created by the first ingest);
// rules that do not read fail with the fix, and so does TIMELAKE_TABLE set
// with them (ingest refuses both).
func TestCheckRoutes(t *testing.T) {
	env, _, warehouse := localEnv(t)
	delete(env, "TIMELAKE_TABLE")
	l, err := lake.Open(context.Background(), warehouse, lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, l, 3, nil)

	env["TIMELAKE_ROUTES"] = "readings/**=iot.readings, alarms/**=iot.alarms, */**=iot.{1}"
	r := checkJSON(t, env)
	r.noFailures(t, localOnlySkips...)
	r.expect(t, envcheck.CheckTableName, envcheck.OK, "none: the routes of TIMELAKE_ROUTES (environment) name the tables")
	r.expect(t, envcheck.CheckRoutes, envcheck.OK, "3 routes from TIMELAKE_ROUTES (environment)",
		"readings/**=iot.readings (table iot.readings)", "alarms/**=iot.alarms (table iot.alarms)", "*/**=iot.{1} (a table per key")
	tables, profiles := r.all(envcheck.CheckTable), r.all(envcheck.CheckProfiles)
	if len(tables) != 2 || !strings.HasPrefix(tables[0], "ok: iot.readings: metadata v") ||
		!strings.HasPrefix(tables[1], "ok: iot.alarms does not exist yet") || !strings.Contains(tables[1], "check TIMELAKE_ROUTES (environment) for a typo") {
		t.Errorf("table rows: %q", tables)
	}
	if len(profiles) != 2 || !strings.HasPrefix(profiles[0], "ok: iot.readings: ") || !strings.HasPrefix(profiles[1], "ok: iot.alarms: ") {
		t.Errorf("profiles rows: %q", profiles)
	}

	env["TIMELAKE_ROUTES"] = "*/**=iot.{1}"
	r = checkJSON(t, env)
	r.noFailures(t, localOnlySkips...)
	r.expect(t, envcheck.CheckRoutes, envcheck.OK, "1 route from")
	r.expect(t, envcheck.CheckTable, envcheck.OK, "the routes name each table from its key's folders")

	env["TIMELAKE_ROUTES"] = "readings/**=iot.readings,alarms/**"
	r = checkJSON(t, env)
	r.expect(t, envcheck.CheckRoutes, envcheck.Fail, `TIMELAKE_ROUTES (environment): route "alarms/**": expected PATTERN=TABLE`,
		"write each rule as PATTERN=TABLE", "docs/routing.md")
	r.expect(t, envcheck.CheckTable, envcheck.Skip, "routes invalid")
	if r.code != cmdutil.ExitFailed {
		t.Errorf("exit %d with a bad rule, want 1", r.code)
	}

	// A rule's options are listed with it; an option that does not read
	// fails naming the rule and the option.
	env["TIMELAKE_ROUTES"] = "readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour, */**=iot.{1}_raw;partition=month"
	r = checkJSON(t, env)
	r.expect(t, envcheck.CheckRoutes, envcheck.OK, "2 routes from TIMELAKE_ROUTES (environment)",
		"readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour (table iot.readings)",
		"*/**=iot.{1}_raw;partition=month (a table per key")
	env["TIMELAKE_ROUTES"] = "readings/**=iot.readings;partition=weekly"
	r = checkJSON(t, env)
	r.expect(t, envcheck.CheckRoutes, envcheck.Fail, `route "readings/**=iot.readings;partition=weekly": option "partition": invalid partition granularity "weekly"`,
		"options after the table")

	env["TIMELAKE_ROUTES"] = "readings/**=iot.readings"
	env["TIMELAKE_TABLE"] = "iot.readings"
	r = checkJSON(t, env)
	r.expect(t, envcheck.CheckTableName, envcheck.Fail, "both name tables", "remove TIMELAKE_TABLE (environment)")
	r.expect(t, envcheck.CheckRoutes, envcheck.OK, "readings/**=iot.readings (table iot.readings)")

	delete(env, "TIMELAKE_ROUTES")
	r = checkJSON(t, env)
	r.noFailures(t, localOnlySkips...)
	r.expect(t, envcheck.CheckRoutes, envcheck.OK, "none: every file loads into the table of TIMELAKE_TABLE")
}
