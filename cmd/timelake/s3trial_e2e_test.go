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
// docs/install.md shows, against the test S3 server, and checks that the six
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
	if n := strings.Count(out.String(), "2 uploaded ("); n != 3 {
		t.Errorf("want three gateways of two uploads each, got %d upload summaries:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "iot.readings: 6 loaded (1800 rows), 0 already loaded, 0 quarantined") {
		t.Errorf("the ingest summary is not 6 files loaded, 1800 rows:\n%s", out.String())
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
	if show.Totals.Rows != 1800 {
		t.Errorf("the table has %d rows, want 1800 (six files of 300)", show.Totals.Rows)
	}
}
