package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/commands/gateway"
	"github.com/timelake/timelake/internal/iostreams"
)

// TestLinksNoLake: the gateway binary links neither iceberg-go nor the
// lake (nor what only the lake's commands need).
func TestLinksNoLake(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/timelake-gateway")
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps named %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		for _, banned := range []string{"github.com/apache/iceberg-go", "github.com/timelake/timelake/internal/lake",
			"github.com/timelake/timelake/internal/ingest", "github.com/timelake/timelake/internal/commands/lakecmd"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("timelake-gateway links %s", dep)
			}
		}
	}
}

func run(t *testing.T, env map[string]string, args ...string) (cmdutil.ExitCode, string, string) {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := gateway.Execute(ctx, args, ios, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return code, out.String(), errOut.String()
}

// TestUploadAndCheckLanding: the gateway binary's upload puts a validated
// file into a landing folder, and its env check reports the landing side
// only.
func TestUploadAndCheckLanding(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.Mkdir(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "readings.csv")
	if err := os.WriteFile(file, []byte("time,device,temperature\n2026-01-05T10:00:00Z,d1,21.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LANDING_BUCKET": landing}
	code, out, errOut := run(t, env, "upload", "--gateway", "gw-1", file)
	if code != cmdutil.ExitOK || !strings.Contains(out, "gw-1/") {
		t.Fatalf("upload: exit %d\n%s\n%s", code, out, errOut)
	}
	keys, _ := filepath.Glob(filepath.Join(landing, "gw-1", "*.csv"))
	if len(keys) != 1 {
		t.Fatalf("landing holds %v, want one file under gw-1/", keys)
	}

	// It reads no table: given one, it says so and validates with its own
	// settings.
	withTable := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "TIMELAKE_TABLE": "iot.readings"}
	code, out, errOut = run(t, withTable, "upload", "--gateway", "gw-2", file)
	if code != cmdutil.ExitOK || !strings.Contains(errOut, "timelake-gateway reads no table") || !strings.Contains(errOut, "--profile-file") {
		t.Errorf("upload with a table set: exit %d\n%s\n%s", code, out, errOut)
	}

	// A file --validate refuses is not sent.
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("time,device,temperature\nyesterday,d1,21.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, env, "upload", "--gateway", "gw-1", bad); code == cmdutil.ExitOK {
		t.Errorf("upload of a file with a bad time: exit 0\n%s", out)
	}

	checkRows := func(args ...string) map[string]envcheck.Check {
		t.Helper()
		code, out, errOut := run(t, env, append([]string{"env", "check", "--json"}, args...)...)
		if code != cmdutil.ExitOK {
			t.Fatalf("env check %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		var rep envcheck.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		rows := map[string]envcheck.Check{}
		for _, c := range rep.Checks {
			rows[c.Name] = c
		}
		for _, ingestSide := range []string{envcheck.CheckWarehouse, envcheck.CheckTableName, envcheck.CheckCatalog,
			envcheck.CheckLakeBucket, envcheck.CheckLakeCommit, envcheck.CheckTable,
			envcheck.CheckLandingBucket, envcheck.CheckLandingLease} {
			if _, ok := rows[ingestSide]; ok {
				t.Errorf("the gateway's env check has ingest's row %s", ingestSide)
			}
		}
		return rows
	}

	// Without a gateway name it says which setting is missing and skips
	// the probes.
	rows := checkRows()
	if r := rows[envcheck.CheckUploadKeys]; r.Result != envcheck.Warn || !strings.Contains(r.Fix, "TIMELAKE_GATEWAY") || !strings.Contains(r.Fix, "--gateway") {
		t.Errorf("upload-keys without a gateway: %+v", r)
	}
	for _, name := range []string{envcheck.CheckUploadPut, envcheck.CheckUploadConditional} {
		if r := rows[name]; r.Result != envcheck.Skip {
			t.Errorf("%s without a gateway: %+v", name, r)
		}
	}

	// With one, it probes below the gateway's keys and leaves nothing.
	rows = checkRows("--gateway", "gw-1", "--prefix", "site-3")
	if r := rows[envcheck.CheckUploadKeys]; r.Result != envcheck.OK || !strings.Contains(r.Detail, "site-3/gw-1/") {
		t.Errorf("upload-keys: %+v", r)
	}
	for _, name := range []string{envcheck.CheckUploadPut, envcheck.CheckUploadConditional} {
		if r := rows[name]; r.Result != envcheck.OK || !strings.Contains(r.Detail, "site-3/gw-1/.timelake-env-check") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if _, err := os.Stat(filepath.Join(landing, "site-3")); !os.IsNotExist(err) {
		t.Errorf("env check left %s behind (err %v)", filepath.Join(landing, "site-3"), err)
	}
}

// TestMisspelledLanding: the gateway binary names a misspelled
// LANDING_BUCKET of the env file with the one meant, in upload's error
// (exit 2) and in env check's landing and variables rows.
func TestMisspelledLanding(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "gateway.env")
	if err := os.WriteFile(envFile, []byte("LANDING_BUCKT="+filepath.Join(dir, "landing")+"\nTIMELAKE_GATEWAY=gw-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "readings.csv")
	if err := os.WriteFile(file, []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,21.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	meant := "LANDING_BUCKT (env file) is set: did you mean LANDING_BUCKET?"
	code, _, errOut := run(t, nil, "upload", "--env-file", envFile, file)
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "Error: missing setting: pass --landing or set LANDING_BUCKET or TIMELAKE_LANDING; "+meant) {
		t.Errorf("upload: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := run(t, nil, "env", "check", "--env-file", envFile)
	if code != cmdutil.ExitFailed || !strings.Contains(out, "landing\tfail\tnot set; "+meant) ||
		!strings.Contains(out, "LANDING_BUCKT (env file) is not a variable timelake reads; did you mean LANDING_BUCKET?") {
		t.Errorf("env check: exit %d, stdout:\n%s", code, out)
	}
}

// TestUploadValidatesWithRoutes: the gateway binary validates a file with
// the options of the route that takes its key (it reads no table), and
// refuses a key no route takes.
func TestUploadValidatesWithRoutes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	file := filepath.Join(dir, "readings.csv")
	if err := os.WriteFile(file, []byte("ts,device,temperature\n2026-01-05T10:00:00Z,d1,21.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LANDING_BUCKET": landing, "TIMELAKE_ROUTES": "a/**=iot.a;time-column=ts\nb/**=iot.b;time-column=at"}
	sent := func(key string) bool {
		_, err := os.Stat(filepath.Join(landing, key))
		return err == nil
	}
	if code, out, errOut := run(t, env, "upload", "--key", "a/f.csv", file); code != cmdutil.ExitOK || !sent("a/f.csv") {
		t.Errorf("under a/: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "upload", "--key", "b/f.csv", file); code != cmdutil.ExitFailed || !strings.Contains(errOut, `column "at": time column is not in the file`) || sent("b/f.csv") {
		t.Errorf("under b/: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "upload", "--key", "c/f.csv", file); code != cmdutil.ExitFailed || !strings.Contains(errOut, `no route takes the key "c/f.csv"`) || sent("c/f.csv") {
		t.Errorf("unrouted: exit %d\n%s%s", code, out, errOut)
	}
}
