package commands_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
)

type result struct {
	code        cmdutil.ExitCode
	out, errOut string
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	code := commands.Execute(context.Background(), args, ios, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return result{code, out.String(), errOut.String()}
}

// TestUsageErrors checks that wrong arguments and unknown subcommands are
// usage errors (exit 2, a "Try:" hint), and that a bare group prints its
// help.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
		try  string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "timelake"`, "Try: timelake --help"},
		{[]string{"ingets"}, "did you mean ingest?", "Try: timelake --help"},
		{[]string{"tables", "bogus"}, `unknown command "bogus" for "timelake tables"`, "Try: timelake tables --help"},
		{[]string{"env", "bogus"}, `unknown command "bogus" for "timelake env"`, "Try: timelake env --help"},
		{[]string{"env", "chek"}, "did you mean check?", "Try: timelake env --help"},
		{[]string{"tables", "show", "a", "b"}, "accepts at most 1 arg(s)", "Try: timelake tables show --help"},
		{[]string{"tables", "batch"}, "accepts between 1 and 2 arg(s)", "Try: timelake tables batch --help"},
		{[]string{"ingest", "extra"}, `unknown command "extra" for "timelake ingest"`, "Try: timelake ingest --help"},
		{[]string{"env", "check", "--timeout", "0s"}, `--timeout: "0s" is a duration, but it must be above zero`, "Try: timelake env check --help"},
		{[]string{"ingest", "--nope"}, "unknown flag: --nope\n", "Try: timelake ingest --help"},
		{[]string{"ingest", "--env-flie", "x"}, "unknown flag: --env-flie; did you mean --env-file?", "Try: timelake ingest --help"},
		{[]string{"tables", "list", "--wharehouse", "x"}, "unknown flag: --wharehouse; did you mean --warehouse?", "Try: timelake tables list --help"},
		{[]string{"tables", "expire", "--retain", "3"}, "unknown flag: --retain; did you mean --retain-last?", "Try: timelake tables expire --help"},
		{[]string{"ingest", "-json"}, "unknown shorthand flag: 'j' in -json; did you mean --json?", "Try: timelake ingest --help"},
		{[]string{"ingest", "--older-than", "2d"}, "unknown flag: --older-than; --older-than is a flag of timelake tables expire", "Try: timelake ingest --help"},
		{[]string{"ingest", "--log-level", "loud"}, `--log-level: "loud" is not one of debug, info, warn, error`, "Try: timelake ingest --help"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "Error: ") || !strings.Contains(r.errOut, tc.msg) ||
				!strings.Contains(r.errOut, tc.try+"\n") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 with %q and %q", r.code, r.errOut, tc.msg, tc.try)
			}
		})
	}
	for _, args := range [][]string{nil, {"tables"}, {"env"}} {
		t.Run("bare "+strings.Join(args, " "), func(t *testing.T) {
			r := run(t, nil, args...)
			if r.code != cmdutil.ExitOK || !strings.Contains(r.out, "Usage:") || r.errOut != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want the help and exit 0", r.code, r.out, r.errOut)
			}
		})
	}
}

// TestFlagsComeFromTheRegistry checks that every flag of every command is
// a setting of internal/settings declared for that command, and that every
// setting is bound where it says.
func TestFlagsComeFromTheRegistry(t *testing.T) {
	ios, _, _ := iostreams.Test()
	root := commands.NewRootCmd(&cmdutil.Factory{IO: ios, Getenv: func(string) (string, bool) { return "", false }})
	bound := map[*settings.Spec]map[settings.Command]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" {
			return
		}
		path := settings.Command(strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "timelake"), " "))
		if path == "" {
			path = settings.Global
		}
		visit := func(fl *pflag.Flag) {
			if fl.Name == "help" || fl.Name == "version" {
				return
			}
			s := settings.Owner(fl)
			if s == nil {
				t.Errorf("%s --%s is not a setting of internal/settings", c.CommandPath(), fl.Name)
				return
			}
			if !s.UsedBy(path) {
				t.Errorf("%s --%s is bound, but its setting names the commands %v", c.CommandPath(), fl.Name, s.Commands)
			}
			if bound[s] == nil {
				bound[s] = map[settings.Command]bool{}
			}
			bound[s][path] = true
		}
		c.LocalNonPersistentFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, s := range settings.All() {
		if s.Flag == "" {
			continue
		}
		for _, c := range s.Commands {
			if !bound[s][c] {
				t.Errorf("--%s is declared for %q but that command does not bind it", s.Flag, c)
			}
		}
	}
}

// TestEnvFileExposure checks the warning about an env file that holds a
// secret and other users can read: a log line on stderr from a command, a
// warning row in env check (and no log line there).
func TestEnvFileExposure(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not say who can read a file on Windows")
	}
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	body := "LANDING_BUCKET=" + filepath.Join(dir, "landing") + "\nTIMELAKE_WAREHOUSE=" + filepath.Join(dir, "lake") +
		"\nTIMELAKE_TABLE=iot.readings\nAWS_SECRET_ACCESS_KEY=tsec_Zq9xKp2wLm7vRt4yBn8j\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"landing", "lake"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	warning := "env file " + envFile + " holds AWS_SECRET_ACCESS_KEY and is open to its group and other users (mode 0644)"
	fix := "chmod 600 " + envFile

	r := run(t, nil, "ingest", "--env-file", envFile)
	if r.code != 0 || strings.Contains(r.errOut, "mode") {
		t.Fatalf("mode 0600: exit %d, stderr %q", r.code, r.errOut)
	}
	if err := os.Chmod(envFile, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ingest"}, {"tables", "list"}, {"env", "show"}} {
		r := run(t, nil, append(args, "--env-file", envFile)...)
		if r.code != 0 || !strings.Contains(r.errOut, "level=WARN") || !strings.Contains(r.errOut, warning) || !strings.Contains(r.errOut, fix) {
			t.Errorf("%v: exit %d, stderr %q; want the warning and %q", args, r.code, r.errOut, fix)
		}
		if strings.Contains(r.out+r.errOut, "Zq9x") {
			t.Errorf("%v: the secret was printed", args)
		}
	}
	r = run(t, nil, "env", "check", "--env-file", envFile)
	if r.code != 0 || r.errOut != "" || !strings.Contains(r.out, "env-file\twarn\t"+envFile+" (from --env-file) holds AWS_SECRET_ACCESS_KEY") ||
		!strings.Contains(r.out, "\t"+fix+"\n") {
		t.Errorf("env check: exit %d, stdout:\n%s\nstderr %q", r.code, r.out, r.errOut)
	}
}

// TestWritableEnvFileRefused checks that an env file its group or other
// users can write is refused by every command (exit 2, the chmod as its
// fix), and reported as a failed check by env check.
func TestWritableEnvFileRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not say who can write a file on Windows")
	}
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	body := "LANDING_BUCKET=" + filepath.Join(dir, "landing") + "\nTIMELAKE_WAREHOUSE=" + filepath.Join(dir, "lake") + "\nTIMELAKE_TABLE=iot.readings\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for mode, who := range map[os.FileMode]string{0o620: "its group can change it (mode 0620)", 0o602: "other users can change it (mode 0602)",
		0o666: "its group and other users can change it (mode 0666)"} {
		if err := os.Chmod(envFile, mode); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"ingest"}, {"tables", "list"}, {"landing", "rejected"}, {"env", "show"}} {
			r := run(t, nil, append(args, "--env-file", envFile)...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "Error: env file "+envFile+" is refused: "+who) ||
				!strings.Contains(r.errOut, "Fix: chmod 600 "+envFile) {
				t.Errorf("%v, mode %04o: exit %d, stderr %q", args, mode, r.code, r.errOut)
			}
		}
		r := run(t, nil, "env", "check", "--env-file", envFile)
		if r.code != cmdutil.ExitFailed || !strings.Contains(r.out, "env-file\tfail\t"+envFile+" (from --env-file): is refused: "+who) {
			t.Errorf("env check, mode %04o: exit %d, stdout:\n%s\nstderr %q", mode, r.code, r.out, r.errOut)
		}
	}
	// Readable by others but writable only by its owner: used.
	if err := os.MkdirAll(filepath.Join(dir, "lake"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(envFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "tables", "list", "--env-file", envFile); r.code != cmdutil.ExitOK {
		t.Errorf("mode 0644: exit %d, stderr %q", r.code, r.errOut)
	}
}

// TestUnknownVariables checks that TIMELAKE_* variables no setting reads
// fail env check and warn in every other command, each with the variable
// meant; the test suite's own variables are not reported.
func TestUnknownVariables(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	body := "LANDING_BUCKET=" + filepath.Join(dir, "landing") + "\nTIMELAKE_WAREHOUSE=" + filepath.Join(dir, "lake") +
		"\nTIMELAKE_TABLE=iot.readings\nTIMELAKE_CSV_DELIMTER=;\nTIMELAKE_SERIES_KEYS=device_id\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"TIMELAKE_TEST_S3_ENDPOINT=http://127.0.0.1:1", "TIMELAKE_DRY_RUN=1", "TIMELAKE_ENDPOINT=http://x", "PATH=/bin"}
	exec := func(args ...string) result {
		ios, out, errOut := iostreams.Test()
		code := commands.ExecuteEnviron(context.Background(), args, ios, environ)
		return result{code, out.String(), errOut.String()}
	}
	meant := []string{
		"TIMELAKE_CSV_DELIMTER (env file) is not a timelake variable; did you mean TIMELAKE_CSV_DELIMITER?",
		"TIMELAKE_SERIES_KEYS (env file) is not a timelake variable; did you mean TIMELAKE_SERIES_KEY?",
		"TIMELAKE_DRY_RUN (environment) is not a timelake variable; --dry-run has no variable on purpose",
		"TIMELAKE_ENDPOINT (environment) is not a timelake variable; did you mean AWS_ENDPOINT_URL_S3?",
	}
	r := exec("env", "check", "--env-file", envFile)
	if r.code != cmdutil.ExitFailed || !strings.Contains(r.out, "variables\tfail\t") {
		t.Fatalf("env check: exit %d, stdout:\n%s\nstderr %q", r.code, r.out, r.errOut)
	}
	for _, m := range meant {
		if !strings.Contains(r.out, m) {
			t.Errorf("env check does not say %q:\n%s", m, r.out)
		}
	}
	if strings.Contains(r.out+r.errOut, "TIMELAKE_TEST_") {
		t.Errorf("a test variable is reported:\n%s%s", r.out, r.errOut)
	}
	for _, d := range []string{"landing", "lake"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"ingest"}, {"tables", "list"}, {"landing", "rejected"}} {
		r := exec(append(args, "--env-file", envFile)...)
		if r.code != cmdutil.ExitOK {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
		}
		for _, m := range meant {
			if !strings.Contains(r.errOut, "level=WARN msg=\""+m) {
				t.Errorf("%v: no warning %q in stderr:\n%s", args, m, r.errOut)
			}
		}
	}
	// Fixed, nothing is reported.
	environ = []string{"TIMELAKE_TEST_S3_ENDPOINT=http://127.0.0.1:1"}
	if err := os.WriteFile(envFile, []byte(strings.ReplaceAll(strings.ReplaceAll(body, "DELIMTER", "DELIMITER"), "KEYS", "KEY")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := exec("env", "check", "--env-file", envFile); r.code != cmdutil.ExitOK || !strings.Contains(r.out, "variables\tok\t") {
		t.Errorf("fixed: exit %d, stdout:\n%s", r.code, r.out)
	}
}

// TestMisspelledVariables checks that AWS_* and LANDING_* variables one
// or two edits from one a setting reads, in the env file and in the
// environment, are named with the one meant: in the error of a command
// that misses the setting (exit 2), in a warning of every other command,
// and in env check's variables row; unrelated variables are not.
func TestMisspelledVariables(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "timelake.env")
	body := "LANDING_BUCKT=" + filepath.Join(dir, "landing") + "\nTIMELAKE_WAREHOUSE=" + filepath.Join(dir, "lake") +
		"\nTIMELAKE_TABLE=iot.readings\nAWS_SECRET_ACCES_KEY=secret\nAWS_ACCES_KEY_ID=key\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"landing", "lake"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{"TIMELAKE_TEST_S3_ENDPOINT=http://127.0.0.1:1", "AWS_ENDPOINT_ULR=http://127.0.0.1:1", "AWS_REGOIN=auto",
		"PATH=/bin", "AWS_CONFIG_FILE=" + filepath.Join(dir, "config"), "AWS_ENDPOINT_URL_STS=http://127.0.0.1:1", "LANDING_ZONE=eu"}
	exec := func(args ...string) result {
		ios, out, errOut := iostreams.Test()
		code := commands.ExecuteEnviron(context.Background(), args, ios, environ)
		return result{code, out.String(), errOut.String()}
	}
	meant := []string{
		"AWS_ACCES_KEY_ID (env file) is not a variable timelake reads; did you mean AWS_ACCESS_KEY_ID?",
		"AWS_ENDPOINT_ULR (environment) is not a variable timelake reads; did you mean AWS_ENDPOINT_URL?",
		"AWS_REGOIN (environment) is not a variable timelake reads; did you mean AWS_REGION?",
		"AWS_SECRET_ACCES_KEY (env file) is not a variable timelake reads; did you mean AWS_SECRET_ACCESS_KEY?",
		"LANDING_BUCKT (env file) is not a variable timelake reads; did you mean LANDING_BUCKET?",
	}
	unrelated := []string{"PATH", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL_STS", "LANDING_ZONE"}

	r := exec("env", "check", "--env-file", envFile)
	if r.code != cmdutil.ExitFailed || !strings.Contains(r.out, "variables\tfail\t") {
		t.Fatalf("env check: exit %d, stdout:\n%s\nstderr %q", r.code, r.out, r.errOut)
	}
	for _, m := range append(meant, "landing\tfail\tnot set; LANDING_BUCKT (env file) is set: did you mean LANDING_BUCKET?\t") {
		if !strings.Contains(r.out, m) {
			t.Errorf("env check does not say %q:\n%s", m, r.out)
		}
	}
	for _, args := range [][]string{{"ingest"}, {"landing", "rejected"}, {"tables", "list"}} {
		r := exec(append(args, "--env-file", envFile)...)
		for _, m := range meant {
			if !strings.Contains(r.errOut, "level=WARN msg=\""+m) {
				t.Errorf("%v: no warning %q in stderr:\n%s", args, m, r.errOut)
			}
		}
		for _, name := range unrelated {
			if strings.Contains(r.out+r.errOut, name) {
				t.Errorf("%v: %s is reported:\n%s", args, name, r.errOut)
			}
		}
		if args[0] == "tables" {
			if r.code != cmdutil.ExitOK {
				t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
			}
			continue
		}
		// The landing is missing: the error names the variable meant.
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut,
			"Error: missing setting: pass --landing or set LANDING_BUCKET or TIMELAKE_LANDING; LANDING_BUCKT (env file) is set: did you mean LANDING_BUCKET?") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
		}
	}
	// In the environment too.
	environ = append(environ, "LANDING_BUCKT="+filepath.Join(dir, "landing"), "TIMELAKE_WAREHOUSE="+filepath.Join(dir, "lake"), "TIMELAKE_TABLE=iot.readings")
	r = exec("ingest")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "LANDING_BUCKT (environment) is set: did you mean LANDING_BUCKET?") {
		t.Errorf("environment: exit %d, stderr %q", r.code, r.errOut)
	}
}

// TestMisspelledSecretKey checks that static keys left without their
// secret by a misspelled AWS_SECRET_ACCESS_KEY fail with timelake's own
// message, whose fix renames the variable first, after the warning that
// names it; nothing of the SDK's own is written.
func TestMisspelledSecretKey(t *testing.T) {
	environ := []string{"TIMELAKE_WAREHOUSE=s3://my-lake/warehouse", "AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_REGION=auto",
		"AWS_ACCESS_KEY_ID=tid_abcd", "AWS_SECRET_ACCES_KEY=tsec_efgh"}
	ios, _, errOut := iostreams.Test()
	code := commands.ExecuteEnviron(context.Background(), []string{"tables", "list"}, ios, environ)
	got := errOut.String()
	want := []string{
		`level=WARN msg="AWS_SECRET_ACCES_KEY (environment) is not a variable timelake reads; did you mean AWS_SECRET_ACCESS_KEY?"`,
		"Error: lake bucket s3://my-lake/warehouse: no S3 credentials found\n",
		"Fix: rename AWS_SECRET_ACCES_KEY (environment) to AWS_SECRET_ACCESS_KEY; set AWS_ACCESS_KEY_ID (environment) and AWS_SECRET_ACCESS_KEY",
	}
	if code != cmdutil.ExitFailed {
		t.Errorf("exit %d, want %d", code, cmdutil.ExitFailed)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("stderr does not say %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "static credentials are empty") || strings.Contains(got, "SDK ") {
		t.Errorf("the SDK's words reach stderr:\n%s", got)
	}
}

// TestLocationKinds checks that a warehouse and a landing of different
// kinds are refused by every command unless the local side is written
// explicitly (file:// or an absolute path), and fail env check's row.
func TestLocationKinds(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	env := map[string]string{"TIMELAKE_WAREHOUSE": "my-lake/warehouse", "LANDING_BUCKET": "my-lake-landing", "TIMELAKE_TABLE": "iot.readings"}
	for _, args := range [][]string{{"ingest"}, {"serve"}, {"tables", "list"}, {"landing", "rejected"}, {"upload", "--gateway", "gw", "x.csv"}} {
		r := run(t, env, args...)
		if r.code != cmdutil.ExitUsage ||
			!strings.Contains(r.errOut, `Error: the warehouse TIMELAKE_WAREHOUSE (environment) "my-lake/warehouse" is a local folder (`+filepath.Join(dir, "my-lake", "warehouse")+`) while the landing LANDING_BUCKET (environment) is on S3 (s3://my-lake-landing)`) ||
			!strings.Contains(r.errOut, "Fix: for a bucket write TIMELAKE_WAREHOUSE=s3://my-lake/warehouse; for this folder write TIMELAKE_WAREHOUSE="+filepath.Join(dir, "my-lake", "warehouse")) {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
		}
	}
	r := run(t, env, "env", "check", "--json")
	if r.code != cmdutil.ExitFailed || !strings.Contains(r.out, `"name":"warehouse","result":"fail","detail":"the warehouse TIMELAKE_WAREHOUSE (environment) \"my-lake/warehouse\" is a local folder`) {
		t.Errorf("env check: exit %d, stdout %s", r.code, r.out)
	}
	// The landing relative, the warehouse on S3: the landing's row, the flag named.
	r = run(t, map[string]string{"TIMELAKE_WAREHOUSE": "s3://my-lake/warehouse"}, "landing", "rejected", "--landing", "gateways/in")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, `the landing --landing "gateways/in" is a local folder`) ||
		!strings.Contains(r.errOut, "Fix: for a bucket write --landing=s3://gateways/in") {
		t.Errorf("relative landing: exit %d, stderr %q", r.code, r.errOut)
	}
	// Written explicitly, or of one kind: used.
	for _, wh := range []string{filepath.Join(dir, "lake"), "file://" + filepath.Join(dir, "lake")} {
		if err := os.MkdirAll(filepath.Join(dir, "lake"), 0o755); err != nil {
			t.Fatal(err)
		}
		if r := run(t, map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": "my-lake-landing"}, "tables", "list"); r.code != cmdutil.ExitOK {
			t.Errorf("warehouse %s: exit %d, stderr %q", wh, r.code, r.errOut)
		}
	}
	if r := run(t, map[string]string{"TIMELAKE_WAREHOUSE": "lake", "LANDING_BUCKET": "./landing"}, "tables", "list"); r.code != cmdutil.ExitOK {
		t.Errorf("both local: exit %d, stderr %q", r.code, r.errOut)
	}
}
