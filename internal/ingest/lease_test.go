package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestFilesStillBeingWritten: in a local landing folder, a file that is
// still being written is never loaded half: it is reported as waiting and
// loaded whole by a later run. A file written just before the run (the
// quick start copies its files and runs ingest at once) settles during
// the run's short wait and is loaded by it.
func TestFilesStillBeingWritten(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	dir := e.landing.(*storage.LocalStore).Path("")
	e.put(t, "gw/just-copied.csv", csvFile(readings(1, 0, 10), false, false))

	// A writer appends one row every 20 ms, as a logger would.
	rows := readings(2, 0, 60)
	body := csvFile(rows, false, false)
	lines := strings.SplitAfter(string(body), "\n")
	path := dir + "/gw/growing.csv"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan error, 1)
	go func() {
		defer close(writerDone)
		for _, l := range lines {
			if _, err := f.WriteString(l); err != nil {
				writerDone <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		writerDone <- f.Close()
	}()

	cfg := e.config()
	cfg.SettleTime = 300 * time.Millisecond
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]ingest.Status{}
	for _, r := range rep.Files {
		status[r.Key] = r.Status
	}
	if status["gw/just-copied.csv"] != ingest.Loaded || status["gw/growing.csv"] != ingest.Waiting || rep.Waiting != 1 {
		t.Fatalf("first run: %+v", rep.Files)
	}
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 || rep.Rows != int64(len(rows)) {
		t.Fatalf("after the writer finished: %+v, %v", rep.Files, err)
	}
	if n := len(tableRows(t, e)); n != 10+len(rows) {
		t.Fatalf("table rows %d, want %d", n, 10+len(rows))
	}
}

// TestMissingLakeBucket: a missing lake bucket is an error that says so,
// also when the landing bucket is empty (not "nothing to load").
func TestMissingLakeBucket(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landingBucket := srv.NewBucket(t)
	missing := landingBucket + "-lake"
	l, err := lake.Open(context.Background(), "s3://"+missing+"/warehouse", lake.Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.Config{Landing: storage.NewS3Store(client, landingBucket, "", storage.S3StoreOptions{}), Lake: l, Table: tableName,
		Warehouse: storage.NewS3Store(client, missing, "warehouse", storage.S3StoreOptions{})}
	for _, dryRun := range []bool{false, true} {
		cfg.DryRun = dryRun
		_, err = ingest.Run(context.Background(), cfg)
		var p *storage.Problem
		if !errors.As(err, &p) || p.Kind != storage.ProblemMissingBucket || !strings.Contains(p.Reason, "bucket "+missing+" does not exist") ||
			!strings.Contains(p.Fix, "create bucket "+missing) {
			t.Fatalf("dry run %v: error %v (%+v), want the missing lake bucket with its fix", dryRun, err, p)
		}
	}
}

// TestWrongCredentialsAreExplained: a storage error of the landing bucket
// comes with env check's reason and fix.
func TestWrongCredentialsAreExplained(t *testing.T) {
	e := s3Env(t)
	srv := s3test.FromEnv(t)
	s3store := e.landing.(*storage.S3Store)
	bad, err := storage.NewS3Client(context.Background(), storage.S3Config{Endpoint: srv.Endpoint, Region: srv.Region,
		AccessKeyID: srv.AccessKey, SecretAccessKey: "wrong-secret", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.Landing = storage.NewS3Store(bad, s3store.Bucket(), "", storage.S3StoreOptions{})
	cfg.Explain.Names = storage.Names{KeyID: "time********", SecretKeyVar: "AWS_SECRET_ACCESS_KEY (env file timelake.env)"}
	_, err = ingest.Run(context.Background(), cfg)
	var p *storage.Problem
	if !errors.As(err, &p) || p.Kind != storage.ProblemCredentials || !strings.Contains(p.Reason, "the secret key does not match") ||
		!strings.Contains(p.Fix, "AWS_SECRET_ACCESS_KEY (env file timelake.env)") {
		t.Fatalf("error %v (%+v), want the credentials explained", err, p)
	}
}

func TestDryRunSaysItWouldCreateTheTable(t *testing.T) {
	e := localEnv(t)
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	cfg := e.config()
	cfg.DryRun = true
	planned := ""
	cfg.OnPlan = func(rep *ingest.Report) { planned = rep.WouldCreate }
	rep, err := ingest.Run(context.Background(), cfg)
	if err != nil || rep.WouldCreate != "iot.readings" || planned != "iot.readings" {
		t.Fatalf("dry run: would create %q (planned %q), %v", rep.WouldCreate, planned, err)
	}
	if _, err := e.lake.LoadTable(context.Background(), tableName); !errors.Is(err, lake.ErrTableNotFound) {
		t.Fatalf("the dry run created the table: %v", err)
	}
}

// TestBreakLease: a stale lease blocks a run; --break-lease removes it,
// reports who held it and since when, and the run loads.
func TestBreakLease(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	stuck := landing.LeaseOptions{Table: "iot.readings", Holder: landing.Holder{Token: "poller-1:4242:0a1b2c"}, TTL: time.Hour}
	if _, err := landing.AcquireLease(ctx, e.landing, stuck); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Run(ctx, e.config()); !errors.Is(err, ingest.ErrLeaseHeld) {
		t.Fatalf("error %v, want the lease held", err)
	}
	cfg := e.config()
	cfg.BreakLease = true
	var told []landing.LeaseInfo
	cfg.OnPlan = func(rep *ingest.Report) { told = append(told, rep.BrokenLeases...) }
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 {
		t.Fatalf("run with BreakLease: %+v, %v", rep, err)
	}
	if len(told) != 1 || told[0].Holder != "poller-1:4242:0a1b2c" || told[0].Acquired.IsZero() || len(rep.BrokenLeases) != 1 {
		t.Fatalf("broken leases reported: %+v / %+v", told, rep.BrokenLeases)
	}
}

// TestPollersOnDisjointPrefixes: four pollers of one table on disjoint
// prefixes of one landing bucket run at the same time: none is refused
// (exit 11), no commit gives up, and the rows are exact. A poller on an
// overlapping prefix is refused.
func TestPollersOnDisjointPrefixes(t *testing.T) {
	ctx := context.Background()
	e := s3Env(t)
	var want []string
	prefixes := []string{"gw-a/", "gw-b/", "gw-c/", "gw-d/"}
	for p, prefix := range prefixes {
		for i := range 6 {
			rows := readings(p+1, i, 20)
			for _, r := range rows {
				want = append(want, r.String())
			}
			e.put(t, fmt.Sprintf("%s%02d.csv", prefix, i), csvFile(rows, false, false))
		}
	}
	slices.Sort(want)
	// The table exists before the pollers start, as in a running fleet.
	seed := e.config()
	seed.Prefix = "seed/"
	seedRows := readings(9, 0, 4) // fractions: temperature_c becomes a double
	e.put(t, "seed/0.csv", csvFile(seedRows, false, false))
	for _, r := range seedRows {
		want = append(want, r.String())
	}
	slices.Sort(want)
	if _, err := ingest.Run(ctx, seed); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	reps := make([]*ingest.Report, len(prefixes))
	errs := make([]error, len(prefixes))
	start := make(chan struct{})
	for i, prefix := range prefixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := e.config()
			cfg.Prefix = prefix
			cfg.FilesPerCommit = 1 // many commits: they race
			<-start
			reps[i], errs[i] = ingest.Run(ctx, cfg)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("poller %s: %v", prefixes[i], err)
		}
		if reps[i].Loaded != 6 {
			t.Fatalf("poller %s loaded %d files, want 6: %+v", prefixes[i], reps[i].Loaded, reps[i].Files)
		}
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("rows %d, want %d", len(got), len(want))
	}

	// While a poller holds gw-a/, a run on the whole bucket is refused.
	held, err := landing.AcquireLease(ctx, e.landing, landing.LeaseOptions{Table: "iot.readings", Prefix: "gw-a/", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := ingest.Run(ctx, e.config()); !errors.Is(err, ingest.ErrLeaseHeld) || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("a run on the whole bucket: %v, want refused (overlapping prefix)", err)
	}
}
