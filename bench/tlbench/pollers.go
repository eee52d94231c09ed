package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

func init() {
	extraModes["pollers4"] = pollers4
}

// pollers4 is a fleet of four pollers of one table, sharded by landing
// prefix (docs/cron.md, "Several pollers for one table"): poller k loads
// the gateways whose number is k modulo 4, one `ingest --prefix
// gateway-NN/` run per gateway, and the four pollers run at the same time.
// It fails unless every file is loaded once, no run is refused a lease
// (exit 11) and no commit gives up; the table's row count must equal the
// rows loaded.
func pollers4(ctx context.Context, c *s3.Client, s Setup, _ string, r *Result) error {
	const pollers = 4
	gateways := 0
	for _, sp := range cases {
		gateways = max(gateways, sp.gateways)
	}
	table := lake.TableName{Namespace: "bench", Name: "readings"}
	var mu sync.Mutex
	var loaded, active, concurrent int
	var rows int64
	var errs []error
	var wg sync.WaitGroup
	for k := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each poller is its own process in a fleet: its own lake.
			l, err := lake.Open(ctx, "s3://"+s.Lake+"/warehouse", lake.Options{S3: c})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			for gw := k; gw < gateways; gw += pollers {
				mu.Lock()
				active++
				concurrent = max(concurrent, active)
				mu.Unlock()
				rep, err := ingest.Run(ctx, ingest.Config{
					Landing: storage.NewS3Store(c, s.Landing, "", storage.S3StoreOptions{}),
					Prefix:  fmt.Sprintf("gateway-%02d/", gw),
					Lake:    l, Table: table, SeriesKey: []string{"device_id"}, WorkDir: os.TempDir(),
				})
				mu.Lock()
				active--
				if err != nil {
					errs = append(errs, fmt.Errorf("poller %d, gateway-%02d/: %w", k, gw, err))
				} else {
					loaded += rep.Loaded
					rows += rep.Rows
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if loaded != s.Files {
		return fmt.Errorf("pollers4: loaded %d of %d files", loaded, s.Files)
	}
	l, err := lake.Open(ctx, "s3://"+s.Lake+"/warehouse", lake.Options{S3: c})
	if err != nil {
		return err
	}
	tbl, err := l.LoadTable(ctx, table)
	if err != nil {
		return err
	}
	snap := tbl.Metadata().CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return errors.New("pollers4: no current snapshot")
	}
	want := int64(cases[r.Case].rowsPerFile) * int64(s.Files)
	if total, _ := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64); total != rows || rows != want {
		return fmt.Errorf("pollers4: the table holds %d rows, the pollers loaded %d, the files hold %d", total, rows, want)
	}
	r.Rows, r.Concurrent = rows, concurrent
	return tableFacts(ctx, c, s, l, r)
}
