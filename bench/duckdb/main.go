// Command tlbench-duckdb is the DuckDB baseline of bench/run.sh: it converts
// the same landing files (CSV, JSON lines or Parquet: read_csv, read_ndjson
// or read_parquet) to zstd Parquet with DuckDB, one COPY per file, and
// prints one result line in tlbench's format. Mode duckdb is the bare COPY,
// the conversion ceiling; mode duckdb-peer (-peer) does to each file what
// ingest does: rows sorted by partition, series key and time, one folder
// per day (PARTITION_BY), zstd Parquet; `tlbench-duckdb fleet` times
// queries for the fleet bench (fleet.go). It is a separate module so that
// timelake itself never links DuckDB.
package main

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

type result struct {
	Case    string  `json:"case"`
	Mode    string  `json:"mode"`
	Seconds float64 `json:"seconds"`
	Files   int     `json:"files"`
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	PeakRSS int64   `json:"peak_rss"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "fleet" {
		if err := fleet(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "tlbench-duckdb fleet:", err)
			os.Exit(1)
		}
		return
	}
	data := flag.String("data", "", "folder of generated landing files")
	name := flag.String("case", "", "case name")
	threads := flag.Int("threads", 0, "DuckDB threads (0: DuckDB's default)")
	peer := flag.Bool("peer", false, "do what ingest does: sort by day, series key and time, partition by day (mode duckdb-peer)")
	flag.Parse()
	if err := run(*data, *name, *threads, *peer); err != nil {
		fmt.Fprintln(os.Stderr, "tlbench-duckdb:", err)
		os.Exit(1)
	}
}

func run(data, name string, threads int, peer bool) error {
	out, err := os.MkdirTemp("", "tlbench-duckdb")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	var files []string
	var bytes int64
	err = filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, p)
		bytes += fi.Size()
		return nil
	})
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	if threads > 0 {
		if _, err := db.Exec("SET threads = " + strconv.Itoa(threads)); err != nil {
			return err
		}
	}
	// Days are UTC days, as the table's day(time) partitions are.
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		return err
	}
	r := result{Case: name, Mode: "duckdb", Files: len(files), Bytes: bytes}
	if peer {
		r.Mode = "duckdb-peer"
	}
	// Only the COPY statements are timed: the count of the rows written
	// (read back below) checks the run, as ingest's report and the table
	// facts tlbench records after its own timer stop do.
	var elapsed time.Duration
	var written []string
	for i, f := range files {
		src := "read_csv('" + f + "', header = true)"
		switch base := strings.TrimSuffix(f, ".gz"); {
		case strings.HasSuffix(f, ".parquet"):
			src = "read_parquet('" + f + "')"
		case strings.HasSuffix(base, ".jsonl"), strings.HasSuffix(base, ".ndjson"):
			src = "read_ndjson('" + f + "')"
		}
		dst := filepath.Join(out, fmt.Sprintf("%05d.parquet", i))
		copySQL := "COPY (SELECT * FROM " + src + ") TO '" + dst + "' (FORMAT parquet, COMPRESSION zstd)"
		out := dst
		if peer {
			// The series key of the bench's table is device_id (tlbench run).
			copySQL = "COPY (SELECT *, CAST(time AS DATE) AS time_day FROM " + src + " ORDER BY time_day, device_id, time) TO '" + dst +
				"' (FORMAT parquet, PARTITION_BY (time_day), COMPRESSION zstd)"
			out = dst + "/*/*.parquet"
		}
		start := time.Now()
		if _, err := db.Exec(copySQL); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		elapsed += time.Since(start)
		written = append(written, out)
	}
	r.Seconds = elapsed.Seconds()
	for _, w := range written {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM read_parquet('" + w + "')").Scan(&n); err != nil {
			return err
		}
		r.Rows += n
	}
	r.PeakRSS = peakRSS()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// peakRSS is the process's high-water resident set size (Linux VmHWM).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
