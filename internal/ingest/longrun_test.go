package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// longRunFiles lands n small files of 2 rows each under gw/ and returns
// their keys and rows (sorted, as tableRows gives them).
func longRunFiles(t *testing.T, e env, n int) (keys, want []string) {
	t.Helper()
	for i := range n {
		rows := readings(i%5+1, i, 2)
		key := fmt.Sprintf("gw/f-%05d.csv", i)
		e.put(t, key, csvFile(rows, false, false))
		keys = append(keys, key)
		for _, r := range rows {
			want = append(want, r.String())
		}
	}
	sort.Strings(want)
	return keys, want
}

// longRunTable creates the table with one file and sets its properties.
func longRunTable(t *testing.T, e env, props map[string]string) []string {
	t.Helper()
	ctx := context.Background()
	rows := readings(9, 999, 2)
	e.put(t, "first/a.csv", csvFile(rows, false, false))
	cfg := e.config()
	cfg.Prefix = "first/"
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.String())
	}
	return out
}

// longRunSetup creates the table with props, lands n files under gw/ and
// returns their keys, every row the table should then hold (sorted), and a
// run's config over them: perCommit files a commit, expiry between
// commits past due snapshots due, 10 s of maintenance budget.
func longRunSetup(t *testing.T, e env, props map[string]string, n, perCommit, due int) (ingest.Config, []string, []string) {
	t.Helper()
	first := longRunTable(t, e, props)
	keys, want := longRunFiles(t, e, n)
	want = append(want, first...)
	sort.Strings(want)
	cfg := e.config()
	cfg.Prefix = "gw/"
	cfg.FilesPerCommit, cfg.CommitWait, cfg.Parallel = perCommit, 50*time.Millisecond, 2
	cfg.ExpireDue = due
	cfg.MaintenanceBudget = 10 * time.Second
	return cfg, keys, want
}

// TestLongRunExpiresWhileItRuns: a run of 600 files, one snapshot each,
// expires snapshots past their retention between its commits, so the table
// never holds many more than the run's bound (ExpireDue) plus a commit;
// every key stays loaded (the load history has the expired ones): a second
// run over the same files finds each of them already loaded, and the rows
// are exact.
func TestLongRunExpiresWhileItRuns(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	const due, perCommit = 40, 20
	cfg, keys, want := longRunSetup(t, e, map[string]string{lake.PropSnapshotRetention: "1ms"}, 600, perCommit, due)
	most, commits := 0, 0
	cfg.OnCommit = func([]string, time.Duration, error) {
		commits++
		most = max(most, snapshotCount(t, e))
	}
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 600 {
		t.Fatalf("loaded %d files, want 600", rep.Loaded)
	}
	ex := rep.ExpiredDuringRun
	if ex == nil || ex.SnapshotsExpired == 0 || ex.Error != "" {
		t.Fatalf("expiry during the run: %+v, want snapshots expired", ex)
	}
	if ex.KeysRemembered != ex.SnapshotsExpired {
		t.Errorf("expired %d snapshots, remembered %d keys", ex.SnapshotsExpired, ex.KeysRemembered)
	}
	t.Logf("%d commits, at most %d snapshots; expired during the run: %+v; after: %d", commits, most, *ex, len(rep.Maintenance.Expired.Expired))
	// Without expiry the table would end the run with 601 snapshots; the
	// bound is reached again after every expiry and the run's time share
	// may delay one a few commits.
	if most > 300 {
		t.Errorf("the table held up to %d snapshots during the run, want far fewer than 601", most)
	}
	if n := snapshotCount(t, e); n > lake.DefaultMinSnapshots {
		t.Errorf("%d snapshots after the run, want at most %d", n, lake.DefaultMinSnapshots)
	}

	// The first key of the run: its snapshot expired mid-run, and the load
	// history knows it.
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.FindBatch(keys[0]); ok {
		t.Fatalf("%s still has its snapshot", keys[0])
	}
	if _, ok, err := tbl.FindLoaded(ctx, keys[0]); err != nil || !ok {
		t.Fatalf("%s loaded: %v, %v", keys[0], ok, err)
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("table rows differ from the files: %d rows, want %d", len(got), len(want))
	}

	// The same files landed again: every one already loaded.
	longRunFiles(t, e, 600)
	rep, err = ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AlreadyLoaded != 600 || rep.Loaded != 0 {
		t.Fatalf("second run: %d already loaded, %d loaded; want 600 and 0", rep.AlreadyLoaded, rep.Loaded)
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("table rows changed by the second run: %d rows, want %d", len(got), len(want))
	}
}

// TestLongRunBoundedByMaxSnapshots: with a retention longer than the run,
// timelake.max-snapshots bounds the table's snapshots during and after it:
// the oldest are expired before their retention, their keys stay loaded,
// and the rows are exact.
func TestLongRunBoundedByMaxSnapshots(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	cfg, keys, want := longRunSetup(t, e, map[string]string{lake.PropSnapshotRetention: "1h", lake.PropMaxSnapshots: "100"}, 400, 20, 40)
	most := 0
	cfg.OnCommit = func([]string, time.Duration, error) { most = max(most, snapshotCount(t, e)) }
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 400 {
		t.Fatalf("loaded %d files, want 400", rep.Loaded)
	}
	if ex := rep.ExpiredDuringRun; ex == nil || ex.SnapshotsExpired == 0 || ex.Error != "" {
		t.Fatalf("expiry during the run: %+v, want snapshots expired", ex)
	}
	// 100 kept, expired past 40 more due (80 whatever the run's time
	// share), plus the snapshots of one commit.
	if most > 100+2*40+20 {
		t.Errorf("the table held up to %d snapshots during the run, want at most %d", most, 100+2*40+20)
	}
	if n := snapshotCount(t, e); n != 100 {
		t.Errorf("%d snapshots after the run, want timelake.max-snapshots (100)", n)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tbl.FindLoaded(ctx, keys[0]); err != nil || !ok {
		t.Fatalf("%s loaded: %v, %v", keys[0], ok, err)
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("table rows differ from the files: %d rows, want %d", len(got), len(want))
	}
}

// TestLongRunKeepsSettings: no expiry between commits without a
// maintenance budget, on a table whose maintenance is off, or with gc
// disabled; the snapshots stay until maintenance runs.
func TestLongRunKeepsSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		props  map[string]string
		budget time.Duration
	}{
		"budget-0":          {props: map[string]string{}, budget: 0},
		"auto-maintain-off": {props: map[string]string{lake.PropAutoMaintain: "false"}, budget: 10 * time.Second},
		"gc-enabled-false":  {props: map[string]string{"gc.enabled": "false"}, budget: 10 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := localEnv(t)
			tc.props[lake.PropSnapshotRetention] = "1ms"
			longRunTable(t, e, tc.props)
			longRunFiles(t, e, 60)
			cfg := e.config()
			cfg.Prefix = "gw/"
			cfg.FilesPerCommit, cfg.CommitWait = 5, 50*time.Millisecond
			cfg.ExpireDue = 5
			cfg.MaintenanceBudget = tc.budget
			rep, err := ingest.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Loaded != 60 || rep.ExpiredDuringRun != nil {
				t.Fatalf("loaded %d, expired during the run %+v; want 60 and no expiry", rep.Loaded, rep.ExpiredDuringRun)
			}
			if n := snapshotCount(t, e); n != 61 {
				t.Errorf("%d snapshots after the run, want 61", n)
			}
		})
	}
}

// TestSessionExpiresWhileItLoads: serve's session loads the same way: a
// load of 200 files expires snapshots between its commits, and in the same
// session a key whose snapshot expired during that load, landed again, is
// already loaded, as is its content under another key.
func TestSessionExpiresWhileItLoads(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	cfg, keys, want := longRunSetup(t, e, map[string]string{lake.PropSnapshotRetention: "1ms"}, 200, 10, 20)
	cfg.ContentDedupe = true
	s, err := ingest.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	files, err := s.List(ctx)
	if err != nil || len(files) != 200 {
		t.Fatalf("list: %d files, %v", len(files), err)
	}
	rep, err := s.Load(ctx, files)
	if err != nil || rep.Loaded != 200 {
		t.Fatalf("load: %d loaded, %v", rep.Loaded, err)
	}
	if ex := rep.ExpiredDuringRun; ex == nil || ex.SnapshotsExpired == 0 || ex.Error != "" {
		t.Fatalf("expiry during the load: %+v, want snapshots expired", ex)
	}
	if _, ok := s.Table().FindBatch(keys[0]); ok {
		t.Fatalf("%s still has its snapshot", keys[0])
	}
	// The first file again, and its content under another key.
	body := csvFile(readings(1, 0, 2), false, false)
	e.put(t, keys[0], body)
	e.put(t, "gw/copy.csv", body)
	files, err = s.List(ctx)
	if err != nil || len(files) != 2 {
		t.Fatalf("list: %d files, %v", len(files), err)
	}
	rep, err = s.Load(ctx, files)
	if err != nil || rep.AlreadyLoaded != 2 || rep.Loaded != 0 {
		t.Fatalf("second load: %d already loaded, %d loaded, %v; want 2 and 0", rep.AlreadyLoaded, rep.Loaded, err)
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("table rows differ from the files: %d rows, want %d", len(got), len(want))
	}
}
