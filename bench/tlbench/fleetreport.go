package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// fleetQuery is one DuckDB sample written by bench/duckdb fleet: a
// "duckdb" line. Seconds are medians of repeated queries.
type fleetQuery struct {
	Kind               string  `json:"kind"` // duckdb
	Store              string  `json:"store"`
	Minute             int     `json:"minute"`
	Series             string  `json:"series"`
	From               string  `json:"from"`
	To                 string  `json:"to"`
	LiveFiles          int     `json:"live_files"`
	LiveBytes          int64   `json:"live_bytes"`
	FloorFiles         int     `json:"floor_files"`
	FloorBytes         int64   `json:"floor_bytes"`
	Rows               int64   `json:"rows"`
	FloorRows          int64   `json:"floor_rows"`
	ExpectedRows       int64   `json:"expected_rows"`
	SeriesRows         int64   `json:"series_rows"`
	FloorSeriesRows    int64   `json:"floor_series_rows"`
	FullLiveSeconds    float64 `json:"full_live_seconds"`
	FullFloorSeconds   float64 `json:"full_floor_seconds"`
	SeriesLiveSeconds  float64 `json:"series_live_seconds"`
	SeriesFloorSeconds float64 `json:"series_floor_seconds"`
	// The full day before (the seeded day, cold an hour into the run):
	// one series over its noon hour and over the whole day, and the
	// layout of its live files and of its floor file.
	ColdDay              string  `json:"cold_day"`
	ColdHourLiveSeconds  float64 `json:"cold_hour_live_seconds"`
	ColdHourFloorSeconds float64 `json:"cold_hour_floor_seconds"`
	ColdDayLiveSeconds   float64 `json:"cold_day_live_seconds"`
	ColdDayFloorSeconds  float64 `json:"cold_day_floor_seconds"`
	ColdHourRows         int64   `json:"cold_hour_rows"`
	ColdHourFloorRows    int64   `json:"cold_hour_floor_rows"`
	ColdDayRows          int64   `json:"cold_day_rows"`
	ColdDayFloorRows     int64   `json:"cold_day_floor_rows"`
	// Every series over the whole cold day.
	ColdAggLiveSeconds  float64     `json:"cold_agg_live_seconds"`
	ColdAggFloorSeconds float64     `json:"cold_agg_floor_seconds"`
	ColdAggRows         int64       `json:"cold_agg_rows"`
	ColdAggFloorRows    int64       `json:"cold_agg_floor_rows"`
	ColdLayout          *fileLayout `json:"cold_layout"`
	ColdFloorLayout     *fileLayout `json:"cold_floor_layout"`
	// CPUSeconds are each query's median CPU time (all of DuckDB's
	// threads), by kind and side: full_live, full_floor, series_live, ...
	CPUSeconds map[string]float64 `json:"cpu_seconds"`
}

// fileLayout is a partition's files as DuckDB's parquet_metadata() reads
// them (bench/duckdb's fileLayout).
type fileLayout struct {
	Files     int               `json:"files"`
	Bytes     int64             `json:"bytes"`
	Rows      int64             `json:"rows"`
	RowGroups int               `json:"row_groups"`
	MinRows   int64             `json:"min_rows"`
	MaxRows   int64             `json:"max_rows"`
	Encodings map[string]string `json:"encodings"`
	Columns   map[string]int64  `json:"column_bytes"`
}

func (q fleetQuery) fullRatio() float64     { return q.FullLiveSeconds / q.FullFloorSeconds }
func (q fleetQuery) seriesRatio() float64   { return q.SeriesLiveSeconds / q.SeriesFloorSeconds }
func (q fleetQuery) coldHourRatio() float64 { return q.ColdHourLiveSeconds / q.ColdHourFloorSeconds }
func (q fleetQuery) coldDayRatio() float64  { return q.ColdDayLiveSeconds / q.ColdDayFloorSeconds }
func (q fleetQuery) coldAggRatio() float64  { return q.ColdAggLiveSeconds / q.ColdAggFloorSeconds }

// queryKinds are the query kinds of a sample: their names in the report
// and in CPUSeconds, wall-time ratios, and whether they read the cold day.
var queryKinds = []struct {
	label, key string
	ratio      func(fleetQuery) float64
	cold       bool
}{{"full", "full", fleetQuery.fullRatio, false}, {"series-hour", "series", fleetQuery.seriesRatio, false},
	{"cold hour", "cold_hour", fleetQuery.coldHourRatio, true}, {"cold day", "cold_day", fleetQuery.coldDayRatio, true},
	{"cold day all", "cold_agg", fleetQuery.coldAggRatio, true}}

// cpuRatio is the ratio of a query kind's median CPU time on the live
// files to the floor's; 0 when not measured.
func (q fleetQuery) cpuRatio(key string) float64 {
	live, floor := q.CPUSeconds[key+"_live"], q.CPUSeconds[key+"_floor"]
	if live <= 0 || floor <= 0 {
		return 0
	}
	return live / floor
}

// rowsOK: every query counted the rows the table holds, the same on the
// live files as on the floor.
func (q fleetQuery) rowsOK() bool {
	return q.Rows == q.ExpectedRows && q.FloorRows == q.Rows && q.SeriesRows == q.FloorSeriesRows &&
		q.ColdHourRows == q.ColdHourFloorRows && q.ColdDayRows == q.ColdDayFloorRows && q.ColdAggRows == q.ColdAggFloorRows
}

// fleetResults are the lines of one store's fleet bench.
type fleetResults struct {
	store    string
	gateways int
	runs     []fleetRunResult
	states   []fleetState
	queries  []fleetQuery
	resends  []fleetResend
}

// readFleetResults reads result files and groups their fleet lines by store
// (other lines are skipped).
func readFleetResults(files []string) ([]*fleetResults, error) {
	byStore := map[string]*fleetResults{}
	var order []string
	get := func(store string) *fleetResults {
		r := byStore[store]
		if r == nil {
			r = &fleetResults{store: store}
			byStore[store] = r
			order = append(order, store)
		}
		return r
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			var k struct {
				Kind  string `json:"kind"`
				Store string `json:"store"`
			}
			if len(strings.TrimSpace(string(line))) == 0 || json.Unmarshal(line, &k) != nil || k.Kind == "" {
				continue
			}
			r := get(k.Store)
			var err error
			switch k.Kind {
			case "run":
				var x fleetRunResult
				if err = json.Unmarshal(line, &x); err == nil {
					r.runs = append(r.runs, x)
					r.gateways = x.Gateways
				}
			case "state":
				var x fleetState
				if err = json.Unmarshal(line, &x); err == nil {
					r.states = append(r.states, x)
				}
			case "duckdb":
				var x fleetQuery
				if err = json.Unmarshal(line, &x); err == nil {
					r.queries = append(r.queries, x)
				}
			case "resend":
				var x fleetResend
				if err = json.Unmarshal(line, &x); err == nil {
					r.resends = append(r.resends, x)
				}
			}
			if err != nil {
				fh.Close()
				return nil, fmt.Errorf("%s:%d: %w", f, n, err)
			}
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, err
		}
	}
	var out []*fleetResults
	for _, s := range order {
		r := byStore[s]
		sort.Slice(r.runs, func(i, j int) bool { return r.runs[i].Minute < r.runs[j].Minute })
		sort.Slice(r.states, func(i, j int) bool { return r.states[i].Minute < r.states[j].Minute })
		sort.Slice(r.queries, func(i, j int) bool { return r.queries[i].Minute < r.queries[j].Minute })
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("no fleet results")
	}
	return out, nil
}

// fleetReport prints, per store, the table over time (every hour and at the
// end), the DuckDB samples and the targets of docs/performance.md.
func fleetReport(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("fleet-report", flag.ContinueOnError)
	every := fs.Int("every", 60, "a row of the table every N simulated minutes (and the last)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	all, err := readFleetResults(fs.Args())
	if err != nil {
		return err
	}
	for _, r := range all {
		r.printOverTime(w, max(*every, 1))
		r.printQueries(w)
		r.printTargets(w)
	}
	if len(all) > 1 {
		printStores(w, all, max(*every, 1))
	}
	return nil
}

// fleetWindow sums the runs of one row of a table: the runs of simulated
// minutes up to a row's.
type fleetWindow struct {
	runs, pending          int
	seconds, maint, reqs   float64
	mostSeconds, mostMaint float64
}

func (f *fleetWindow) add(x fleetRunResult) {
	f.runs++
	f.seconds += x.Seconds
	f.maint += x.maintenanceSeconds()
	f.reqs += float64(x.Requests)
	f.mostSeconds = max(f.mostSeconds, x.Seconds)
	f.mostMaint = max(f.mostMaint, x.maintenanceSeconds())
	if x.pending() {
		f.pending++
	}
}

func (f fleetWindow) mean(x float64) float64 { return x / float64(max(f.runs, 1)) }

// storeWindows sums a store's runs by rows of every simulated minutes
// (and the last run's row): row minute (1-based, the last of the row) to
// its window.
func (r *fleetResults) storeWindows(every int) map[int]*fleetWindow {
	out := map[int]*fleetWindow{}
	last := 0
	for _, x := range r.runs {
		last = max(last, x.Minute+1)
	}
	for _, x := range r.runs {
		row := min((x.Minute/every+1)*every, last)
		if out[row] == nil {
			out[row] = &fleetWindow{}
		}
		out[row].add(x)
	}
	return out
}

// printStores prints the stores side by side, a row every `every`
// simulated minutes: each store's mean run and maintenance time, and the
// runs whose maintenance left work for the next (the backlog), e.g. the
// local folder next to the S3 server with a delay per request.
func printStores(w io.Writer, all []*fleetResults, every int) {
	fmt.Fprintf(w, "stores side by side: run and maintenance seconds (mean, largest), runs whose maintenance left work pending, S3 requests per run\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "minute\t"
	windows := make([]map[int]*fleetWindow, len(all))
	rows := map[int]bool{}
	for i, r := range all {
		head += fmt.Sprintf("%s run s\tmax\tmaint s\tmax\tpending\treq\t", r.store)
		windows[i] = r.storeWindows(every)
		for m := range windows[i] {
			rows[m] = true
		}
	}
	fmt.Fprintln(tw, head)
	minutes := make([]int, 0, len(rows))
	for m := range rows {
		minutes = append(minutes, m)
	}
	sort.Ints(minutes)
	for _, m := range minutes {
		line := fmt.Sprintf("%d\t", m)
		for i := range all {
			f := windows[i][m]
			if f == nil {
				line += "-\t-\t-\t-\t-\t-\t"
				continue
			}
			line += fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%.0f\t", f.mean(f.seconds), f.mostSeconds,
				f.mean(f.maint), f.mostMaint, f.pending, f.runs, f.mean(f.reqs))
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

const mib = 1 << 20

// printOverTime prints one row per `every` simulated minutes (and the
// last state): the table's state and the runs since the row before.
func (r *fleetResults) printOverTime(w io.Writer, every int) {
	fmt.Fprintf(w, "fleet, %s store, %d gateways, %d runs\n\n", r.store, r.gateways, len(r.runs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "minute\tlive files\tnewest partition\tlive data MB\tdata/ MB\tmetadata/ MB\thistory KB\thistory keys\tnewest JSON KB\tversions\tsnapshots\trun s mean\trun s max\tmaint s mean\tmaint s max\tpending\tCPU s mean\tS3 req mean\tpeak RSS MiB\tload\t")
	prev := -1
	for i, s := range r.states {
		if (s.Minute+1)%every != 0 && i != len(r.states)-1 {
			continue
		}
		var n, reqs, pending int
		var sum, most, maint, maintSum, cpu, load float64
		var rss int64
		for _, run := range r.runs {
			if run.Minute > prev && run.Minute <= s.Minute {
				n++
				sum += run.Seconds
				most = max(most, run.Seconds)
				maint = max(maint, run.maintenanceSeconds())
				maintSum += run.maintenanceSeconds()
				if run.pending() {
					pending++
				}
				cpu += run.CPUSeconds
				load += run.Load1
				reqs += int(run.Requests)
				rss = max(rss, run.PeakRSS)
			}
		}
		prev = s.Minute
		newest := 0
		if len(s.Partitions) > 0 {
			newest = s.Partitions[len(s.Partitions)-1].Files
		}
		mean := func(x float64) float64 { return x / float64(max(n, 1)) }
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.0f\t%d\t%.1f\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%.2f\t%.0f\t%.0f\t%.1f\t\n",
			s.Minute+1, s.LiveDataFiles, newest, float64(s.LiveDataBytes)/mib, float64(s.DataBytes)/mib,
			float64(s.MetadataBytes)/mib, float64(s.HistoryBytes)/1024, s.HistoryKeys, float64(s.NewestMetadataBytes)/1024,
			s.VersionsKept, s.Snapshots, mean(sum), most, mean(maintSum), maint, pending, n, mean(cpu), mean(float64(reqs)), float64(rss)/mib, mean(load))
	}
	tw.Flush()
	if len(r.states) > 0 {
		s := r.states[len(r.states)-1]
		fmt.Fprintf(w, "\nmetadata/ at the end: versions %.2f MB (%d), manifest lists %.2f MB (%d), manifests %.2f MB (%d), load history %.2f MB (%d segments, %d keys), other %.2f MB\n",
			float64(s.VersionBytes)/mib, s.VersionsKept, float64(s.ManifestListBytes)/mib, s.ManifestLists,
			float64(s.ManifestBytes)/mib, s.Manifests, float64(s.HistoryBytes)/mib, s.HistorySegments, s.HistoryKeys,
			float64(s.OtherBytes)/mib)
		var parts []string
		for _, p := range s.Partitions {
			cold := ""
			if p.Cold {
				cold = ", cold"
			}
			parts = append(parts, fmt.Sprintf("%s: %d files, %.2f MB%s", p.Name, p.Files, float64(p.Bytes)/mib, cold))
		}
		fmt.Fprintf(w, "partitions at the end: %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)
}

// printQueries prints the DuckDB samples: per query kind the medians on
// the live files and on the floor (ms), and the ratios of wall and of
// CPU time.
func (r *fleetResults) printQueries(w io.Writer) {
	if len(r.queries) == 0 {
		return
	}
	fmt.Fprintf(w, "DuckDB over the live data files against the same rows compacted (one sorted zstd file per partition), medians (ms live/compacted, ratio of wall time, ratio of CPU time):\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "minute\tlive files\tcompacted files\tlive MB\tcompacted MB\tcold files\t"
	for _, k := range queryKinds {
		head += k.label + " ms\tratio\tCPU\t"
	}
	fmt.Fprintln(tw, head+"rows\t")
	var cold *fleetQuery
	for i, q := range r.queries {
		rows := "ok"
		if !q.rowsOK() {
			rows = fmt.Sprintf("%d of %d", q.Rows, q.ExpectedRows)
		}
		line := fmt.Sprintf("%d\t%d\t%d\t%.2f\t%.2f\t", q.Minute+1, q.LiveFiles, q.FloorFiles, float64(q.LiveBytes)/mib, float64(q.FloorBytes)/mib)
		if q.ColdLayout != nil {
			cold = &r.queries[i]
			line += fmt.Sprintf("%d\t", q.ColdLayout.Files)
		} else {
			line += "-\t"
		}
		for _, k := range queryKinds {
			if k.cold && q.ColdLayout == nil {
				line += "-\t-\t-\t"
				continue
			}
			live, floor := q.seconds(k.key)
			line += fmt.Sprintf("%.1f/%.1f\t%.2fx\t%.2fx\t", live*1e3, floor*1e3, k.ratio(q), q.cpuRatio(k.key))
		}
		fmt.Fprintln(tw, line+rows+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	if cold != nil {
		printColdLayout(w, cold)
	}
}

// seconds are a query kind's median wall times on the live files and on
// the floor.
func (q fleetQuery) seconds(key string) (live, floor float64) {
	switch key {
	case "full":
		return q.FullLiveSeconds, q.FullFloorSeconds
	case "series":
		return q.SeriesLiveSeconds, q.SeriesFloorSeconds
	case "cold_hour":
		return q.ColdHourLiveSeconds, q.ColdHourFloorSeconds
	case "cold_agg":
		return q.ColdAggLiveSeconds, q.ColdAggFloorSeconds
	}
	return q.ColdDayLiveSeconds, q.ColdDayFloorSeconds
}

// printColdLayout prints the cold day's files next to its floor file at
// the last sample: row groups, bytes and encodings per column.
func printColdLayout(w io.Writer, q *fleetQuery) {
	a, b := q.ColdLayout, q.ColdFloorLayout
	fmt.Fprintf(w, "%s at minute %d: %d live file(s), %.2f MB, %d row groups of %d to %d rows; the floor: %.2f MB, %d row groups of %d to %d rows (size %.2fx the floor's)\n\n",
		q.ColdDay, q.Minute+1, a.Files, float64(a.Bytes)/mib, a.RowGroups, a.MinRows, a.MaxRows,
		float64(b.Bytes)/mib, b.RowGroups, b.MinRows, b.MaxRows, float64(a.Bytes)/float64(b.Bytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "column\tencodings\tKB\tfloor's encodings\tKB\t")
	cols := make([]string, 0, len(a.Encodings))
	for c := range a.Encodings {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%.0f\t\n", c, a.Encodings[c], float64(a.Columns[c])/1024, b.Encodings[c], float64(b.Columns[c])/1024)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// queryTarget checks that DuckDB's queries of one group cost at most 1.5x
// the compacted copy's at every sample, in CPU time: the whole table and
// one series over the newest hour (cold false), or the queries of the
// cold day's files (cold true), at the samples where the day is compacted
// cold (dayCold).
func (r *fleetResults) queryTarget(cold bool) fleetTarget {
	t := fleetTarget{name: "DuckDB queries <= 1.5x the compacted copy at every sample, in CPU time: the whole table and one series over the newest hour"}
	if cold {
		t.name = "DuckDB queries of a compacted cold day's files <= 1.5x its compacted copy at every sample, in CPU time: one series over an hour and over the day, every series over the day"
	}
	var parts []string
	ok, samples := true, 0
	for _, q := range r.queries {
		if !cold || r.dayCold(q) {
			samples++
		}
	}
	for _, k := range queryKinds {
		if k.cold != cold {
			continue
		}
		worst, worstWall, at := 0.0, 0.0, 0
		for _, q := range r.queries {
			if cold && !r.dayCold(q) {
				continue
			}
			// CPU time where the sample has it (wall time is stretched
			// by whatever else runs on a shared machine).
			x := q.cpuRatio(k.key)
			if x == 0 {
				x = k.ratio(q)
			}
			if x > worst {
				worst, at = x, q.Minute+1
			}
			worstWall = max(worstWall, k.ratio(q))
		}
		if at == 0 {
			continue
		}
		ok = ok && worst <= 1.5
		parts = append(parts, fmt.Sprintf("%s %.2fx (minute %d; wall time at worst %.2fx)", k.label, worst, at, worstWall))
	}
	if len(parts) == 0 {
		t.result = "no sample"
		if cold {
			t.result = "no sample with a compacted cold day"
		}
		return t
	}
	t.result = fmt.Sprintf("worst %s, over %d samples", strings.Join(parts, ", "), samples)
	t.met = met(ok)
	return t
}

// dayCold reports whether q's cold day had been compacted cold when q
// was taken: its live files as few as the cold-partition target allows (2,
// and one more per target-file-size of data).
func (r *fleetResults) dayCold(q fleetQuery) bool {
	if q.ColdLayout == nil {
		return false
	}
	target := int64(8 << 20)
	for _, s := range r.states {
		if s.Minute <= q.Minute && s.TargetFileSize > 0 {
			target = s.TargetFileSize
		}
	}
	return int64(q.ColdLayout.Files) <= 2+q.ColdLayout.Bytes/target
}

// fleetTarget is one fleet target of docs/performance.md, checked.
type fleetTarget struct {
	name, result string
	met          *bool // nil: not measurable in this run
	note         bool  // a figure printed next to the targets, not one of them
}

func (t fleetTarget) verdict() string {
	switch {
	case t.note:
		return "note"
	case t.met == nil:
		return "n/a"
	case *t.met:
		return "met"
	}
	return "NOT MET"
}

func met(b bool) *bool { return &b }

// targets checks the targets of docs/performance.md ("Fleet: a day of 20
// gateways") on one store's results.
func (r *fleetResults) targets() []fleetTarget {
	var ts []fleetTarget
	var end, ref *fleetState
	if n := len(r.states); n > 0 {
		end = &r.states[n-1]
	}
	for i := range r.states {
		if r.states[i].Minute == 119 {
			ref = &r.states[i]
		}
	}

	// Metadata stops growing with the history.
	t := fleetTarget{name: "metadata at the end <= 1.25x after 2 simulated hours, apart from the load history (<= 100 B per key)"}
	if end != nil && ref != nil && end.Minute > ref.Minute {
		a, b := end.MetadataBytes-end.HistoryBytes, ref.MetadataBytes-ref.HistoryBytes
		perKey := 0.0
		if end.HistoryKeys > 0 {
			perKey = float64(end.HistoryBytes) / float64(end.HistoryKeys)
		}
		t.result = fmt.Sprintf("%.2f MB at minute %d against %.2f MB at minute 120 without the load history: %.2fx; load history %.1f B per key (%d keys)",
			float64(a)/mib, end.Minute+1, float64(b)/mib, float64(a)/float64(b), perKey, end.HistoryKeys)
		t.met = met(float64(a) <= 1.25*float64(b) && perKey <= 100)
	} else {
		t.result = "needs a run longer than 120 simulated minutes"
	}
	ts = append(ts, t)

	// Against the live data: files of snapshots not yet expired and
	// orphans under data/ would flatter the ratio.
	t = fleetTarget{name: "metadata apart from the load history <= 0.25x the live data bytes"}
	// Not a target: the history is about a fifth of the data it dedupes
	// (50 B per key against about 250 B of compressed rows per file).
	u := fleetTarget{name: "metadata with the load history against the live data bytes", note: true}
	if end != nil && end.LiveDataBytes > 0 {
		a := end.MetadataBytes - end.HistoryBytes
		t.result = fmt.Sprintf("%.2f MB against %.2f MB of live data (%.2f MB under data/): %.2fx",
			float64(a)/mib, float64(end.LiveDataBytes)/mib, float64(end.DataBytes)/mib, float64(a)/float64(end.LiveDataBytes))
		t.met = met(float64(a) <= 0.25*float64(end.LiveDataBytes))
		u.result = fmt.Sprintf("%.2f MB: %.2fx", float64(end.MetadataBytes)/mib, float64(end.MetadataBytes)/float64(end.LiveDataBytes))
	}
	ts = append(ts, t, u)

	t = fleetTarget{name: "newest metadata JSON <= 2 MB"}
	if len(r.runs) > 0 {
		most, at := int64(0), 0
		for _, run := range r.runs {
			if run.NewestMetadataBytes > most {
				most, at = run.NewestMetadataBytes, run.Minute+1
			}
		}
		t.result = fmt.Sprintf("largest %.1f KB (minute %d), %.1f KB at the end", float64(most)/1024, at,
			float64(r.runs[len(r.runs)-1].NewestMetadataBytes)/1024)
		t.met = met(most <= 2<<20)
	}
	ts = append(ts, t)

	t = fleetTarget{name: "live data bytes <= 1.5x the compacted copy"}
	if n := len(r.queries); n > 0 {
		q := r.queries[n-1]
		worst := 0.0
		for _, x := range r.queries {
			worst = max(worst, float64(x.LiveBytes)/float64(x.FloorBytes))
		}
		t.result = fmt.Sprintf("%.2f MB against %.2f MB at the end: %.2fx (largest at any sample %.2fx)",
			float64(q.LiveBytes)/mib, float64(q.FloorBytes)/mib, float64(q.LiveBytes)/float64(q.FloorBytes), worst)
		t.met = met(float64(q.LiveBytes) <= 1.5*float64(q.FloorBytes))
	}
	ts = append(ts, t)

	t = fleetTarget{name: "<= 2 data files per cold partition (+1 per target-file-size)"}
	cold, worst, worstAt := 0, "", 0.0
	for _, s := range r.states {
		for _, p := range s.Partitions {
			if !p.Cold {
				continue
			}
			cold++
			allowed := 2 + p.Bytes/max(s.TargetFileSize, 1)
			if over := float64(p.Files) - float64(allowed); worst == "" || over > worstAt {
				worstAt = over
				worst = fmt.Sprintf("%s at minute %d: %d files for %.2f MB (allowed %d)", p.Name, s.Minute+1, p.Files, float64(p.Bytes)/mib, allowed)
			}
		}
	}
	if cold > 0 {
		t.result = fmt.Sprintf("%d cold partition samples; worst %s", cold, worst)
		t.met = met(worstAt <= 0)
	} else {
		t.result = "no partition went cold in this run"
	}
	ts = append(ts, t)

	ts = append(ts, r.queryTarget(false), r.queryTarget(true))

	t = fleetTarget{name: "the cold day's data files <= 1.1x the bytes of its floor file"}
	for _, q := range r.queries {
		if q.ColdLayout != nil && q.ColdFloorLayout != nil && q.ColdFloorLayout.Bytes > 0 {
			a, b := q.ColdLayout, q.ColdFloorLayout
			t.result = fmt.Sprintf("%.2f MB in %d file(s) against %.2f MB at minute %d: %.2fx",
				float64(a.Bytes)/mib, a.Files, float64(b.Bytes)/mib, q.Minute+1, float64(a.Bytes)/float64(b.Bytes))
			t.met = met(float64(a.Bytes) <= 1.1*float64(b.Bytes))
		}
	}
	if t.met == nil {
		t.result = "no cold day in this run"
	}
	ts = append(ts, t)

	// Flat runs: the first 60 runs after the one that created the table
	// (after the seeded day's cold rewrite, an hour in, when there is
	// one) against the last 60.
	from := 1
	if r.seeded() {
		from = 61
	}
	first, last := r.window(from, from+60), r.window(len(r.runs)-60, len(r.runs))
	t = fleetTarget{name: "per-run wall time of the last 60 runs <= 1.2x the first 60"}
	c := fleetTarget{name: "per-run CPU time of the last 60 runs <= 1.2x the first 60 (wall time's check, less disturbed by a shared machine)"}
	u = fleetTarget{name: "peak RSS flat (largest of the last 60 runs <= 1.2x the first 60)"}
	if len(r.runs) >= from+120 {
		wall := func(x fleetRunResult) float64 { return x.Seconds }
		cpu := func(x fleetRunResult) float64 { return x.CPUSeconds }
		load := func(x fleetRunResult) float64 { return x.Load1 }
		fs, ls := meanOf(first, wall), meanOf(last, wall)
		fm, lm := medianOf(first, wall), medianOf(last, wall)
		t.result = fmt.Sprintf("mean %.2f s against %.2f s: %.2fx (medians %.2f and %.2f s: %.2fx; load average %.1f and %.1f)",
			ls, fs, ls/fs, lm, fm, lm/fm, meanOf(last, load), meanOf(first, load))
		t.met = met(ls <= 1.2*fs)
		fc, lc := meanOf(first, cpu), meanOf(last, cpu)
		c.result = fmt.Sprintf("mean %.2f s against %.2f s: %.2fx", lc, fc, lc/fc)
		c.met = met(lc <= 1.2*fc)
		fr, lr := maxOf(first, func(x fleetRunResult) float64 { return float64(x.PeakRSS) }), maxOf(last, func(x fleetRunResult) float64 { return float64(x.PeakRSS) })
		u.result = fmt.Sprintf("%.0f MiB against %.0f MiB: %.2fx", lr/mib, fr/mib, lr/fr)
		u.met = met(lr <= 1.2*fr)
	} else {
		need := fmt.Sprintf("needs at least %d runs", from+120)
		t.result, c.result, u.result = need, need, need
	}
	ts = append(ts, t, c, u)

	// The maintenance after each run ends by its budget and the slack.
	t = fleetTarget{name: fmt.Sprintf("inline maintenance <= its budget + %s slack (%s), the longest of the run",
		lake.MaintenanceSlack, ingest.DefaultMaintenanceBudget+lake.MaintenanceSlack)}
	if len(r.runs) > 0 {
		var longest fleetRunResult
		pending := 0
		for _, run := range r.runs {
			if run.maintenanceSeconds() > longest.maintenanceSeconds() {
				longest = run
			}
			if run.pending() {
				pending++
			}
		}
		t.result = fmt.Sprintf("%.2f s at minute %d (its run %.2f s); %d of %d rounds left work for the next",
			longest.maintenanceSeconds(), longest.Minute+1, longest.Seconds, pending, len(r.runs))
		t.met = met(longest.maintenanceSeconds() <= (ingest.DefaultMaintenanceBudget + lake.MaintenanceSlack).Seconds())
	}
	ts = append(ts, t)

	t = fleetTarget{name: "a key re-sent after its snapshot expired: already loaded, rows unchanged"}
	if n := len(r.resends); n > 0 {
		x := r.resends[n-1]
		t.result = fmt.Sprintf("%s re-sent at minute %d: %s (in a snapshot before: %v, in the load history: %v), rows %d -> %d with %d loaded by the run",
			x.Key, x.Minute+1, x.Status, x.InSnapshots, x.InHistory, x.RowsBefore, x.RowsAfter, x.RunRows)
		if x.InSnapshots {
			t.result += "; its snapshot had not expired yet"
		} else {
			t.met = met(x.OK && x.InHistory)
		}
	}
	ts = append(ts, t)

	t = fleetTarget{name: "no row lost or loaded twice (total-records and DuckDB's counts)"}
	checked, bad := 0, ""
	for _, s := range r.states {
		checked++
		if s.TotalRows != s.ExpectedRows && bad == "" {
			bad = fmt.Sprintf("minute %d: %d rows, expected %d", s.Minute+1, s.TotalRows, s.ExpectedRows)
		}
	}
	for _, q := range r.queries {
		checked++
		if !q.rowsOK() && bad == "" {
			bad = fmt.Sprintf("minute %d: DuckDB read %d rows, expected %d", q.Minute+1, q.Rows, q.ExpectedRows)
		}
	}
	if checked > 0 {
		t.result = fmt.Sprintf("%d checks", checked)
		if bad != "" {
			t.result += "; " + bad
		}
		t.met = met(bad == "")
	}
	ts = append(ts, t)
	return ts
}

func (r *fleetResults) printTargets(w io.Writer) {
	fmt.Fprintf(w, "targets (%s store):\n", r.store)
	for _, t := range r.targets() {
		fmt.Fprintf(w, "  %-8s %s: %s\n", t.verdict(), t.name, t.result)
	}
	fmt.Fprintln(w)
}

// seeded reports whether the table held a seeded day before run 0.
func (r *fleetResults) seeded() bool {
	for _, s := range r.states {
		if s.ExpectedRows > int64((s.Minute+1)*r.gateways*fleetRowsPerFile) {
			return true
		}
	}
	return false
}

// window returns runs[from:to] clamped to the runs there are.
func (r *fleetResults) window(from, to int) []fleetRunResult {
	from, to = max(from, 0), min(to, len(r.runs))
	if from >= to {
		return nil
	}
	return r.runs[from:to]
}

// fleetMaintenance is what the bench reads of a run's maintenance object.
type fleetMaintenance struct {
	Seconds float64 `json:"seconds"`
	Pending bool    `json:"pending"`
}

// maintenance reads the run's maintenance object (zero without one).
func (x fleetRunResult) maintenance() fleetMaintenance {
	var m fleetMaintenance
	if len(x.Maintenance) > 0 {
		_ = json.Unmarshal(x.Maintenance, &m) // as fleetRun wrote it
	}
	return m
}

// maintenanceSeconds is the time of the run's maintenance round (0 without
// one).
func (x fleetRunResult) maintenanceSeconds() float64 { return x.maintenance().Seconds }

// pending: the run's maintenance round ran out of budget with work left
// for the next (a backlog).
func (x fleetRunResult) pending() bool { return x.maintenance().Pending }

func meanOf(rs []fleetRunResult, f func(fleetRunResult) float64) float64 {
	sum := 0.0
	for _, x := range rs {
		sum += f(x)
	}
	return sum / float64(max(len(rs), 1))
}

func medianOf(rs []fleetRunResult, f func(fleetRunResult) float64) float64 {
	var xs []float64
	for _, x := range rs {
		xs = append(xs, f(x))
	}
	return median(xs)
}

func maxOf(rs []fleetRunResult, f func(fleetRunResult) float64) float64 {
	m := 0.0
	for _, x := range rs {
		m = max(m, f(x))
	}
	return m
}
