package main

// The fleet bench (bench/run.sh fleet; docs/performance.md, "Fleet: a day
// of 20 gateways"): GATEWAYS gateways drop one small CSV file each per
// simulated minute and one ingest runs per simulated minute, with the
// product's defaults (maintenance after loading included), on a simulated
// clock: run k happens at the clock's start + k minutes, passed to ingest
// and to the lake, so snapshot retention, cold-after, the dedupe window and
// orphan ages act as they would over a real day. Every run is its own
// process (tlbench fleet-run), so its wall time, S3 requests and peak RSS
// are its own; between runs, not measured, the bench records the table's
// state and, every few simulated hours, has DuckDB query the live data
// files next to the same rows compacted into one sorted file per partition
// (bench/duckdb fleet). Minute 0 is midnight; the day before is seeded
// first (fleetseed.go), so the runs query a full cold day from an hour in.
// With -delay (s3 store) one fault proxy in this process holds every
// request to the S3 server that long, object storage's latency: the runs
// and the seeding use it as their endpoint (fleetSetup.Endpoint), and
// their results name the store s3+DELAY. The proxy's CPU time is this
// process's, not the runs'.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// fleetTable is the table the fleet loads into.
var fleetTable = lake.TableName{Namespace: "fleet", Name: "readings"}

// fleetSetup is the fleet.json one fleet bench shares with its runs.
type fleetSetup struct {
	Store string `json:"store"` // local or s3
	// Delay is what the fault proxy adds to every S3 request (-delay);
	// Endpoint the proxy's URL, the S3 endpoint of every run, the seeding
	// and the bench's own requests. Without a delay Endpoint is empty and
	// the runs use TIMELAKE_TEST_S3_ENDPOINT.
	Delay     time.Duration `json:"delay,omitempty"`
	Endpoint  string        `json:"endpoint,omitempty"`
	Landing   string        `json:"landing"`   // folder or s3://bucket
	Warehouse string        `json:"warehouse"` // folder or s3://bucket/warehouse
	Gateways  int           `json:"gateways"`
	Minutes   int           `json:"minutes"`
	// SeedDay: the day before minute 0 was loaded first (fleetSeed).
	SeedDay bool `json:"seed_day"`
	// ClockStart is the simulated time of run 0: the real time the bench
	// started, so the files' real modification times (which orphan removal
	// compares with the lake's clock) are never ahead of the clock while
	// every run takes less than a real minute.
	ClockStart time.Time `json:"clock_start"`
}

// fleetOptions are the flags of tlbench fleet.
type fleetOptions struct {
	store                 string
	gateways, minutes     int
	work, out, duckdb     string
	stateEvery, duckEvery int
	resendMinute          int // the run that re-sends gateway 0's first file; -1: none
	keep                  bool
	seed                  bool   // load the day before minute 0 first (fleetSeed)
	set                   string // KEY=VALUE,... table properties set after the first run
	// delay is added to every request to the S3 server by a fault proxy
	// in front of it (s3 store): object storage's latency.
	delay time.Duration
}

func (o fleetOptions) validate() error {
	switch {
	case o.store != "local" && o.store != "s3":
		return fmt.Errorf("-store %q: expected local or s3", o.store)
	case o.gateways < 1 || o.minutes < 1:
		return errors.New("-gateways and -minutes must be at least 1")
	case o.stateEvery < 1 || o.duckEvery < 1:
		return errors.New("-state-every and -duckdb-every must be at least 1")
	case o.work == "" || o.out == "":
		return errors.New("-work and -out are required")
	case o.delay < 0:
		return fmt.Errorf("-delay %s: must not be negative", o.delay)
	case o.delay > 0 && o.store != "s3":
		return fmt.Errorf("-delay %s: only with -store s3 (requests to the S3 server are delayed)", o.delay)
	}
	return nil
}

// fleetStoreName is the store's name in the results: local, s3, or s3
// with the delay of every request (s3+20ms).
func fleetStoreName(store string, delay time.Duration) string {
	if delay <= 0 {
		return store
	}
	return store + "+" + delay.String()
}

// name is the setup's store name in the results (fleetStoreName).
func (s fleetSetup) name() string { return fleetStoreName(s.Store, s.Delay) }

// s3Client is a client of the setup's S3 endpoint: the fault proxy's with
// a delay, TIMELAKE_TEST_S3_ENDPOINT without. hc: as s3Client's.
func (s fleetSetup) s3Client(ctx context.Context, hc aws.HTTPClient) (*s3.Client, error) {
	if s.Endpoint == "" {
		return s3Client(ctx, hc)
	}
	return s3ClientAt(ctx, s.Endpoint, hc)
}

// runFleet runs the whole bench for one store, one process per run, and
// appends every result line to o.out.
func runFleet(ctx context.Context, o fleetOptions, progress io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	name := fleetStoreName(o.store, o.delay)
	work := filepath.Join(o.work, name)
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	s, cleanup, err := newFleetSetup(ctx, o, work)
	if err != nil {
		return err
	}
	if !o.keep {
		defer cleanup()
	}
	if o.delay > 0 {
		// One proxy for the whole bench: every process it starts sends its
		// S3 requests through it (the setup's endpoint), each held o.delay.
		proxy, err := s3fault.Start(os.Getenv("TIMELAKE_TEST_S3_ENDPOINT"), 1)
		if err != nil {
			return err
		}
		defer proxy.Close()
		proxy.Add(s3fault.Rule{Name: "latency", Delay: o.delay})
		s.Endpoint = proxy.URL
	}
	setupPath := filepath.Join(work, "fleet.json")
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(setupPath, b, 0o644); err != nil {
		return err
	}
	out, err := os.OpenFile(o.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %v: %w", filepath.Base(name), args, err)
		}
		return nil
	}
	if o.seed {
		fmt.Fprintf(progress, "fleet %s: seeding the day before with %d gateways\n", name, o.gateways)
		if err := run(self, "fleet-seed", "-setup", setupPath); err != nil {
			return err
		}
	}
	began := time.Now()
	for m := range o.minutes {
		last := m == o.minutes-1
		args := []string{"fleet-run", "-setup", setupPath, "-minute", strconv.Itoa(m)}
		if (m+1)%o.stateEvery == 0 || last {
			args = append(args, "-state")
		}
		duck := o.duckdb != "" && ((m+1)%o.duckEvery == 0 || last)
		files := filepath.Join(work, "live-files.tsv")
		if duck {
			args = append(args, "-files", files)
		}
		if m == o.resendMinute {
			args = append(args, "-resend")
		}
		if m == 0 && o.set != "" {
			args = append(args, "-set", o.set)
		}
		if err := run(self, args...); err != nil {
			return err
		}
		if duck {
			// The newest complete hour of readings, and one series of it.
			end := fleetDataStart.Add(time.Duration(m+1) * time.Minute)
			args := []string{"fleet", "-files", files, "-store", name, "-minute", strconv.Itoa(m),
				"-series", fleetDevice(0, 1), "-from", end.Add(-time.Hour).Format(time.RFC3339), "-to", end.Format(time.RFC3339),
				"-expect-rows", strconv.FormatInt(s.rowsAfter(m), 10), "-work", filepath.Join(work, "duckdb")}
			if day, ok := s.fullDay(m); ok {
				args = append(args, "-cold-day", day.Format("2006-01-02"))
			}
			if err := run(o.duckdb, args...); err != nil {
				return err
			}
		}
		if (m+1)%60 == 0 || last {
			fmt.Fprintf(progress, "fleet %s: %d gateways, simulated minute %d of %d, %s\n",
				name, o.gateways, m+1, o.minutes, time.Since(began).Round(time.Second))
		}
	}
	return nil
}

// newFleetSetup creates the landing and warehouse locations: folders under
// work, or two fresh buckets on the S3 server. cleanup removes them.
func newFleetSetup(ctx context.Context, o fleetOptions, work string) (fleetSetup, func(), error) {
	s := fleetSetup{Store: o.store, Delay: o.delay, Gateways: o.gateways, Minutes: o.minutes, SeedDay: o.seed,
		ClockStart: time.Now().UTC().Truncate(time.Second)}
	if o.store == "local" {
		s.Landing, s.Warehouse = filepath.Join(work, "landing"), filepath.Join(work, "warehouse")
		for _, d := range []string{s.Landing, s.Warehouse} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return s, nil, err
			}
		}
		return s, func() { _ = os.RemoveAll(s.Landing); _ = os.RemoveAll(s.Warehouse) }, nil
	}
	c, err := s3Client(ctx, nil)
	if err != nil {
		return s, nil, err
	}
	buckets := Setup{Landing: randomName("fleet-landing"), Lake: randomName("fleet-lake")}
	for _, b := range []string{buckets.Landing, buckets.Lake} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			return s, nil, err
		}
	}
	s.Landing, s.Warehouse = "s3://"+buckets.Landing, "s3://"+buckets.Lake+"/warehouse"
	p := filepath.Join(work, "buckets.json")
	b, err := json.Marshal(buckets)
	if err != nil {
		return s, nil, err
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return s, nil, err
	}
	return s, func() {
		if err := cleanup(context.WithoutCancel(ctx), p); err != nil {
			fmt.Fprintln(os.Stderr, "tlbench: fleet clean-up:", err)
		}
	}, nil
}

// openFleetStore opens a landing or warehouse location of the setup with
// client c (S3 locations).
func openFleetStore(uri string, c *s3.Client) (storage.Store, error) {
	loc, err := storage.ParseLocation(uri, false)
	if err != nil {
		return nil, err
	}
	if loc.IsS3() {
		return storage.NewS3Store(c, loc.Bucket, loc.Prefix, storage.S3StoreOptions{}), nil
	}
	return storage.NewLocalStore(loc.Dir)
}

func readFleetSetup(p string) (fleetSetup, error) {
	var s fleetSetup
	b, err := os.ReadFile(p)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}
