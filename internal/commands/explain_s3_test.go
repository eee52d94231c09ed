package commands_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestStoreErrorsHaveTheirFix checks that upload, tables and landing word
// the S3 errors of wrong credentials as ingest and env check do: one
// Error: line naming the problem, then its Fix: line, never the SDK's dump.
func TestStoreErrorsHaveTheirFix(t *testing.T) {
	srv := s3test.FromEnv(t)
	bucket := srv.NewBucket(t)
	file := filepath.Join(t.TempDir(), "r.csv")
	if err := os.WriteFile(file, []byte("time,device_id,v\n2026-01-05T10:00:00Z,a,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"AWS_ENDPOINT_URL": srv.Endpoint, "AWS_REGION": srv.Region,
		"LANDING_BUCKET": bucket, "TIMELAKE_WAREHOUSE": "s3://" + bucket + "/lake", "TIMELAKE_TABLE": "iot.readings"}
	for _, creds := range []struct {
		name, id, secret, reason, fix string
	}{
		{"wrong key id", "wrong-key-id", srv.SecretKey, "does not know access key id wron********", "Fix: copy the access key id again into AWS_ACCESS_KEY_ID (environment)"},
		{"wrong secret", srv.AccessKey, "wrong-secret", "the secret key does not match access key id", "Fix: copy the secret access key again into AWS_SECRET_ACCESS_KEY (environment)"},
	} {
		env := map[string]string{"AWS_ACCESS_KEY_ID": creds.id, "AWS_SECRET_ACCESS_KEY": creds.secret}
		for k, v := range base {
			env[k] = v
		}
		for _, args := range [][]string{{"upload", "--gateway", "gw-1", file}, {"tables", "list"}, {"tables", "show"}, {"landing", "rejected"}} {
			r := run(t, env, args...)
			if r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, creds.reason) || !strings.Contains(r.errOut, creds.fix) ||
				strings.Contains(r.errOut, "RequestID") || strings.Contains(r.errOut, "does not exist") {
				t.Errorf("%s, %v: exit %d, stderr:\n%s", creds.name, args, r.code, r.errOut)
			}
		}
	}
}
