package settings

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/config"
)

func env(t *testing.T, vars map[string]string, file string) *config.Env {
	t.Helper()
	e, err := config.LoadEnv(file, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func writeEnvFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "timelake.env")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// flags binds command's flags and parses args like cobra does.
func flags(t *testing.T, command Command, args ...string) (*pflag.FlagSet, error) {
	t.Helper()
	fs := pflag.NewFlagSet(string(command), pflag.ContinueOnError)
	Bind(fs, command)
	return fs, fs.Parse(args)
}

// TestRegistry checks what every declaration must satisfy.
func TestRegistry(t *testing.T) {
	vars := map[string]*Spec{}
	type flagAt struct {
		flag string
		cmd  Command
	}
	flagsAt := map[flagAt]*Spec{}
	for _, s := range All() {
		if s.Flag == "" && len(s.Env) == 0 {
			t.Errorf("a setting has neither flag nor variable: %+v", s)
			continue
		}
		if (len(s.Env) == 0) != (s.Group == GroupPerRun) {
			t.Errorf("%s: only per-run flags have no variable (group %q, variables %v)", s.Name(), s.Group, s.Env)
		}
		if s.Help == "" || len(s.Commands) == 0 || s.Group == "" {
			t.Errorf("%s: help, commands and group are required", s.Name())
		}
		for _, k := range s.Env {
			if other := vars[k]; other != nil {
				t.Errorf("variable %s belongs to %s and %s", k, other.Name(), s.Name())
			}
			vars[k] = s
		}
		for _, c := range s.Commands {
			if s.Flag == "" {
				break
			}
			if other := flagsAt[flagAt{s.Flag, c}]; other != nil {
				t.Errorf("--%s is declared twice for %s", s.Flag, c)
			}
			flagsAt[flagAt{s.Flag, c}] = s
		}
		if s.Default != "" {
			if err := s.validate(s.Default); err != nil {
				t.Errorf("%s: default %q does not parse: %v", s.Name(), s.Default, err)
			}
		}
		if s.Sensitivity == Secret && s.Flag != "" {
			t.Errorf("%s: a secret must not be a flag (it would show in ps and shell history)", s.Name())
		}
	}
}

func TestResolveOrder(t *testing.T) {
	file := writeEnvFile(t, "TIMELAKE_MAX_FILES=7\nTIMELAKE_PARTITION=month\nLANDING_BUCKET=from-file\n", 0o600)
	e := env(t, map[string]string{"TIMELAKE_MAX_FILES": "9", "TIMELAKE_LANDING": "second-variable"}, file)
	fs, err := flags(t, Ingest, "--lease-ttl", "90s")
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(fs, e)
	if got := LeaseTTL.Get(r); got != 90*time.Second {
		t.Errorf("flag: lease ttl %s", got)
	}
	if got := MaxFiles.Get(r); got != 9 {
		t.Errorf("environment beats env file: max files %d", got)
	}
	if got := Partition.Get(r); got != "month" {
		t.Errorf("env file: partition %s", got)
	}
	if got := Landing.Get(r).String(); got != "s3://from-file" {
		t.Errorf("the first variable wins, from the env file too: landing %s", got)
	}
	if got := FilesPerCommit.Get(r); got != 100 {
		t.Errorf("default: files per commit %d", got)
	}
	if got := LandingPrefix.Get(r); got != "" {
		t.Errorf("not set: prefix %q", got)
	}
	for spec, want := range map[*Spec]string{
		&LeaseTTL.Spec:       "--lease-ttl",
		&MaxFiles.Spec:       "TIMELAKE_MAX_FILES (environment)",
		&Partition.Spec:      "TIMELAKE_PARTITION (env file)",
		&Landing.Spec:        "LANDING_BUCKET (env file)",
		&FilesPerCommit.Spec: "default",
		&LandingPrefix.Spec:  "not set",
	} {
		if got := r.Lookup(spec).Describe(); got != want {
			t.Errorf("%s comes from %q, want %q", spec.Name(), got, want)
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
}

func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		get  func(*Resolver)
		msg  string
	}{
		{"int from a variable", map[string]string{"TIMELAKE_MAX_FILES": "abc"}, nil, func(r *Resolver) { MaxFiles.Get(r) },
			`TIMELAKE_MAX_FILES (environment): expected a whole number >= 0, got "abc"`},
		{"int below its bound", map[string]string{"TIMELAKE_PARALLEL": "0"}, nil, func(r *Resolver) { Parallel.Get(r) },
			`TIMELAKE_PARALLEL (environment): expected a whole number >= 1, got "0"`},
		{"size", map[string]string{"TIMELAKE_MEMORY_BUDGET": "12KiB"}, nil, func(r *Resolver) { MemoryBudget.Get(r) },
			`TIMELAKE_MEMORY_BUDGET (environment): "12KiB" is a size, but it must be at least 1MiB`},
		{"duration", map[string]string{"TIMELAKE_LEASE_TTL": "0s"}, nil, func(r *Resolver) { LeaseTTL.Get(r) },
			`TIMELAKE_LEASE_TTL (environment): "0s" is a duration, but it must be above zero (such as 10m)`},
		{"enum", map[string]string{"TIMELAKE_TIME_UNIT": "h"}, nil, func(r *Resolver) { TimeUnit.Get(r) },
			`TIMELAKE_TIME_UNIT (environment): "h" is not one of s, ms, us, ns`},
		{"zone", map[string]string{"TIMELAKE_ASSUME_TIMEZONE": "Mars/Olympus"}, nil, func(r *Resolver) { AssumeTimezone.Get(r) },
			`unknown time zone "Mars/Olympus"`},
		{"bool", map[string]string{"TIMELAKE_NO_CREATE": "maybe"}, nil, func(r *Resolver) { NoCreate.Get(r) },
			`TIMELAKE_NO_CREATE (environment): expected true or false, got "maybe"`},
		{"table name", map[string]string{"TIMELAKE_TABLE": "a/b"}, nil, func(r *Resolver) { Table.Get(r) },
			`TIMELAKE_TABLE (environment): invalid table name`},
		{"column type", map[string]string{"TIMELAKE_COLUMNS": "temperature:doubel"}, nil, func(r *Resolver) { Columns.Get(r) },
			`TIMELAKE_COLUMNS (environment): temperature:doubel: unknown column type "doubel" (expected boolean, int, long`},
		{"missing", nil, nil, func(r *Resolver) { Landing.Require(r) },
			"missing setting: pass --landing or set LANDING_BUCKET or TIMELAKE_LANDING"},
		{"first error kept", map[string]string{"TIMELAKE_MAX_FILES": "x", "TIMELAKE_PARALLEL": "y"}, nil,
			func(r *Resolver) { MaxFiles.Get(r); Parallel.Get(r) }, "TIMELAKE_MAX_FILES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := flags(t, Ingest, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResolver(fs, env(t, tc.vars, ""))
			tc.get(r)
			if r.Err() == nil || !strings.Contains(r.Err().Error(), tc.msg) || !IsUsage(r.Err()) {
				t.Fatalf("error %v, want a usage error with %q", r.Err(), tc.msg)
			}
		})
	}
}

// TestFlagsParseOnce checks that a flag's value is parsed when it is set,
// by the setting's own kind, and read back typed.
func TestFlagsParseOnce(t *testing.T) {
	_, err := flags(t, Ingest, "--max-files", "abc")
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Error() != `--max-files: expected a whole number >= 0, got "abc"` {
		t.Fatalf("error %v, want the setting's ValueError", err)
	}
	fs, err := flags(t, Ingest, "--memory-budget", "1GiB", "--series-key", "site, device_id,", "--no-create", "--assume-timezone", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(fs, env(t, map[string]string{"TIMELAKE_MEMORY_BUDGET": "bad", "TIMELAKE_NO_CREATE": "bad"}, ""))
	if got := MemoryBudget.Get(r); got != 1<<30 {
		t.Errorf("memory budget %d", got)
	}
	if got := SeriesKey.Get(r); !slices.Equal(got, []string{"site", "device_id"}) {
		t.Errorf("series key %q", got)
	}
	if !NoCreate.Get(r) || AssumeTimezone.Get(r).String() != "Europe/Berlin" {
		t.Errorf("no-create %v, zone %v", NoCreate.Get(r), AssumeTimezone.Get(r))
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	// A flag of the same name bound for another setting is not this one's.
	fs, err = flags(t, Upload, "--prefix", "site-3")
	if err != nil {
		t.Fatal(err)
	}
	r = NewResolver(fs, env(t, nil, ""))
	if got, up := LandingPrefix.Get(r), UploadPrefix.Get(r); got != "" || up != "site-3" {
		t.Errorf("ingest prefix %q, upload prefix %q", got, up)
	}
}

func TestBindHelp(t *testing.T) {
	fs, _ := flags(t, Global)
	fl := fs.Lookup("endpoint")
	if fl == nil || !strings.HasSuffix(fl.Usage, " (env AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_ENDPOINT)") || Owner(fl) != &Endpoint.Spec {
		t.Fatalf("--endpoint: %+v", fl)
	}
	fs, _ = flags(t, Upload, "--gzip", "--validate=false")
	if !Gzip.Get(NewResolver(fs, nil)) || Validate.Get(NewResolver(fs, nil)) {
		t.Error("switches: --gzip alone is true, --validate=false is false")
	}
	if _, err := flags(t, Global, "--s3-virtual-hosted", "true"); err != nil {
		t.Errorf("--s3-virtual-hosted takes a value: %v", err)
	}
}

func TestKinds(t *testing.T) {
	now := time.Date(2026, 1, 6, 12, 0, 0, 0, time.UTC)
	since := Since(func() time.Time { return now })
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "2026-01-05T11:00:00+01:00", want: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)},
		{in: "2026-01-05", want: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		{in: "yesterday", wantErr: true},
		{in: "-5h", wantErr: true},
	} {
		got, err := since.Parse(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !got.Equal(tc.want)) {
			t.Errorf("since %q = %v, %v", tc.in, got, err)
		}
	}
	// One grammar for every age and size (quantity): --older-than takes
	// weeks, --memory-budget a unit in any case, as table properties do.
	fs, err := flags(t, TablesExpire, "--older-than", "2w")
	if err != nil || ExpireOlderThan.Get(NewResolver(fs, nil)) != 14*24*time.Hour {
		t.Errorf("--older-than 2w: %v", err)
	}
	fs, err = flags(t, Ingest, "--memory-budget", "64mib", "--lease-ttl", "1d")
	if r := NewResolver(fs, nil); err != nil || MemoryBudget.Get(r) != 64<<20 || LeaseTTL.Get(r) != 24*time.Hour {
		t.Errorf("--memory-budget 64mib --lease-ttl 1d: %v", err)
	}
	if d, err := Duration(Positive, "7d").Parse("7d"); err != nil || d != 7*24*time.Hour {
		t.Errorf("age 7d: %v %v", d, err)
	}
}

func TestMasking(t *testing.T) {
	const secret = "tsec_0123456789abcdefghij"
	got := SecretAccessKey.Display(secret)
	if got != "set (25 characters)" {
		t.Errorf("secret shown as %q", got)
	}
	for i := 0; i+4 <= len(secret); i++ {
		if strings.Contains(got, secret[i:i+4]) {
			t.Fatalf("%q of the secret is shown", secret[i:i+4])
		}
	}
	if got := AccessKeyID.Display("tid_abcdefgh"); got != "tid_********" {
		t.Errorf("key id shown as %q", got)
	}
	if got := AccessKeyID.Display("abc"); got != "****" {
		t.Errorf("short key id shown as %q", got)
	}
	if got := Region.Display("auto"); got != "auto" {
		t.Errorf("plain value shown as %q", got)
	}
}

func TestCheckEnvFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not say who can read a file on Windows")
	}
	secret := "AWS_SECRET_ACCESS_KEY=tsec_x\n"
	for _, tc := range []struct {
		name string
		body string
		mode os.FileMode
		want string
	}{
		{"owner only", secret, 0o600, ""},
		{"group", secret, 0o640, "is open to its group (mode 0640)"},
		{"everyone", secret + "AWS_SESSION_TOKEN=t\n", 0o644, "holds AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and is open to its group and other users (mode 0644)"},
		{"others only", secret, 0o604, "is open to other users (mode 0604)"},
		{"no secret", "AWS_ACCESS_KEY_ID=tid_x\nTIMELAKE_TABLE=a.b\n", 0o644, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeEnvFile(t, tc.body, tc.mode)
			x := CheckEnvFile(env(t, nil, p))
			switch {
			case tc.want == "" && x != nil:
				t.Errorf("reported %s", x.Problem())
			case tc.want != "" && (x == nil || !strings.Contains(x.Problem(), tc.want) || x.Fix() != "chmod 600 "+p):
				t.Errorf("got %+v, want %q", x, tc.want)
			}
		})
	}
}

// TestRepeatedFlags checks a flag given once per item: every value kept in
// order, commas and "=" inside a value included, each item checked.
func TestRepeatedFlags(t *testing.T) {
	fs, err := flags(t, TablesAlter, "--set", "a=1,2", "--set", " b = x=y ", "--unset", "c", "--unset", "d")
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(fs, nil)
	if got := SetProperty.Get(r); !slices.Equal(got, []string{"a=1,2", "b = x=y"}) {
		t.Errorf("--set %q", got)
	}
	if got := UnsetProperty.Get(r); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("--unset %q", got)
	}
	var ve *ValueError
	if _, err := flags(t, TablesAlter, "--set", "a=1", "--set", "b"); !errors.As(err, &ve) ||
		ve.Error() != `--set: expected KEY=VALUE such as timelake.snapshot-retention=1h, got "b"` {
		t.Errorf("--set without =: %v", err)
	}
	if got := SetProperty.Get(NewResolver(nil, nil)); got != nil {
		t.Errorf("not given: %q", got)
	}
}

// TestFlagGivenTwice: a flag of one value given twice with two values is
// refused, naming both (the last would win silently); the same value twice
// is one value.
func TestFlagGivenTwice(t *testing.T) {
	var ve *ValueError
	if _, err := flags(t, TablesDelete, "--from", "2026-01-05T10:00:00Z", "--from", "2026-01-06T10:00:00Z"); !errors.As(err, &ve) ||
		!strings.Contains(ve.Error(), `given twice ("2026-01-05T10:00:00Z", then "2026-01-06T10:00:00Z"): it takes one value`) {
		t.Errorf("--from twice: %v", err)
	}
	fs, err := flags(t, TablesDelete, "--yes", "--yes", "--from", "2026-01-05T10:00:00Z", "--from", "2026-01-05T10:00:00Z")
	if err != nil {
		t.Fatalf("the same value twice: %v", err)
	}
	if got := DeleteFrom.Get(NewResolver(fs, nil)); !got.Equal(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("--from %v", got)
	}
}

func TestUnknownVariables(t *testing.T) {
	p := writeEnvFile(t, "TIMELAKE_TABLE=a.b\nTIMELAKE_MAX_FILE=3\nTIMELAKE_LANDING_BUCKET=x\nAWS_REGOIN=auto\nTIMELAKE_FAULTS_SEED=1\n", 0o600)
	got := UnknownVariables(env(t, nil, p), []string{"TIMELAKE_PREFIX=gw/", "TIMELAKE_MAX_FILE=4", "TIMELAKE_TABEL=a.b", "TIMELAKE_COLOUR=red", "TIMELAKE_TOOLS_DIR=/x", "TIMELAKE_JSON=1"})
	var lines []string
	for _, u := range got {
		lines = append(lines, u.String())
	}
	want := []string{
		"AWS_REGOIN (env file) is not a variable timelake reads; did you mean AWS_REGION?",
		"TIMELAKE_COLOUR (environment) is not a timelake variable",
		"TIMELAKE_JSON (environment) is not a timelake variable; --json has no variable on purpose (it says what one run does): pass the flag",
		"TIMELAKE_LANDING_BUCKET (env file) is not a timelake variable; did you mean LANDING_BUCKET?",
		"TIMELAKE_MAX_FILE (environment) is not a timelake variable; did you mean TIMELAKE_MAX_FILES?",
		"TIMELAKE_PREFIX (environment) is not a timelake variable; did you mean TIMELAKE_LANDING_PREFIX or TIMELAKE_UPLOAD_PREFIX?",
		"TIMELAKE_TABEL (environment) is not a timelake variable; did you mean TIMELAKE_TABLE?",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestUnknownVariablesNearMiss checks that an AWS_* or LANDING_* variable
// no setting reads is named with the one meant when it is one or two
// edits from it, wherever it is set, and that every other name (the AWS
// SDKs' own, other services' endpoints, unrelated variables) is left
// alone.
func TestUnknownVariablesNearMiss(t *testing.T) {
	p := writeEnvFile(t, "AWS_SECRET_ACCES_KEY=s\nAWS_ACCES_KEY_ID=k\nLANDING_BUCKT=s3://landing\nAWS_ENDPOINT_URL_S=http://x\n"+
		"AWS_CONFIG_FILE=/x\nAWS_ACCESS_KEY=old\nLANDING_ZONE=eu\nPAHT=/bin\n", 0o600)
	environ := []string{"AWS_ENDPOINT_ULR=http://x", "AWS_REGOIN=auto", "AWS_PROFLE=p", "AWS_SESION_TOKEN=t", "LANDING_BUCKETS=b",
		"AWS_ENDPOINT_URL_STS=http://x", "AWS_ENDPOINT_URL_SQS=http://x", "AWS_DEFAULT_PROFILE=p", "AWS_SDK_LOAD_CONFIG=1",
		"AWS_SHARED_CREDENTIALS_FILE=/x", "AWS_SECRET_KEY=old", "AWS_REGION=auto", "PATH=/bin", "HOME=/root", "LANG=C", "LANDING=x"}
	got := map[string]string{}
	for _, u := range UnknownVariables(env(t, nil, p), environ) {
		got[u.Name] = u.String()
	}
	want := map[string]string{
		"AWS_SECRET_ACCES_KEY": "AWS_SECRET_ACCES_KEY (env file) is not a variable timelake reads; did you mean AWS_SECRET_ACCESS_KEY?",
		"AWS_ACCES_KEY_ID":     "AWS_ACCES_KEY_ID (env file) is not a variable timelake reads; did you mean AWS_ACCESS_KEY_ID?",
		"LANDING_BUCKT":        "LANDING_BUCKT (env file) is not a variable timelake reads; did you mean LANDING_BUCKET?",
		"AWS_ENDPOINT_URL_S":   "AWS_ENDPOINT_URL_S (env file) is not a variable timelake reads; did you mean AWS_ENDPOINT_URL_S3?",
		"AWS_ENDPOINT_ULR":     "AWS_ENDPOINT_ULR (environment) is not a variable timelake reads; did you mean AWS_ENDPOINT_URL?",
		"AWS_REGOIN":           "AWS_REGOIN (environment) is not a variable timelake reads; did you mean AWS_REGION?",
		"AWS_PROFLE":           "AWS_PROFLE (environment) is not a variable timelake reads; did you mean AWS_PROFILE?",
		"AWS_SESION_TOKEN":     "AWS_SESION_TOKEN (environment) is not a variable timelake reads; did you mean AWS_SESSION_TOKEN?",
		"LANDING_BUCKETS":      "LANDING_BUCKETS (environment) is not a variable timelake reads; did you mean LANDING_BUCKET?",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %q, want %q", name, got[name], w)
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is reported (%q), but it is no misspelling of a variable timelake reads", name, g)
		}
	}
}

// TestMissingErrorMisspelled checks that a missing setting names the
// variable set under a misspelled name with the one meant.
func TestMissingErrorMisspelled(t *testing.T) {
	p := writeEnvFile(t, "LANDING_BUCKT=s3://landing\nAWS_REGOIN=auto\n", 0o600)
	e := env(t, nil, p)
	r := NewResolver(nil, e)
	Landing.Require(r)
	var me *MissingError
	if !errors.As(r.Err(), &me) {
		t.Fatalf("error %v, want a *MissingError", r.Err())
	}
	me.NoteMisspelled(UnknownVariables(e, []string{"TIMELAKE_LANDNG=x"}))
	want := "missing setting: pass --landing or set LANDING_BUCKET or TIMELAKE_LANDING; LANDING_BUCKT (env file) is set: did you mean LANDING_BUCKET?; " +
		"TIMELAKE_LANDNG (environment) is set: did you mean TIMELAKE_LANDING?"
	if got := me.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestRouteOptions: a rule's options are checked by the settings' own
// parsers; an unknown name, a setting of the whole run and a bad value
// are refused naming the rule and the option.
func TestRouteOptions(t *testing.T) {
	rs, err := Routes.Kind.Parse("readings/**=iot.readings;time-column=ts;series-key={device,site};partition=HOUR;column={v:decimal(9,2),n:long}, events/**=iot.events")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || len(rs[0].Options) != 4 || len(rs[1].Options) != 0 {
		t.Fatalf("rules: %q", rs)
	}
	for rule, want := range map[string]string{
		"r/**=iot.r;partition=week":            `option "partition": invalid partition granularity "week"`,
		"r/**=iot.r;time-unit=minutes":         `option "time-unit": "minutes" is not one of s, ms, us, ns`,
		"r/**=iot.r;column=v:float128":         `option "column"`,
		"r/**=iot.r;max-bad-rows=lots":         `option "max-bad-rows"`,
		"r/**=iot.r;evolve=always":             `option "evolve"`,
		"r/**=iot.r;timecolumn=ts":             `unknown option "timecolumn": a route takes time-column, series-key, partition`,
		"r/**=iot.r;lease-ttl=1m":              `option "lease-ttl" is a setting of the whole run`,
		"r/**=iot.r;table=iot.x":               `option "table" is a setting of the whole run`,
		"r/**=iot.r;csv-delimiter=;":           `option "csv-delimiter": no value`,
		"r/**=iot.r;source-column= x":          "", // trimmed: a column name
		"r/**=iot.r;assume-timezone=Mars/Base": `option "assume-timezone"`,
	} {
		_, err := Routes.Kind.Parse(rule)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", rule, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), rule) {
			t.Errorf("%s: %v; want an error naming the rule and %q", rule, err, want)
		}
	}
}

// TestForRoute: a route's options win over the flags and variables for
// the tables it creates, read by the settings' parsers; what it does not
// set is the run's; its errors name the option and the route.
func TestForRoute(t *testing.T) {
	rs, err := Routes.Kind.Parse("r/**=iot.r;partition=Hour;series-key={a,b}")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("ingest", pflag.ContinueOnError)
	Bind(fs, Ingest)
	if err := fs.Parse([]string{"--partition", "month", "--time-column", "ts"}); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(fs, env(t, map[string]string{"TIMELAKE_SERIES_KEY": "device"}, ""))
	rr := r.ForRoute(rs[0])
	if got := Partition.Get(rr); got != "hour" {
		t.Errorf("partition of the route: %q, want hour", got)
	}
	if got := SeriesKey.Get(rr); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("series key of the route: %q", got)
	}
	if got := TimeColumn.Get(rr); got != "ts" {
		t.Errorf("time column (the run's): %q", got)
	}
	if got := Partition.Get(r); got != "month" {
		t.Errorf("partition of the run: %q", got)
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	// A value the rule's check let through cannot be, but its source is
	// named: the option of the route.
	if from := rr.Lookup(&Partition.Spec); from.Describe() != "option partition of route r/**=iot.r;partition=Hour;series-key={a,b}" {
		t.Errorf("Describe: %q", from.Describe())
	}
}
