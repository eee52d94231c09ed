package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fleetResult is one query sample of the fleet bench (tlbench's fleetQuery).
type fleetResult struct {
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
	CopySeconds        float64 `json:"copy_seconds"` // making the compacted copy
	// The cold day (-cold-day): one series over one hour of it and over
	// the whole day, and every series over the whole day, on the day's
	// live files and on its floor file (the files an Iceberg reader plans
	// for a query of that day: its partition's), their rows, and the
	// layout of the day's live files and of its floor file.
	ColdDay              string      `json:"cold_day,omitempty"` // its partition, e.g. time_day=2026-01-05
	ColdHourLiveSeconds  float64     `json:"cold_hour_live_seconds,omitempty"`
	ColdHourFloorSeconds float64     `json:"cold_hour_floor_seconds,omitempty"`
	ColdDayLiveSeconds   float64     `json:"cold_day_live_seconds,omitempty"`
	ColdDayFloorSeconds  float64     `json:"cold_day_floor_seconds,omitempty"`
	ColdHourRows         int64       `json:"cold_hour_rows,omitempty"`
	ColdHourFloorRows    int64       `json:"cold_hour_floor_rows,omitempty"`
	ColdDayRows          int64       `json:"cold_day_rows,omitempty"`
	ColdDayFloorRows     int64       `json:"cold_day_floor_rows,omitempty"`
	ColdAggLiveSeconds   float64     `json:"cold_agg_live_seconds,omitempty"`
	ColdAggFloorSeconds  float64     `json:"cold_agg_floor_seconds,omitempty"`
	ColdAggRows          int64       `json:"cold_agg_rows,omitempty"`
	ColdAggFloorRows     int64       `json:"cold_agg_floor_rows,omitempty"`
	ColdLayout           *fileLayout `json:"cold_layout,omitempty"`
	// CPUSeconds are the medians of the CPU time (user and system, all of
	// DuckDB's threads) of each query, by name: on a shared machine the
	// work a query takes, which other processes do not stretch as they do
	// its wall time.
	CPUSeconds      map[string]float64 `json:"cpu_seconds"`
	ColdFloorLayout *fileLayout        `json:"cold_floor_layout,omitempty"`
}

// fileLayout is what DuckDB's parquet_metadata() says of a partition's
// files: their row groups and the encodings of each column's chunks.
type fileLayout struct {
	Files     int               `json:"files"`
	Bytes     int64             `json:"bytes"`
	Rows      int64             `json:"rows"`
	RowGroups int               `json:"row_groups"`
	MinRows   int64             `json:"min_rows"` // rows of the smallest and the largest row group
	MaxRows   int64             `json:"max_rows"`
	Encodings map[string]string `json:"encodings"` // column: its chunks' encodings
	Columns   map[string]int64  `json:"column_bytes"`
}

// fleet is `tlbench-duckdb fleet`: it reads the live data files tlbench
// listed (partition, path, bytes per line), writes the same rows compacted
// into one zstd file per partition sorted by the series key and time (the
// floor), and times two queries over both: count(*) and avg over the whole
// table, and the same over one series in one hour. Each query runs once to
// warm up, then reps times; the medians are printed as one JSON line.
func fleet(args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ExitOnError)
	list := fs.String("files", "", "live data files: partition<TAB>path<TAB>bytes per line")
	r := fleetResult{Kind: "duckdb"}
	fs.StringVar(&r.Store, "store", "", "store name for the result line")
	fs.IntVar(&r.Minute, "minute", 0, "simulated minute for the result line")
	fs.StringVar(&r.Series, "series", "", "device_id of the one-series query")
	fs.StringVar(&r.From, "from", "", "start of the one-series query's hour (RFC 3339)")
	fs.StringVar(&r.To, "to", "", "its end (exclusive)")
	fs.Int64Var(&r.ExpectedRows, "expect-rows", 0, "rows the table should hold")
	work := fs.String("work", "", "folder for the compacted copy")
	reps := fs.Int("reps", 21, "timed runs of each query")
	order := fs.String("order", "device_id, time", "sort order of the compacted copy (series key, then time)")
	coldDay := fs.String("cold-day", "", "a day whose partition is cold (YYYY-MM-DD): one series over its noon hour and over the day, every series over the day")
	explain := fs.Bool("explain", os.Getenv("TLBENCH_EXPLAIN") != "", "print EXPLAIN ANALYZE of the cold-day queries to stderr (default on with TLBENCH_EXPLAIN set)")
	_ = fs.Parse(args)

	parts, err := readLiveFiles(*list, &r)
	if err != nil {
		return err
	}
	floor := filepath.Join(*work, "floor")
	if err := os.RemoveAll(floor); err != nil {
		return err
	}
	if err := os.MkdirAll(floor, 0o755); err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	if n := os.Getenv("TLBENCH_DUCKDB_THREADS"); n != "" {
		// One thread separates the layout from how a busy machine
		// schedules DuckDB's threads (docs/performance.md).
		if _, err := strconv.Atoi(n); err != nil {
			return fmt.Errorf("TLBENCH_DUCKDB_THREADS=%q: expected a number of threads", n)
		}
		if _, err := db.Exec("SET threads = " + n); err != nil {
			return err
		}
	}

	var live, compacted []string
	floorOf := map[string]string{}
	names := make([]string, 0, len(parts))
	for p := range parts {
		names = append(names, p)
	}
	sort.Strings(names)
	start := time.Now()
	for i, p := range names {
		live = append(live, parts[p]...)
		dst := filepath.Join(floor, fmt.Sprintf("%04d.parquet", i))
		q := "COPY (SELECT * FROM read_parquet(" + sqlList(parts[p]) + ", hive_partitioning = false) ORDER BY " + *order + ") TO " +
			sqlString(dst) + " (FORMAT parquet, COMPRESSION zstd)"
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("compacted copy of %s: %w", p, err)
		}
		fi, err := os.Stat(dst)
		if err != nil {
			return err
		}
		r.FloorBytes += fi.Size()
		compacted = append(compacted, dst)
		floorOf[p] = dst
	}
	r.CopySeconds = time.Since(start).Seconds()
	r.FloorFiles = len(compacted)

	full := func(files []string) string {
		return "SELECT count(*), avg(temperature_c) FROM read_parquet(" + sqlList(files) + ")"
	}
	between := func(from, to string) string {
		return "time >= TIMESTAMPTZ " + sqlString(from) + " AND time < TIMESTAMPTZ " + sqlString(to)
	}
	series := func(files []string, from, to string) string {
		return full(files) + " WHERE device_id = " + sqlString(r.Series) + " AND " + between(from, to)
	}
	qs := []timedQuery{
		{name: "full_live", query: full(live), seconds: &r.FullLiveSeconds, rows: &r.Rows},
		{name: "full_floor", query: full(compacted), seconds: &r.FullFloorSeconds, rows: &r.FloorRows},
		{name: "series_live", query: series(live, r.From, r.To), seconds: &r.SeriesLiveSeconds, rows: &r.SeriesRows},
		{name: "series_floor", query: series(compacted, r.From, r.To), seconds: &r.SeriesFloorSeconds, rows: &r.FloorSeriesRows},
	}
	if *coldDay != "" {
		day, err := time.Parse("2006-01-02", *coldDay)
		if err != nil {
			return fmt.Errorf("-cold-day %q: expected YYYY-MM-DD", *coldDay)
		}
		r.ColdDay = "time_day=" + *coldDay
		if len(parts[r.ColdDay]) == 0 {
			return fmt.Errorf("-cold-day %s: the table has no live file in %s", *coldDay, r.ColdDay)
		}
		at := func(h int) string { return day.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }
		// The day's files only, on both sides: an Iceberg reader plans a
		// query of one day from the manifests (partition values and
		// column bounds) and opens no file of another day, where
		// read_parquet over every live file would open today's files
		// too and time DuckDB's cost per file opened, not the day's
		// layout.
		dayLive, dayFloor := parts[r.ColdDay], []string{floorOf[r.ColdDay]}
		cold := []timedQuery{
			{name: "cold_hour_live", query: series(dayLive, at(12), at(13)), seconds: &r.ColdHourLiveSeconds, rows: &r.ColdHourRows},
			{name: "cold_hour_floor", query: series(dayFloor, at(12), at(13)), seconds: &r.ColdHourFloorSeconds, rows: &r.ColdHourFloorRows},
			{name: "cold_day_live", query: series(dayLive, at(0), at(24)), seconds: &r.ColdDayLiveSeconds, rows: &r.ColdDayRows},
			{name: "cold_day_floor", query: series(dayFloor, at(0), at(24)), seconds: &r.ColdDayFloorSeconds, rows: &r.ColdDayFloorRows},
			{name: "cold_agg_live", query: full(dayLive) + " WHERE " + between(at(0), at(24)), seconds: &r.ColdAggLiveSeconds, rows: &r.ColdAggRows},
			{name: "cold_agg_floor", query: full(dayFloor) + " WHERE " + between(at(0), at(24)), seconds: &r.ColdAggFloorSeconds, rows: &r.ColdAggFloorRows},
		}
		if *explain {
			for _, q := range cold {
				if err := explainAnalyze(db, q.name, q.query); err != nil {
					return err
				}
			}
		}
		qs = append(qs, cold...)
		if r.ColdLayout, err = layoutOf(db, parts[r.ColdDay]); err != nil {
			return err
		}
		if r.ColdFloorLayout, err = layoutOf(db, []string{floorOf[r.ColdDay]}); err != nil {
			return err
		}
	}
	r.CPUSeconds = map[string]float64{}
	if err := timeQueries(db, qs, *reps, r.CPUSeconds); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// explainAnalyze prints DuckDB's EXPLAIN ANALYZE of query to stderr: the
// operators, their rows and times, what the scan read.
func explainAnalyze(db *sql.DB, name, query string) error {
	rows, err := db.Query("EXPLAIN ANALYZE " + query)
	if err != nil {
		return fmt.Errorf("explain %s: %w", name, err)
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "== %s\n", name)
	for rows.Next() {
		var kind, plan string
		if err := rows.Scan(&kind, &plan); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, plan)
	}
	return rows.Err()
}

// layoutOf reads the row groups and column chunk encodings of files with
// parquet_metadata().
func layoutOf(db *sql.DB, files []string) (*fileLayout, error) {
	l := &fileLayout{Files: len(files), Encodings: map[string]string{}, Columns: map[string]int64{}}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		l.Bytes += fi.Size()
	}
	src := "parquet_metadata(" + sqlList(files) + ")"
	q := "SELECT count(*), coalesce(sum(n), 0), coalesce(min(n), 0), coalesce(max(n), 0) FROM " +
		"(SELECT file_name, row_group_id, any_value(row_group_num_rows) AS n FROM " + src + " GROUP BY ALL)"
	if err := db.QueryRow(q).Scan(&l.RowGroups, &l.Rows, &l.MinRows, &l.MaxRows); err != nil {
		return nil, fmt.Errorf("row groups of %v: %w", files, err)
	}
	rows, err := db.Query("SELECT path_in_schema, string_agg(DISTINCT encodings, ' / ' ORDER BY encodings), sum(total_compressed_size) FROM " +
		src + " GROUP BY ALL")
	if err != nil {
		return nil, fmt.Errorf("encodings of %v: %w", files, err)
	}
	defer rows.Close()
	for rows.Next() {
		var col, enc string
		var n int64
		if err := rows.Scan(&col, &enc, &n); err != nil {
			return nil, err
		}
		l.Encodings[col], l.Columns[col] = enc, n
	}
	return l, rows.Err()
}

// timedQuery is a query returning count(*) and an average, with where its
// median time and its count go; its median CPU time goes under name.
type timedQuery struct {
	name    string
	query   string
	seconds *float64
	rows    *int64
	times   []float64
	cpu     []float64
}

// readLiveFiles reads tlbench's list into paths per partition.
func readLiveFiles(list string, r *fleetResult) (map[string][]string, error) {
	f, err := os.Open(list)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	parts := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: expected partition<TAB>path<TAB>bytes, got %q", list, sc.Text())
		}
		n, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bytes %q: %w", list, fields[2], err)
		}
		parts[fields[0]] = append(parts[fields[0]], fields[1])
		r.LiveFiles++
		r.LiveBytes += n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if r.LiveFiles == 0 {
		return nil, fmt.Errorf("%s: no files", list)
	}
	return parts, nil
}

// timeQueries runs every query once to warm up, then reps rounds of all
// of them in turn (so that a slower moment of a shared machine falls on
// all alike), and sets each one's median time and count(*), and its median
// CPU time in cpu.
func timeQueries(db *sql.DB, qs []timedQuery, reps int, cpu map[string]float64) error {
	for i := range reps + 1 {
		for j := range qs {
			q := &qs[j]
			var avg sql.NullFloat64
			c0, start := cpuTime(), time.Now()
			if err := db.QueryRow(q.query).Scan(q.rows, &avg); err != nil {
				return fmt.Errorf("%.200s: %w", q.query, err)
			}
			if i > 0 {
				q.times = append(q.times, time.Since(start).Seconds())
				q.cpu = append(q.cpu, (cpuTime() - c0).Seconds())
			}
		}
	}
	median := func(xs []float64) float64 {
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	for _, q := range qs {
		*q.seconds = median(q.times)
		cpu[q.name] = median(q.cpu)
	}
	return nil
}

// cpuTime is the user and system CPU time of the process so far (every
// thread's).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func sqlList(files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = sqlString(f)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
