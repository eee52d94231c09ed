package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestS3TrialScript runs scripts/s3-trial.sh, the trial of the S3 path that
// docs/install.md shows, against the test S3 server, and checks that the seven
// sample files of examples/landing (300 rows each) were uploaded, loaded and
// make the table.
func TestS3TrialScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	srv := s3test.FromEnv(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "scripts", "s3-trial.sh"))
	cmd.Env = append(os.Environ(),
		"S3_TRIAL_DIR="+dir,
		s3test.EnvEndpoint+"="+srv.Endpoint,
		s3test.EnvAccessKey+"="+srv.AccessKey,
		s3test.EnvSecretKey+"="+srv.SecretKey,
		s3test.EnvRegion+"="+srv.Region,
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("s3-trial.sh: %v\n%s", err, out.String())
	}
	// A run over one file prints its line and no summary (gateway-4).
	if n, m := strings.Count(out.String(), "2 uploaded ("), strings.Count(out.String(), "uploaded         examples/landing/gateway-"); n != 3 || m != 7 {
		t.Errorf("want seven files uploaded, by three gateways of two files and one of one: got %d upload summaries of 2 and %d files:\n%s", n, m, out.String())
	}
	if !strings.Contains(out.String(), "iot.readings: 7 loaded (2100 rows), 0 already loaded, 0 quarantined") {
		t.Errorf("the ingest summary is not 7 files loaded, 2100 rows:\n%s", out.String())
	}

	envFile := filepath.Join(dir, "timelake.env")
	for _, f := range []string{envFile, filepath.Join(dir, "gateway.env")} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	r := run(t, dir, nil, "tables", "show", "iot.readings", "--json", "--env-file", envFile)
	if r.code != 0 {
		t.Fatalf("tables show: exit %d\n%s", r.code, r.stderr)
	}
	var show struct {
		Totals struct {
			Rows int64 `json:"rows"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &show); err != nil {
		t.Fatalf("tables show --json: %v\n%s", err, r.stdout)
	}
	if show.Totals.Rows != 2100 {
		t.Errorf("the table has %d rows, want 2100 (seven files of 300)", show.Totals.Rows)
	}
}
