package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	servecmd "github.com/timelake/timelake/internal/commands/serve"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/testutil/logbuf"
)

func getenv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// parse runs `timelake serve args` with env and returns the options the
// command resolved, or the exit code and stderr of a usage error.
func parse(t *testing.T, env map[string]string, args ...string) (*servecmd.Options, cmdutil.ExitCode, string) {
	t.Helper()
	ios, _, errOut := iostreams.Test()
	var got *servecmd.Options
	f := &cmdutil.Factory{IO: ios, Getenv: getenv(env)}
	root := commands.NewRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "serve" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(servecmd.NewCmdServe(f, func(_ context.Context, o *servecmd.Options) error { got = o; return nil }))
	root.SetArgs(append([]string{"serve"}, args...))
	if err := root.Execute(); err != nil {
		code := cmdutil.ExitFailed
		if cmdutil.IsUsage(err) {
			code = cmdutil.ExitUsage
		}
		return nil, code, err.Error() + errOut.String()
	}
	return got, cmdutil.ExitOK, errOut.String()
}

func TestSettings(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "LANDING_BUCKET": filepath.Join(dir, "landing"),
		"TIMELAKE_TABLE": "iot.readings", "TIMELAKE_FILES_PER_COMMIT": "7",
		"TIMELAKE_SWEEP": "90s", "TIMELAKE_WEBHOOK_TOKEN": "tok",
	}
	if err := os.MkdirAll(env["LANDING_BUCKET"], 0o755); err != nil {
		t.Fatal(err)
	}
	o, code, msg := parse(t, env)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	c := o.Server
	if c.Listen != "127.0.0.1:8080" || c.Sweep != 90*time.Second || c.Auth.Token != "tok" ||
		c.Ingest.Table.String() != "iot.readings" || c.Ingest.FilesPerCommit != 7 || c.Ingest.MaintenanceBudget != 10*time.Second {
		t.Fatalf("options: listen %s sweep %s auth %+v table %s per commit %d maintenance %s",
			c.Listen, c.Sweep, c.Auth, c.Ingest.Table, c.Ingest.FilesPerCommit, c.Ingest.MaintenanceBudget)
	}
	o, _, _ = parse(t, env, "--listen", "0.0.0.0:9000", "--sweep", "1m")
	if o.Server.Listen != "0.0.0.0:9000" || o.Server.Sweep != time.Minute {
		t.Fatalf("flags: %s %s", o.Server.Listen, o.Server.Sweep)
	}

	delete(env, "TIMELAKE_WEBHOOK_TOKEN")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		msg  string
	}{
		{"every address without authentication", nil, []string{"--listen", ":8080"}, "TIMELAKE_WEBHOOK_TOKEN"},
		{"a user without password", map[string]string{"TIMELAKE_WEBHOOK_USER": "u"}, nil, "TIMELAKE_WEBHOOK_PASSWORD"},
		{"a sweep under a second", map[string]string{"TIMELAKE_SWEEP": "10ms"}, nil, "TIMELAKE_SWEEP"},
		{"a listen address without port", nil, []string{"--listen", "localhost"}, "host:port"},
		{"max files is ingest's", nil, []string{"--max-files", "3"}, "unknown flag"},
		{"one name for both source columns", map[string]string{"TIMELAKE_SOURCE_COLUMN": "_src", "TIMELAKE_LOAD_TIME_COLUMN": "_src"}, nil, "--source-column and --load-time-column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			_, code, msg := parse(t, e, tc.args...)
			if code != cmdutil.ExitUsage || !strings.Contains(msg, tc.msg) {
				t.Fatalf("exit %d, want 2 with %q: %s", code, tc.msg, msg)
			}
		})
	}
}

// TestJSONLines: with --json every line is one JSON object with its time
// and type, files as ingest reports them.
func TestJSONLines(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, "gw", "a.csv"), []byte("time,v\n2026-01-05T10:00:00Z,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute) // settled: not being written
	if err := os.Chtimes(filepath.Join(landing, "gw", "a.csv"), old, old); err != nil {
		t.Fatal(err)
	}
	o, code, msg := parse(t, map[string]string{"TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "LANDING_BUCKET": landing,
		"TIMELAKE_TABLE": "iot.t"}, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	out := serveUntil(t, o, `"key":"gw/a.csv","status":"loaded"`)
	ios := o.IO
	var err error
	types := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var line servecmd.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Time.IsZero() || line.Type == "" {
			t.Fatalf("not a JSON line with time and type: %q (%v)", l, err)
		}
		types[line.Type]++
	}
	if types["created"] != 1 || types["file"] != 1 || types["status"] < 3 {
		t.Fatalf("lines by type %v:\n%s", types, out)
	}

	// A source column the table cannot fill (its time column) stops serve
	// at its start with a usage error.
	o, code, msg = parse(t, map[string]string{"TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "LANDING_BUCKET": landing,
		"TIMELAKE_TABLE": "iot.t", "TIMELAKE_SOURCE_COLUMN": "time"}, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	o.IO = ios
	if o.Server.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := servecmd.RunServe(context.Background(), o); !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), "is the table's time column") {
		t.Fatalf("serve with the time column as its source column: %v", err)
	}
}

// TestRoutes: with routes (TIMELAKE_ROUTES) serve has no table and loads
// each file into its route's table, its JSON file lines naming it; routes
// beside a table are a usage error, --notify-url with routes is not.
func TestRoutes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	for _, key := range []string{"readings/gw/a.csv", "events/gw/b.csv"} {
		p := filepath.Join(landing, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("time,v\n2026-01-05T10:00:00Z,1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "LANDING_BUCKET": landing,
		"TIMELAKE_ROUTES": "readings/**=iot.readings, events/**=iot.events"}
	o, code, msg := parse(t, env, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if len(o.Server.Routes) != 2 || o.Server.Ingest.Table.Name != "" {
		t.Fatalf("routes %v, table %q", o.Server.Routes, o.Server.Ingest.Table)
	}
	serveUntil(t, o, `"table":"iot.readings","file":{"key":"readings/gw/a.csv","status":"loaded"`,
		`"table":"iot.events","file":{"key":"events/gw/b.csv","status":"loaded"`)

	e := map[string]string{"TIMELAKE_TABLE": "iot.t"}
	for k, v := range env {
		e[k] = v
	}
	if _, code, msg := parse(t, e); code != cmdutil.ExitUsage || !strings.Contains(msg, "both name tables") {
		t.Errorf("routes and a table: exit %d: %s", code, msg)
	}
	// Alerts with routes are taken (per table: TestServeRoutedMetricsAndAlerts).
	e = map[string]string{"TIMELAKE_NOTIFY_URL": "https://hooks.example.net/x"}
	for k, v := range env {
		e[k] = v
	}
	if _, code, msg := parse(t, e); code != 0 {
		t.Errorf("routes and alerts: exit %d: %s", code, msg)
	}
}

// serveUntil runs o's serve on a port of its own until its output has every
// one of want, then stops it and returns the output.
func serveUntil(t *testing.T, o *servecmd.Options, want ...string) *logbuf.Buffer {
	t.Helper()
	out, _, _, stop := startServe(t, o)
	deadline := time.Now().Add(time.Minute)
	for _, w := range want {
		for !strings.Contains(out.String(), w) {
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("no %s in the output:\n%s", w, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return out
}

// startServe runs o's serve on a port of its own (its address returned),
// its output and stderr to the buffers returned; stop stops it and returns
// its error.
func startServe(t *testing.T, o *servecmd.Options) (out *logbuf.Buffer, errOut fmt.Stringer, addr string, stop func() error) {
	t.Helper()
	out = &logbuf.Buffer{}
	ios, _, errBuf := iostreams.Test()
	ios.Out = out
	o.IO = ios
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Server.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- servecmd.RunServe(ctx, o) }()
	return out, errBuf, ln.Addr().String(), func() error {
		cancel()
		return <-done
	}
}
