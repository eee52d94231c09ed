package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// longRunOptions are the flags of tlbench longrun.
type longRunOptions struct {
	files     int           // small files loaded in one run
	retention string        // the table's timelake.snapshot-retention
	expireDue int           // ingest.Config.ExpireDue (0: the default, -1: no expiry during the run)
	budget    time.Duration // ingest.Config.MaintenanceBudget
}

// runLongRun measures one long run in a local warehouse (docs/performance.md,
// "A long run"): o.files small files (10 rows each) landed at once and
// loaded by one ingest run, one snapshot each, on a table whose snapshots
// are kept o.retention. It prints the files a second of the first and the
// last tenth of the files, the expiry during the run, and the size of the
// newest metadata file and the snapshots the table holds before the
// maintenance after the run.
func runLongRun(ctx context.Context, o longRunOptions, w io.Writer) error {
	work, err := os.MkdirTemp("", "tlbench-longrun")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	landingDir, warehouse := filepath.Join(work, "landing"), filepath.Join(work, "warehouse")
	for _, d := range []string{landingDir, warehouse} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	put := func(key string, i int) error {
		p := filepath.Join(landingDir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		var b strings.Builder
		b.WriteString("time,device_id,temperature_c\n")
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		for j := range 10 {
			fmt.Fprintf(&b, "%s,dev-%d,%d.5\n", t0.Add(time.Duration(j)*time.Second).Format(time.RFC3339), i%20, j)
		}
		return os.WriteFile(p, []byte(b.String()), 0o644)
	}
	landing, err := storage.NewLocalStore(landingDir)
	if err != nil {
		return err
	}
	l, err := lake.Open(ctx, warehouse, lake.Options{})
	if err != nil {
		return err
	}
	name := lake.TableName{Namespace: "bench", Name: "longrun"}
	cfg := ingest.Config{Landing: landing, Lake: l, Table: name, SeriesKey: []string{"device_id"},
		SettleTime: -1, OpenEndSettleTime: -1}
	// The table first, with the retention measured.
	if err := put("first/f.csv", -1); err != nil {
		return err
	}
	if _, err := ingest.Run(ctx, cfg); err != nil {
		return err
	}
	tbl, err := l.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropSnapshotRetention: o.retention}, nil); err != nil {
		return err
	}
	for i := range o.files {
		if err := put(fmt.Sprintf("gw-%02d/f%06d.csv", i%20, i), i); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "longrun: loading %d files in one run, snapshot retention %s\n", o.files, o.retention)
	// The time each file was committed, in order; the maintenance after
	// the run is measured apart.
	var mu sync.Mutex
	var done []time.Time
	var commits []int // files committed before each commit
	cfg.Prefix = "gw-"
	cfg.ExpireDue, cfg.MaintenanceBudget = o.expireDue, o.budget
	tenth := max(1, o.files/10)
	profiles, err := newTenthProfiles(os.Getenv("TLBENCH_PROFILE"))
	if err != nil {
		return err
	}
	defer profiles.stop()
	start := time.Now()
	var metaBytes, maxMeta int64 // at the last commit; the largest, every 5th commit
	var maxMetaAt int            // files committed when the largest was written
	var snapshots int
	profiles.start("first")
	cfg.OnCommit = func(keys []string, _ time.Duration, err error) {
		if err != nil {
			return
		}
		mu.Lock()
		commits = append(commits, len(done))
		for range keys {
			done = append(done, time.Now())
		}
		last := len(done) == o.files
		if len(commits)%5 == 0 {
			if n := newestMetadataSize(filepath.Join(warehouse, name.Namespace, name.Name, "metadata")); n > maxMeta {
				maxMeta, maxMetaAt = n, len(done)
			}
		}
		switch len(done) {
		case tenth:
			profiles.stop()
		case o.files - tenth:
			profiles.start("last")
		}
		mu.Unlock()
		if !last {
			return
		}
		// The newest metadata file at the run's last commit, before the
		// maintenance after the run.
		t, lerr := l.LoadTable(ctx, name)
		if lerr != nil {
			return
		}
		snapshots = len(t.Metadata().Snapshots())
		if u, perr := url.Parse(t.MetadataLocation()); perr == nil {
			if st, serr := os.Stat(u.Path); serr == nil {
				metaBytes = st.Size()
			}
		}
	}
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if rep.Loaded != o.files || len(done) != o.files {
		return fmt.Errorf("loaded %d of %d files (%d committed)", rep.Loaded, o.files, len(done))
	}
	profiles.stop()
	rate := func(from, to time.Time, n int) float64 { return float64(n) / to.Sub(from).Seconds() }
	first := rate(start, done[tenth-1], tenth)
	last := rate(done[o.files-tenth-1], done[o.files-1], tenth)
	// Files a commit of the first and the last tenth.
	perCommit := func(from, to int) float64 {
		n := 0
		for _, c := range commits {
			if c >= from && c < to {
				n++
			}
		}
		return float64(to-from) / float64(max(n, 1))
	}
	ex := ingest.RunExpiry{}
	if rep.ExpiredDuringRun != nil {
		ex = *rep.ExpiredDuringRun
	}
	fmt.Fprintf(w, "files %d  retention %s  expire-due %d  loading %.1fs  files/s first 10%% %.0f  last 10%% %.0f  "+
		"files a commit first 10%% %.0f  last 10%% %.0f  "+
		"expired during the run %d in %d rounds (%.1fs%s)  at the end: %d snapshots, newest metadata %d KiB (largest during the run %d KiB, after %d files)\n",
		o.files, o.retention, o.expireDue, done[o.files-1].Sub(start).Seconds(), first, last,
		perCommit(0, tenth), perCommit(o.files-tenth, o.files),
		ex.SnapshotsExpired, ex.Rounds, ex.Seconds, map[bool]string{true: ", " + ex.Error}[ex.Error != ""], snapshots, metaBytes/1024,
		max(maxMeta, metaBytes)/1024, maxMetaAt)
	// Then maintenance as cron would run it, default rounds until none
	// leaves work for the next (the run's own round was the first).
	rounds, pending := 1, rep.Maintenance != nil && rep.Maintenance.Pending
	t0 := time.Now()
	for ; pending && rounds < 100; rounds++ {
		mr, err := tbl.Maintain(ctx, lake.MaintainOptions{Budget: 10 * time.Second})
		if err != nil {
			return fmt.Errorf("maintenance round %d after the run: %w", rounds+1, err)
		}
		pending = mr.Pending
	}
	fmt.Fprintf(w, "maintained after the run: %d rounds of 10 s until nothing was pending (%.1fs after the run's own), pending %v\n",
		rounds, time.Since(t0).Seconds(), pending)
	return nil
}

// tenthProfiles writes CPU profiles of the first and the last tenth of a
// long run's files (TLBENCH_PROFILE=dir: cpu-first.pprof, cpu-last.pprof),
// so that what grows with the files loaded shows as the difference.
type tenthProfiles struct {
	dir string
	f   *os.File
}

func newTenthProfiles(dir string) (*tenthProfiles, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return &tenthProfiles{dir: dir}, nil
}

func (p *tenthProfiles) start(name string) {
	if p.dir == "" || p.f != nil {
		return
	}
	f, err := os.Create(filepath.Join(p.dir, "cpu-"+name+".pprof"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "longrun: profile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "longrun: profile:", err)
		f.Close()
		return
	}
	p.f = f
}

func (p *tenthProfiles) stop() {
	if p.f == nil {
		return
	}
	pprof.StopCPUProfile()
	p.f.Close()
	p.f = nil
}

// newestMetadataSize is the size of the newest vN.metadata.json in dir, 0
// when there is none.
func newestMetadataSize(dir string) int64 {
	names, _ := filepath.Glob(filepath.Join(dir, "v*.metadata.json"))
	newest, path := -1, ""
	for _, n := range names {
		v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(n), "v"), ".metadata.json"))
		if err == nil && v > newest {
			newest, path = v, n
		}
	}
	if st, err := os.Stat(path); err == nil {
		return st.Size()
	}
	return 0
}
