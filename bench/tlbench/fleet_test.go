package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
)

func TestFleetFileIsReproducibleAndRealistic(t *testing.T) {
	a, b := fleetFile(3, 700), fleetFile(3, 700)
	if !bytes.Equal(a, b) {
		t.Fatal("the same gateway and minute gave different bytes")
	}
	if bytes.Equal(a, fleetFile(3, 701)) || bytes.Equal(a, fleetFile(4, 700)) {
		t.Fatal("another minute or gateway gave the same bytes")
	}
	recs, err := csv.NewReader(bytes.NewReader(a)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != fleetRowsPerFile+1 || strings.Join(recs[0], ",") != "time,device_id,site,temperature_c,humidity_pct,battery_v" {
		t.Fatalf("got %d lines, header %v; want %d rows after the header", len(recs), recs[0], fleetRowsPerFile)
	}
	minute := fleetDataStart.Add(700 * time.Minute)
	devices := map[string]bool{}
	for _, r := range recs[1:] {
		ts, err := time.Parse(time.RFC3339, r[0])
		if err != nil || ts.Before(minute) || !ts.Before(minute.Add(time.Minute)) {
			t.Fatalf("time %q outside minute %s", r[0], minute)
		}
		devices[r[1]] = true
	}
	if len(devices) != fleetDevices || !devices[fleetDevice(3, 0)] {
		t.Fatalf("devices %v, want %d of gateway 3", devices, fleetDevices)
	}
}

// TestFleetShortRun runs 30 simulated minutes of 4 gateways on a local
// folder, in this process, and checks what the bench checks: every row
// loaded once, the metadata versions bounded, and a key re-sent after its
// snapshot expired recognised from the load history.
func TestFleetShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("30 simulated minutes")
	}
	ctx := context.Background()
	work := t.TempDir()
	s := fleetSetup{Store: "local", Landing: filepath.Join(work, "landing"), Warehouse: filepath.Join(work, "warehouse"),
		Gateways: 4, Minutes: 30, SeedDay: true, ClockStart: time.Now().UTC().Truncate(time.Second)}
	for _, d := range []string{s.Landing, s.Warehouse} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setup := filepath.Join(work, "fleet.json")
	b, _ := json.Marshal(s)
	if err := os.WriteFile(setup, b, 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(work, "fleet.jsonl")
	if err := fleetSeed(ctx, setup); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for m := range s.Minutes {
		o := fleetRunOptions{setup: setup, minute: m, state: (m+1)%10 == 0, resend: m == s.Minutes-1}
		if m == s.Minutes-1 {
			o.files = filepath.Join(work, "live-files.tsv")
		}
		if err := fleetRun(ctx, o, &out); err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
	}
	if err := os.WriteFile(results, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := readFleetResults([]string{results})
	if err != nil {
		t.Fatal(err)
	}
	r := all[0]
	if len(r.runs) != s.Minutes || len(r.states) != 3 || len(r.resends) != 1 {
		t.Fatalf("%d runs, %d states, %d resends; want %d, 3, 1", len(r.runs), len(r.states), len(r.resends), s.Minutes)
	}
	for _, st := range r.states {
		if st.TotalRows != st.ExpectedRows {
			t.Errorf("minute %d: %d rows, want %d", st.Minute, st.TotalRows, st.ExpectedRows)
		}
		if st.VersionsKept > lake.DefaultMetadataVersions+1 {
			t.Errorf("minute %d: %d metadata versions kept", st.Minute, st.VersionsKept)
		}
	}
	if x := r.resends[0]; !x.OK || x.InSnapshots || !x.InHistory {
		t.Errorf("re-sent key: %+v; want already loaded from the load history, rows unchanged", x)
	}
	list, err := os.ReadFile(filepath.Join(work, "live-files.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		f := strings.Split(line, "\t")
		if _, err := os.Stat(f[1]); len(f) != 3 || err != nil {
			t.Errorf("live file line %q: %v", line, err)
		}
	}
	verdicts := map[string]string{}
	for _, tg := range r.targets() {
		verdicts[tg.name] = tg.verdict()
	}
	for name, want := range map[string]string{
		"no row lost or loaded twice (total-records and DuckDB's counts)":          "met",
		"a key re-sent after its snapshot expired: already loaded, rows unchanged": "met",
		"per-run wall time of the last 60 runs <= 1.2x the first 60":               "n/a",
	} {
		if verdicts[name] != want {
			t.Errorf("target %q: %s, want %s", name, verdicts[name], want)
		}
	}
}

// TestFleetSeededDay: the seeded day's hour files hold the rows of its
// minute files, and the cold-day queries read it until the runs have
// gone through a day of their own.
func TestFleetSeededDay(t *testing.T) {
	hour := fleetHourFile(2, 13)
	want := fleetFile(2, 13*60-fleetSeedMinutes)
	for i := 1; i < 60; i++ {
		f := fleetFile(2, 13*60-fleetSeedMinutes+i)
		want = append(want, f[bytes.IndexByte(f, '\n')+1:]...)
	}
	if !bytes.Equal(hour, want) {
		t.Fatal("the hour file is not its 60 minute files under one header")
	}
	recs, err := csv.NewReader(bytes.NewReader(hour)).ReadAll()
	if err != nil || len(recs) != 60*fleetRowsPerFile+1 || !strings.HasPrefix(recs[1][0], "2026-01-05T13:00:00") {
		t.Fatalf("hour file: %d lines, first row %v, %v", len(recs), recs[1], err)
	}
	if k := fleetHourKey(2, 13); k != "gateway-02/20260105T1300Z-1h.csv" {
		t.Errorf("hour key %s", k)
	}
	s := fleetSetup{Gateways: 20, SeedDay: true}
	if s.rowsAfter(0) != 2_880_000+2_000 {
		t.Errorf("rows after run 0: %d", s.rowsAfter(0))
	}
	for _, c := range []struct {
		seed   bool
		minute int
		want   string
	}{{true, 0, "2026-01-05"}, {true, 1438, "2026-01-05"}, {true, 1439, "2026-01-06"}, {false, 1438, ""}, {false, 1500, "2026-01-06"}} {
		s.SeedDay = c.seed
		day, ok := s.fullDay(c.minute)
		if got := day.Format("2006-01-02"); ok != (c.want != "") || ok && got != c.want {
			t.Errorf("seeded %v, minute %d: full day %s (%v), want %q", c.seed, c.minute, got, ok, c.want)
		}
	}
}

// TestFleetTargetsCanFail feeds the target checks results that miss them.
func TestFleetTargetsCanFail(t *testing.T) {
	r := &fleetResults{store: "local", gateways: 20}
	for m := range 240 {
		r.runs = append(r.runs, fleetRunResult{Minute: m, Seconds: 1 + float64(m)/60, CPUSeconds: 1 + float64(m)/60, PeakRSS: int64(100+m) << 20,
			NewestMetadataBytes: int64(m) << 14, Maintenance: maintenanceObject(float64(m)/10, false)})
	}
	r.states = []fleetState{
		{Minute: 119, MetadataBytes: 4 << 20, HistoryBytes: 1 << 20, LiveDataBytes: 10 << 20, TotalRows: 10, ExpectedRows: 10},
		{Minute: 239, MetadataBytes: 9 << 20, HistoryBytes: 2 << 20, HistoryKeys: 1000, LiveDataBytes: 20 << 20,
			TotalRows: 11, ExpectedRows: 12, TargetFileSize: 32 << 20,
			Partitions: []fleetPartition{{Name: "d1", Files: 5, Bytes: 1 << 20, Cold: true}}},
	}
	r.queries = []fleetQuery{{Minute: 239, LiveBytes: 4, FloorBytes: 2, Rows: 12, FloorRows: 12, ExpectedRows: 12,
		FullLiveSeconds: 1, FullFloorSeconds: 1, SeriesLiveSeconds: 1, SeriesFloorSeconds: 1,
		ColdHourLiveSeconds: 1, ColdHourFloorSeconds: 1, ColdDayLiveSeconds: 1, ColdDayFloorSeconds: 1,
		// only the CPU time misses
		CPUSeconds: map[string]float64{"cold_hour_live": 2, "cold_hour_floor": 1, "series_live": 2, "series_floor": 1},
		ColdDay:    "d1", ColdLayout: &fileLayout{Files: 1, Bytes: 12}, ColdFloorLayout: &fileLayout{Files: 1, Bytes: 10}}}
	r.resends = []fleetResend{{InSnapshots: false, InHistory: true, OK: false}}
	for _, tg := range r.targets() {
		if tg.note {
			continue
		}
		if tg.verdict() != "NOT MET" {
			t.Errorf("%s: %s (%s), want NOT MET", tg.name, tg.verdict(), tg.result)
		}
	}
}

// TestFleetColdPartitionTarget: the cold-partition target names its worst
// sample when every cold partition is within it.
func TestFleetColdPartitionTarget(t *testing.T) {
	r := &fleetResults{store: "local", gateways: 20}
	r.states = []fleetState{{Minute: 59, TargetFileSize: 8 << 20,
		Partitions: []fleetPartition{{Name: "time_day=2026-01-05", Files: 1, Bytes: 8 << 20, Cold: true}, {Name: "time_day=2026-01-06", Files: 5}}}}
	for _, tg := range r.targets() {
		if !strings.HasPrefix(tg.name, "<= 2 data files per cold partition") {
			continue
		}
		if want := "worst time_day=2026-01-05 at minute 60: 1 files for 8.00 MB (allowed 3)"; tg.verdict() != "met" || !strings.Contains(tg.result, want) {
			t.Errorf("%s: %s, want met and %q", tg.verdict(), tg.result, want)
		}
		return
	}
	t.Fatal("no cold-partition target")
}

// TestFleetDelayOption: -delay names the store by it, goes with the s3
// store only, and the setup file carries it and the proxy's endpoint to
// the runs.
func TestFleetDelayOption(t *testing.T) {
	for _, c := range []struct {
		store string
		delay time.Duration
		want  string
	}{{"local", 0, "local"}, {"s3", 0, "s3"}, {"s3", 20 * time.Millisecond, "s3+20ms"}, {"s3", 1500 * time.Microsecond, "s3+1.5ms"}} {
		if got := fleetStoreName(c.store, c.delay); got != c.want {
			t.Errorf("%s with %s: %q, want %q", c.store, c.delay, got, c.want)
		}
	}
	o := fleetOptions{store: "s3", gateways: 4, minutes: 20, stateEvery: 10, duckEvery: 180, work: "w", out: "o", delay: 20 * time.Millisecond}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []fleetOptions{func() fleetOptions { x := o; x.store = "local"; return x }(), func() fleetOptions { x := o; x.delay = -time.Millisecond; return x }()} {
		if err := bad.validate(); err == nil {
			t.Errorf("store %s, delay %s: no error", bad.store, bad.delay)
		}
	}
	p := filepath.Join(t.TempDir(), "fleet.json")
	b, err := json.Marshal(fleetSetup{Store: "s3", Delay: o.delay, Endpoint: "http://127.0.0.1:1234"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readFleetSetup(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.name() != "s3+20ms" || s.Endpoint != "http://127.0.0.1:1234" {
		t.Errorf("read back: %q at %q", s.name(), s.Endpoint)
	}
}

// TestFleetStoresSideBySide: the side-by-side table sums each store's runs
// by rows of simulated minutes, the last row ending at the last run, and
// counts the rounds that left work pending.
func TestFleetStoresSideBySide(t *testing.T) {
	mk := func(store string, seconds float64, pendingAt int) *fleetResults {
		r := &fleetResults{store: store, gateways: 4}
		for m := range 12 {
			r.runs = append(r.runs, fleetRunResult{Store: store, Minute: m, Seconds: seconds, Requests: 100,
				Maintenance: maintenanceObject(seconds/2, m == pendingAt)})
		}
		return r
	}
	local, delayed := mk("local", 1, -1), mk("s3+20ms", 3, 7)
	w := delayed.storeWindows(5)
	if len(w) != 3 || w[5].runs != 5 || w[10].runs != 5 || w[12].runs != 2 {
		t.Fatalf("rows %v", w)
	}
	if w[10].pending != 1 || w[5].pending != 0 || w[10].mean(w[10].maint) != 1.5 {
		t.Errorf("row 10: %+v", *w[10])
	}
	var out strings.Builder
	printStores(&out, []*fleetResults{local, delayed}, 5)
	for _, want := range []string{"local run s", "s3+20ms run s", "0/5", "1/5", "0/2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

// maintenanceObject is a run's maintenance object of seconds, pending.
func maintenanceObject(seconds float64, pending bool) json.RawMessage {
	b, _ := json.Marshal(lake.MaintainReport{Took: time.Duration(seconds * float64(time.Second)), Pending: pending})
	return b
}

// TestFleetColdQueriesOnceCompacted: the cold-day query target counts the
// samples taken once the day is compacted cold (one file here), not those
// of the day's tier files before.
func TestFleetColdQueriesOnceCompacted(t *testing.T) {
	r := &fleetResults{store: "local", gateways: 20}
	day := "time_day=2026-01-05"
	sample := func(minute, files int, ratio float64) fleetQuery {
		return fleetQuery{Minute: minute, ColdDay: day, ColdLayout: &fileLayout{Files: files, Bytes: 8 << 20},
			ColdHourLiveSeconds: ratio, ColdHourFloorSeconds: 1, ColdDayLiveSeconds: 1, ColdDayFloorSeconds: 1,
			ColdAggLiveSeconds: 1, ColdAggFloorSeconds: 1}
	}
	r.queries = []fleetQuery{sample(29, 6, 3), sample(59, 1, 1.2)}
	tg := r.queryTarget(true)
	if tg.verdict() != "met" || !strings.Contains(tg.result, "over 1 samples") {
		t.Fatalf("%s (%s), want met over the one sample of the cold day", tg.verdict(), tg.result)
	}
	r.queries = append(r.queries, sample(89, 1, 1.6))
	if tg := r.queryTarget(true); tg.verdict() != "NOT MET" {
		t.Fatalf("%s (%s), want NOT MET for a cold sample at 1.6x", tg.verdict(), tg.result)
	}
}
