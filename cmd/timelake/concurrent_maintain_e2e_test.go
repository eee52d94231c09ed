package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestConcurrentMaintain: three `tables maintain` at once on a table with
// many snapshots and small files, settings that make every round compact,
// expire and remove orphans: each round finds files another one deleted
// first, and every one exits 0 with the table's rows intact. On local
// folders, and on the S3 server through the fault proxy, which holds each
// delete a little so that the rounds overlap. A few trials each.
func TestConcurrentMaintain(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	for _, where := range []string{"local", "s3"} {
		t.Run(where, func(t *testing.T) {
			for trial := range 3 {
				dir := t.TempDir()
				var env []string
				var open func() *lake.Lake
				var send func(key string, body []byte)
				if where == "local" {
					env = []string{"TIMELAKE_WAREHOUSE=./lake", "TIMELAKE_TABLE=iot.readings", "LANDING_BUCKET=./landing"}
					open = func() *lake.Lake {
						l, err := lake.Open(context.Background(), filepath.Join(dir, "lake"), lake.Options{})
						if err != nil {
							t.Fatal(err)
						}
						return l
					}
					send = func(key string, body []byte) {
						p := filepath.Join(dir, "landing", filepath.FromSlash(key))
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, body, 0o644); err != nil {
							t.Fatal(err)
						}
						old := time.Now().Add(-time.Minute) // settled
						if err := os.Chtimes(p, old, old); err != nil {
							t.Fatal(err)
						}
					}
				} else {
					landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
					proxy := s3fault.StartT(t, srv.Endpoint, uint64(trial+1))
					proxy.Add(s3fault.Rule{Name: "slow deletes", Method: http.MethodDelete, Bucket: lakeBucket, Delay: 20 * time.Millisecond})
					env = s3Env(srv, landing, lakeBucket, "AWS_ENDPOINT_URL_S3="+proxy.URL)
					open = func() *lake.Lake {
						l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
						if err != nil {
							t.Fatal(err)
						}
						return l
					}
					send = func(key string, body []byte) { putObject(t, client, landing, key, body) }
				}
				for i := range 30 {
					send(fmt.Sprintf("gw-%d/%03d.csv", i%3, i), readingsCSV(i, 20))
				}
				if r := run(t, dir, env, "ingest", "--series-key", "device_id", "--maintenance-budget", "0", "--files-per-commit", "1", "--parallel", "1"); r.code != 0 {
					t.Fatalf("ingest: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				if r := run(t, dir, env, "tables", "alter", "iot.readings", "--set", "timelake.snapshot-retention=1s",
					"--set", "timelake.min-snapshots=1", "--set", "timelake.compact-cold-after=1s", "--set", "timelake.orphan-min-age=1s"); r.code != 0 {
					t.Fatalf("alter: exit %d\n%s", r.code, r.stderr)
				}
				want := tableRows(t, open())
				time.Sleep(1500 * time.Millisecond) // every snapshot and file past those ages
				var wg sync.WaitGroup
				results := make([]result, 3)
				for k := range results {
					wg.Add(1)
					go func() {
						defer wg.Done()
						results[k] = run(t, dir, env, "tables", "maintain", "iot.readings", "--orphans")
					}()
				}
				wg.Wait()
				for k, r := range results {
					if r.code != 0 {
						t.Fatalf("trial %d, round %d of 3 at once: exit %d\n%s\n%s", trial, k, r.code, r.stdout, r.stderr)
					}
				}
				if got := tableRows(t, open()); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("trial %d: %d rows after maintenance, want %d", trial, len(got), len(want))
				}
			}
		})
	}
}
