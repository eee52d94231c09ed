package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/testutil/s3test"
)

// forged is what a key holding a newline would add to a cron log if it
// were printed as it is: a line of its own that looks like one of
// timelake's. (S3 listings are XML, which cannot carry most other control
// characters; a local folder's names can, see TestErrorsCannotForgeLines.)
const forged = "\n2026-01-05T10:00:00Z loaded          gw/forged.csv  999 rows  snapshot 1"

var timedLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `)

// TestKeysCannotForgeLogLines: a landing key holding a newline (S3 accepts
// any UTF-8 key) prints on its own line of the cron log, escaped, whatever
// becomes of its file: no line of stdout or stderr is one timelake did not
// write.
func TestKeysCannotForgeLogLines(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	env := s3Env(srv, landing, lakeBucket)
	putObject(t, client, landing, "gw/a.csv"+forged, readingsCSV(1, 5))
	putObject(t, client, landing, "gw/b.csv", readingsCSV(2, 5))

	r := run(t, t.TempDir(), env, "ingest")
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout+r.stderr, "\n"), "\n") {
		if !timedLine.MatchString(l) || strings.Contains(l, "gw/forged.csv") && !strings.Contains(l, `gw/a.csv\n2026-01-05T10:00:00Z loaded          gw/forged.csv`) {
			t.Errorf("a line timelake did not write: %q", l)
		}
	}
	if !strings.Contains(r.stdout, `gw/a.csv\n2026-01-05T10:00:00Z loaded          gw/forged.csv  999 rows  snapshot 1`) {
		t.Fatalf("the key is not printed escaped on its line:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestErrorsCannotForgeLines: on local folders, a table row and an error
// that name a key or a table holding a newline and an escape sequence
// (here tables batch of a key that is not loaded, tables show of a bad
// name) print it escaped on one line.
func TestErrorsCannotForgeLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "landing", "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "gw", "a.csv"), readingsCSV(1, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	complete(t, filepath.Join(dir, "landing", "gw", "a.csv"))
	env := []string{"LANDING_BUCKET=./landing", "TIMELAKE_WAREHOUSE=./lake", "TIMELAKE_TABLE=iot.readings", "TIMELAKE_SERIES_KEY=device_id"}
	if r := run(t, dir, env, "ingest"); r.code != 0 {
		t.Fatalf("ingest: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := run(t, dir, env, "tables", "batch", "iot.readings", "gw/b.csv"+forged+"\x1b[2K")
	if r.code != 4 || strings.Count(r.stdout, "\n") != 2 || strings.Contains(r.stdout, "\x1b") ||
		!strings.Contains(r.stdout, `gw/b.csv\n2026-01-05T10:00:00Z loaded          gw/forged.csv  999 rows  snapshot 1\x1b[2K`+"\tnot-loaded") {
		t.Fatalf("tables batch of a key not loaded: exit %d\n%q", r.code, r.stdout)
	}
	r = run(t, dir, env, "tables", "show", "iot.readings"+forged+"\x1b[2K")
	if r.code == 0 || strings.Count(r.stderr, "\n") > 2 || strings.Contains(r.stderr, "\x1b") || !strings.Contains(r.stderr, `\n2026-01-05T10:00:00Z`) {
		t.Fatalf("tables show of a bad name: exit %d\n%q", r.code, r.stderr)
	}
}
