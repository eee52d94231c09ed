// Command tlbench is timelake's benchmark driver, run by bench/run.sh. It
// generates reproducible gateway data, prepares buckets on an S3 server,
// runs one measured case per process (so peak RSS is the case's own), and
// prints medians and ratios against baselines measured in the same run.
//
//	tlbench gen    -case c1 -out DIR
//	tlbench setup  -case c1 -data DIR            > buckets.json
//	tlbench run    -case c1 -mode ingest -setup buckets.json  >> results.jsonl
//	tlbench report results.jsonl
//	tlbench fleet -store local -gateways 20 -minutes 1440 -work DIR -out fleet.jsonl
//	tlbench fleet -store s3 -delay 20ms ...       the S3 server at 20 ms a request (store s3+20ms)
//	tlbench fleet-report fleet.jsonl
//	tlbench backlog -files 1000 -delay 30ms -rounds 8   maintenance of a backlog at a store's latency
//	tlbench longrun -files 10000 -retention 10s          one run of many small files: files/s and metadata size
//
// The S3 server comes from TIMELAKE_TEST_S3_* (scripts/s3-server.sh).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tlbench gen|setup|run|cleanup|report|fleet|fleet-run|fleet-report|backlog|longrun ...")
		os.Exit(2)
	}
	ctx := context.Background()
	if dir := os.Getenv("TLBENCH_PROFILE"); dir != "" && os.Args[1] == "run" {
		stop, perr := startProfiles(dir, "")
		if perr != nil {
			fmt.Fprintln(os.Stderr, "tlbench:", perr)
			os.Exit(1)
		}
		defer stop()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		fs := flag.NewFlagSet("gen", flag.ExitOnError)
		c := fs.String("case", "c1", "case")
		out := fs.String("out", "", "folder")
		_ = fs.Parse(os.Args[2:])
		err = generate(*c, *out)
	case "setup":
		fs := flag.NewFlagSet("setup", flag.ExitOnError)
		data := fs.String("data", "", "folder of generated files")
		_ = fs.Parse(os.Args[2:])
		err = setup(ctx, *data, os.Stdout)
	case "run":
		fs := flag.NewFlagSet("run", flag.ExitOnError)
		c := fs.String("case", "c1", "case")
		mode := fs.String("mode", "ingest", "ingest, sequential, ingest-wide, pollers4, rawcopy, dataputs, upload, sdkupload, routed, single")
		setupFile := fs.String("setup", "", "output of tlbench setup")
		data := fs.String("data", "", "folder of generated files (upload modes)")
		_ = fs.Parse(os.Args[2:])
		err = runCase(ctx, *c, *mode, *setupFile, *data, os.Stdout)
	case "cleanup":
		fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
		setupFile := fs.String("setup", "", "output of tlbench setup")
		_ = fs.Parse(os.Args[2:])
		err = cleanup(ctx, *setupFile)
	case "report":
		err = report(os.Args[2:], os.Stdout)
	case "fleet":
		fs := flag.NewFlagSet("fleet", flag.ExitOnError)
		var o fleetOptions
		fs.StringVar(&o.store, "store", "local", "local or s3")
		fs.IntVar(&o.gateways, "gateways", 20, "gateways, one file each per simulated minute")
		fs.IntVar(&o.minutes, "minutes", 1440, "simulated minutes, one ingest each")
		fs.StringVar(&o.work, "work", "", "work folder (landing and warehouse folders, file lists)")
		fs.StringVar(&o.out, "out", "", "results file (JSON lines, appended)")
		fs.StringVar(&o.duckdb, "duckdb", "", "tlbench-duckdb binary for the query samples (empty: none)")
		fs.IntVar(&o.stateEvery, "state-every", 10, "record the table's state every N simulated minutes")
		fs.IntVar(&o.duckEvery, "duckdb-every", 180, "DuckDB query sample every N simulated minutes")
		fs.IntVar(&o.resendMinute, "resend-minute", -2, "the run that re-sends gateway 0's first file (-1: none; default: the last)")
		fs.BoolVar(&o.keep, "keep", false, "keep the landing and warehouse afterwards")
		fs.BoolVar(&o.seed, "seed-day", true, "load the day before minute 0 first, so that it is a cold day during the run")
		fs.StringVar(&o.set, "set", "", "KEY=VALUE,... table properties set after the first run (experiments; the targets are about the defaults)")
		fs.DurationVar(&o.delay, "delay", 0, "s3 store: hold every S3 request this long in a fault proxy in front of the server (object storage's latency); the store is named s3+DELAY")
		_ = fs.Parse(os.Args[2:])
		if o.resendMinute == -2 {
			o.resendMinute = o.minutes - 1
		}
		err = runFleet(ctx, o, os.Stderr)
	case "fleet-run":
		fs := flag.NewFlagSet("fleet-run", flag.ExitOnError)
		var o fleetRunOptions
		fs.StringVar(&o.setup, "setup", "", "fleet.json of tlbench fleet")
		fs.IntVar(&o.minute, "minute", 0, "simulated minute")
		fs.BoolVar(&o.state, "state", false, "record the table's state after the run")
		fs.StringVar(&o.files, "files", "", "write the live data files here for DuckDB")
		fs.BoolVar(&o.resend, "resend", false, "re-send gateway 0's file of minute 0 and check it")
		set := fs.String("set", "", "KEY=VALUE,... table properties to set after the run")
		_ = fs.Parse(os.Args[2:])
		if o.set, err = parseProperties(*set); err != nil {
			break
		}
		err = fleetRun(ctx, o, os.Stdout)
	case "fleet-seed":
		fs := flag.NewFlagSet("fleet-seed", flag.ExitOnError)
		setupFile := fs.String("setup", "", "fleet.json of tlbench fleet")
		_ = fs.Parse(os.Args[2:])
		err = fleetSeed(ctx, *setupFile)
	case "fleet-report":
		err = fleetReport(os.Args[2:], os.Stdout)
	case "backlog":
		fs := flag.NewFlagSet("backlog", flag.ExitOnError)
		var o backlogOptions
		fs.IntVar(&o.files, "files", 1000, "small files loaded one snapshot each, maintenance off")
		fs.DurationVar(&o.delay, "delay", 30*time.Millisecond, "added to every request to the warehouse during the rounds")
		fs.IntVar(&o.rounds, "rounds", 8, "maintenance rounds")
		fs.DurationVar(&o.budget, "budget", 10*time.Second, "each round's budget")
		_ = fs.Parse(os.Args[2:])
		err = runBacklog(ctx, o, os.Stdout)
	case "longrun":
		fs := flag.NewFlagSet("longrun", flag.ExitOnError)
		var o longRunOptions
		fs.IntVar(&o.files, "files", 10000, "small files loaded in one run, one snapshot each")
		fs.StringVar(&o.retention, "retention", "5m", "the table's timelake.snapshot-retention")
		fs.IntVar(&o.expireDue, "expire-due", 0, "snapshots due for expiry a run lets pile up (0: the default, -1: no expiry during the run)")
		fs.DurationVar(&o.budget, "budget", 10*time.Second, "the run's maintenance budget")
		_ = fs.Parse(os.Args[2:])
		err = runLongRun(ctx, o, os.Stdout)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlbench:", err)
		os.Exit(1) //nolint: deferred profiles are lost on failure, which is fine
	}
}

// startProfiles writes pprof profiles of one run into dir
// (TLBENCH_PROFILE=dir): cpu<suffix>.pprof over the whole run and, at its
// end, allocs<suffix>.pprof (every allocation since the process started);
// with TLBENCH_HEAP_AFTER=<duration> also heap-mid<suffix>.pprof, the live
// heap that long into the run; with TLBENCH_TRACE=1 trace<suffix>.out, an
// execution trace (where a run waits: go tool trace -pprof=net, sync,
// syscall or sched).
func startProfiles(dir, suffix string) (func(), error) {
	cpu, err := os.Create(filepath.Join(dir, "cpu"+suffix+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return nil, err
	}
	stopTrace := func() {}
	if os.Getenv("TLBENCH_TRACE") != "" { // an execution trace too: go tool trace -pprof=net|sync|syscall
		tf, err := os.Create(filepath.Join(dir, "trace"+suffix+".out"))
		if err != nil {
			return nil, err
		}
		if err := trace.Start(tf); err != nil {
			return nil, err
		}
		stopTrace = func() { trace.Stop(); tf.Close() }
	}
	if d, err := time.ParseDuration(os.Getenv("TLBENCH_HEAP_AFTER")); err == nil {
		time.AfterFunc(d, func() {
			if f, err := os.Create(filepath.Join(dir, "heap-mid"+suffix+".pprof")); err == nil {
				runtime.GC()
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return func() {
		stopTrace()
		pprof.StopCPUProfile()
		cpu.Close()
		if f, err := os.Create(filepath.Join(dir, "allocs"+suffix+".pprof")); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}, nil
}

// Result is one measured run (one line of results.jsonl).
type Result struct {
	Case     string  `json:"case"`
	Mode     string  `json:"mode"`
	Seconds  float64 `json:"seconds"`
	Files    int     `json:"files"`
	Rows     int64   `json:"rows"`
	Bytes    int64   `json:"bytes"` // source bytes
	Requests int64   `json:"requests"`
	PeakRSS  int64   `json:"peak_rss"` // bytes, VmHWM of the process
	// CPU seconds (user and system) of the timed part of a tlbench run
	// mode: this process's, and the S3 server's when bench/run.sh names
	// its process (TLBENCH_S3_SERVER_PID).
	CPUSeconds       float64 `json:"cpu_seconds,omitempty"`
	ServerCPUSeconds float64 `json:"server_cpu_seconds,omitempty"`
	// Case-specific facts: metadata size, data files per partition.
	MetadataBytes     int64   `json:"metadata_bytes,omitempty"`
	DataFiles         int     `json:"data_files,omitempty"`
	Partitions        int     `json:"partitions,omitempty"`
	FilesPerPartition float64 `json:"files_per_partition,omitempty"`
	// Fleet modes: the most ingest runs that were loading at one time.
	Concurrent int `json:"concurrent,omitempty"`
	// Latency cases: files sent per second, and the seconds from a file's
	// notification to its commit (quantiles over the run's files).
	Rate       float64 `json:"rate,omitempty"`
	LatencyP50 float64 `json:"latency_p50,omitempty"`
	LatencyP99 float64 `json:"latency_p99,omitempty"`
	LatencyMax float64 `json:"latency_max,omitempty"`
}

func (r Result) filesPerSec() float64 { return float64(r.Files) / r.Seconds }
func (r Result) rowsPerSec() float64  { return float64(r.Rows) / r.Seconds }
func (r Result) mbPerSec() float64    { return float64(r.Bytes) / r.Seconds / 1e6 }

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// report prints medians per case and mode, with ratios to the baselines.
func report(files []string, w io.Writer) error {
	type key struct{ c, m string }
	runs := map[key][]Result{}
	var order []key
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r Result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			k := key{r.Case, r.Mode}
			if _, ok := runs[k]; !ok {
				order = append(order, k)
			}
			runs[k] = append(runs[k], r)
		}
	}
	if len(order) == 0 {
		return errors.New("no results")
	}
	med := func(k key, f func(Result) float64) float64 {
		var xs []float64
		for _, r := range runs[k] {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if slices.ContainsFunc(order, func(k key) bool { return runs[k][0].LatencyP50 == 0 }) {
		fmt.Fprintln(tw, "case\tmode\truns\tfiles/s\trows/s\tMB/s\tpeak RSS MiB\tS3 requests\tvs sequential\tvs raw copy\tvs duckdb\tvs duckdb peer\tvs sdk upload\tvs single\t")
	}
	for _, k := range order {
		if runs[k][0].LatencyP50 > 0 {
			continue // the latency table below
		}
		fps := med(k, Result.filesPerSec)
		mbs := med(k, Result.mbPerSec)
		ratio := func(base string, f func(Result) float64) string {
			bk := key{k.c, base}
			if _, ok := runs[bk]; !ok || bk == k {
				return "-"
			}
			return fmt.Sprintf("%.2fx", med(k, f)/med(bk, f))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			k.c, k.m, len(runs[k]), fps, med(k, Result.rowsPerSec), mbs,
			med(k, func(r Result) float64 { return float64(r.PeakRSS) / (1 << 20) }),
			med(k, func(r Result) float64 { return float64(r.Requests) }),
			ratio("sequential", Result.filesPerSec), ratio("rawcopy", Result.mbPerSec),
			ratio("duckdb", Result.mbPerSec), ratio("duckdb-peer", Result.mbPerSec), ratio("sdkupload", Result.mbPerSec),
			ratio("single", Result.filesPerSec))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, k := range order {
		r := runs[k][0]
		if r.MetadataBytes > 0 || r.Partitions > 0 {
			fmt.Fprintf(w, "%s %s: newest metadata %d bytes after the run; %d data files in %d partitions (%.1f per partition)\n",
				k.c, k.m, r.MetadataBytes, r.DataFiles, r.Partitions, r.FilesPerPartition)
		}
		if base, _, ok := strings.Cut(k.c, "-json"); ok {
			if _, csv := runs[key{base, k.m}]; csv {
				rows := med(k, Result.rowsPerSec)
				fmt.Fprintf(w, "%s %s: %.0f rows/s, %.2fx %s %s's (CSV); %.1f MB/s of input\n",
					k.c, k.m, rows, rows/med(key{base, k.m}, Result.rowsPerSec), base, k.m, med(k, Result.mbPerSec))
			}
		}
		if _, peer := runs[key{k.c, "duckdb-peer"}]; peer && k.m == "dataputs" {
			// The column's ratio is of medians of MB/s; the seconds'
			// medians here, which give the same ratio for three runs.
			floor, duck := med(k, func(r Result) float64 { return r.Seconds }), med(key{k.c, "duckdb-peer"}, func(r Result) float64 { return r.Seconds })
			fmt.Fprintf(w, "%s %s: the %d data files stored alone take %.2f s, DuckDB doing the same work %.2f s: no ingest storing them on this server is more than %.2fx DuckDB\n",
				k.c, k.m, r.DataFiles, floor, duck, duck/floor)
		}
		if r.CPUSeconds > 0 {
			fmt.Fprintf(w, "%s %s: %.2f s of CPU in the timed part, %.2f s of the S3 server's (medians)\n", k.c, k.m,
				med(k, func(r Result) float64 { return r.CPUSeconds }), med(k, func(r Result) float64 { return r.ServerCPUSeconds }))
		}
		if r.Concurrent > 0 {
			fmt.Fprintf(w, "%s %s: up to %d ingest runs loaded the table at the same time; rows exact, no lease refused, no commit gave up\n",
				k.c, k.m, r.Concurrent)
		}
	}
	return latencyReport(w, order, runs)
}

// latencyReport prints the latency cases: the medians over the runs of
// each run's quantiles of notification-to-commit seconds.
func latencyReport[K comparable](w io.Writer, order []K, runs map[K][]Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, k := range order {
		rs := runs[k]
		if rs[0].LatencyP50 == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "case\tmode\truns\tfiles/s sent\tfiles\tp50 s\tp99 s\tmax s\t")
			header = true
		}
		med := func(f func(Result) float64) float64 {
			var xs []float64
			for _, r := range rs {
				xs = append(xs, f(r))
			}
			return median(xs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%.2f\t%.2f\t%.2f\t\n", rs[0].Case, rs[0].Mode, len(rs), rs[0].Rate, rs[0].Files,
			med(func(r Result) float64 { return r.LatencyP50 }), med(func(r Result) float64 { return r.LatencyP99 }),
			med(func(r Result) float64 { return r.LatencyMax }))
	}
	return tw.Flush()
}

// parseProperties parses KEY=VALUE,... ("" is none).
func parseProperties(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("property %q: expected KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}
