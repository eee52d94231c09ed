package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/tablename"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// interruptedLine is the whole of stderr after a stop by a signal: one
// line, no warnings of the writes the stop cut short.
var interruptedLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ Error: interrupted: [^\n]+\n$`)

// TestInterrupted: a stop (SIGINT, here the context the signal cancels)
// while a commit writes its manifests, and one during the maintenance
// after the files are committed, each end with one "interrupted" line on
// stderr and exit 130; no row is lost or doubled, and the next run loads
// the rest.
func TestInterrupted(t *testing.T) {
	srv := s3test.FromEnv(t)
	for _, tc := range []struct {
		name string
		// stop selects the request at which the run is stopped.
		stop s3fault.Rule
		// committed: every file is loaded before the stop.
		committed bool
		want      string
	}{
		{"during a commit", s3fault.Rule{Method: http.MethodPut, Key: "*/metadata/snap-*.avro"}, false,
			"the files not loaded yet stay in the landing bucket, nothing is lost: run ingest again to load them"},
		{"during maintenance", s3fault.Rule{Method: http.MethodGet, Key: "*/data/*.parquet"}, true,
			"maintenance was stopped midway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := s3fault.StartT(t, srv.Endpoint, 1)
			bucket := srv.NewBucket(t)
			env := map[string]string{"TIMELAKE_SETTLE_TIME": "0", "AWS_ENDPOINT_URL_S3": proxy.URL, "AWS_REGION": srv.Region,
				"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}
			landing := filepath.Join(t.TempDir(), "landing")
			if err := os.MkdirAll(filepath.Join(landing, "gw"), 0o755); err != nil {
				t.Fatal(err)
			}
			const files, rowsPerFile = 24, 3
			var want []string
			for i := range files {
				var b strings.Builder
				b.WriteString("device_id,time,v\n")
				for j := range rowsPerFile {
					fmt.Fprintf(&b, "d%d,2026-01-05T10:%02d:%02dZ,%d\n", i%3, i, j, i*rowsPerFile+j)
					want = append(want, fmt.Sprint(i*rowsPerFile+j))
				}
				if err := os.WriteFile(filepath.Join(landing, "gw", fmt.Sprintf("f%02d.csv", i)), []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sort.Strings(want)
			args := []string{"ingest", "--landing", landing, "--warehouse", "s3://" + bucket + "/warehouse", "--table", "iot.t",
				"--series-key", "device_id", "--files-per-commit", "8"}
			if tc.committed {
				// One snapshot a file: the maintenance that follows has small
				// files to compact.
				args = append(args, "--files-per-commit", "1")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := tc.stop
			stop.Name, stop.Times, stop.Delay, stop.Then = "stop", 1, 30*time.Second, cancel
			if !tc.committed {
				stop.Skip = 8 // the second commit's first manifest list: 8 files are loaded, 16 not
			}
			proxy.Add(stop)
			ios, out, errOut := iostreams.Test()
			code := commands.Execute(ctx, args, ios, getenv(env))
			if code != cmdutil.ExitCancelled || !interruptedLine.MatchString(errOut.String()) || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, want %d and one line with %q on stderr\nstdout:\n%s\nstderr:\n%s", code, cmdutil.ExitCancelled, tc.want, out, errOut)
			}
			t.Logf("stderr: %s", errOut)
			left := landingFiles(t, landing)
			if tc.committed != (left == 0) || (!tc.committed && left == files) {
				t.Fatalf("%d of %d files left in the landing folder after the stop\n%s", left, files, out)
			}
			proxy.Clear()
			ios, out, errOut = iostreams.Test()
			if code := commands.Execute(context.Background(), append(args, "--json"), ios, getenv(env)); code != cmdutil.ExitOK {
				t.Fatalf("rerun: exit %d\n%s\n%s", code, out, errOut)
			}
			var rep struct{ Loaded, AlreadyLoaded int }
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Loaded != left {
				t.Fatalf("rerun loaded %d files, want the %d left (%v)\n%s", rep.Loaded, left, err, out)
			}
			if n := landingFiles(t, landing); n != 0 {
				t.Fatalf("%d files left after the rerun", n)
			}
			if got := tableValues(t, srv, bucket); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("table holds %d rows %v, want %d %v", len(got), got, len(want), want)
			}
		})
	}
}

func landingFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "gw"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".csv") {
			n++
		}
	}
	return n
}

// tableValues reads column v of every row of iot.t, sorted.
func tableValues(t *testing.T, srv s3test.Server, bucket string) []string {
	t.Helper()
	ctx := context.Background()
	l, err := lake.Open(ctx, "s3://"+bucket+"/warehouse", lake.Options{S3: srv.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(ctx, tablename.Name{Namespace: "iot", Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, -1)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		col := rec.Column(rec.Schema().FieldIndices("v")[0])
		for i := range int(rec.NumRows()) {
			out = append(out, col.ValueStr(i))
		}
	}
	sort.Strings(out)
	return out
}
