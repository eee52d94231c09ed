package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// The seeded day: before run 0, the day before the fleet's first minute is
// loaded the way a day of traffic leaves it, so that a short run also
// queries a full cold day: 24 ingest runs on the simulated clock, one at
// the end of each hour of that day, each loading every gateway's file of
// the hour (6,000 rows), with the product's defaults, maintenance
// included, so size-tiered compaction merges the hours as it merges a
// day's minutes, then one more round of maintenance a minute before run
// 0 merges the tiers the last hour filled. The day goes cold
// (compact-cold-after, 1 hour) during run 57 or 58, which rewrites it into
// one file as the runs after a real midnight do, before the first query
// sample (after run 59).

// seedRows is the number of rows the seeded day holds (0 without one).
func (s fleetSetup) seedRows() int64 {
	if !s.SeedDay {
		return 0
	}
	return int64(fleetSeedMinutes * s.Gateways * fleetRowsPerFile)
}

// rowsAfter is the number of rows the table holds after run minute.
func (s fleetSetup) rowsAfter(minute int) int64 {
	return s.seedRows() + int64((minute+1)*s.Gateways*fleetRowsPerFile)
}

// fullDay is the newest day whose every reading is loaded after run
// minute (the seeded day, or a day the runs went through), if any: the
// day the cold-day queries read.
func (s fleetSetup) fullDay(minute int) (time.Time, bool) {
	days := (minute + 1) / fleetSeedMinutes
	if days == 0 && !s.SeedDay {
		return time.Time{}, false
	}
	return fleetDataStart.AddDate(0, 0, days-1), true
}

// fleetSeed loads the seeded day into the fleet's table (not measured).
func fleetSeed(ctx context.Context, setup string) error {
	s, err := readFleetSetup(setup)
	if err != nil {
		return err
	}
	var c *s3.Client
	if s.Store == "s3" {
		if c, err = s.s3Client(ctx, nil); err != nil {
			return err
		}
	}
	drop, err := openFleetStore(s.Landing, c)
	if err != nil {
		return err
	}
	for h := range 24 {
		for gw := range s.Gateways {
			if _, err := drop.Put(ctx, fleetHourKey(gw, h), bytes.NewReader(fleetHourFile(gw, h)), storage.PutOptions{}); err != nil {
				return err
			}
		}
		t0 := time.Now()
		base := s.ClockStart.Add(time.Duration(h-24)*time.Hour + 58*time.Minute)
		clock := func() time.Time { return base.Add(min(time.Since(t0), 59*time.Second)) }
		rep, err := fleetIngest(ctx, s, setup, c, clock)
		if err != nil {
			return fmt.Errorf("seeded hour %d: %w", h, err)
		}
		if rep.Quarantined > 0 || rep.Loaded != s.Gateways {
			return fmt.Errorf("seeded hour %d: loaded %d of %d files (%d quarantined)", h, rep.Loaded, s.Gateways, rep.Quarantined)
		}
		// Every snapshot's time, before expiry forgets it (the bench
		// tells cold partitions by them).
		l, err := lake.Open(ctx, s.Warehouse, lake.Options{S3: c, Now: clock})
		if err != nil {
			return err
		}
		tbl, err := l.LoadTable(ctx, fleetTable)
		if err != nil {
			return err
		}
		if _, err := recordCommitTimes(snapshotTimesPath(setup), tbl); err != nil {
			return err
		}
		if h == 23 && totalRows(tbl) != s.seedRows() {
			return fmt.Errorf("seeded day: %d rows, expected %d", totalRows(tbl), s.seedRows())
		}
	}
	// The round of maintenance a poller's next run does, with nothing to
	// load: it merges the tiers the last hour filled, so that run 0's
	// compaction leaves the seeded day alone.
	at := s.ClockStart.Add(-time.Minute)
	l, err := lake.Open(ctx, s.Warehouse, lake.Options{S3: c, Now: func() time.Time { return at }})
	if err != nil {
		return err
	}
	tbl, err := l.LoadTable(ctx, fleetTable)
	if err != nil {
		return err
	}
	if _, err := tbl.Maintain(ctx, lake.MaintainOptions{Budget: ingest.DefaultMaintenanceBudget}); err != nil {
		return fmt.Errorf("seeded day: maintenance: %w", err)
	}
	_, err = recordCommitTimes(snapshotTimesPath(setup), tbl)
	return err
}

// snapshotTimesPath is the bench's record of snapshot times
// (recordCommitTimes), next to the setup.
func snapshotTimesPath(setup string) string {
	return filepath.Join(filepath.Dir(setup), "snapshot-times.tsv")
}
