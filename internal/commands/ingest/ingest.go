// Package ingest is the `timelake ingest` command: the poller cron runs
// every minute.
package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// Options are the resolved inputs of one ingest command.
type Options struct {
	Config ingest.Config
	JSON   bool
	Out    io.Writer
	// Getenv reports the process environment; when set, Run tunes the Go
	// runtime's memory settings for the run (ingest.TuneRuntime).
	Getenv func(string) (string, bool)
}

// Settings and the environment variables behind them.
var (
	LandingEnv      = []string{"LANDING_BUCKET", "TIMELAKE_LANDING"}
	WarehouseEnv    = []string{"TIMELAKE_WAREHOUSE"}
	TableEnv        = []string{"TIMELAKE_TABLE"}
	PrefixEnv       = []string{"TIMELAKE_LANDING_PREFIX"}
	QuarantineEnv   = []string{"TIMELAKE_QUARANTINE_PREFIX"}
	TimeColumnEnv   = []string{"TIMELAKE_TIME_COLUMN"}
	SeriesKeyEnv    = []string{"TIMELAKE_SERIES_KEY"}
	PartitionEnv    = []string{"TIMELAKE_PARTITION"}
	TimeUnitEnv     = []string{"TIMELAKE_TIME_UNIT"}
	TimezoneEnv     = []string{"TIMELAKE_ASSUME_TIMEZONE"}
	MaxFilesEnv     = []string{"TIMELAKE_MAX_FILES"}
	LeaseTTLEnv     = []string{"TIMELAKE_LEASE_TTL"}
	ParallelEnv     = []string{"TIMELAKE_PARALLEL"}
	PerCommitEnv    = []string{"TIMELAKE_FILES_PER_COMMIT"}
	MemoryBudgetEnv = []string{"TIMELAKE_MEMORY_BUDGET"}
)

// NewCmdIngest builds the command. runF replaces Run in tests of flag
// parsing; nil means Run.
func NewCmdIngest(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Load every file of the landing bucket into the Iceberg table, then delete it",
		Long: `Load every CSV, TSV (optionally gzipped) or Parquet file of the landing bucket
into the Iceberg table, with the object key as the batch id, and delete each
file once its rows are committed. A key that is already committed is only
deleted; a file that cannot be loaded is moved to the quarantine prefix with
an error report. Safe to run from cron every minute: an overlapping run exits
with code 11, and a crash at any point loses and duplicates nothing.

Every setting can also come from the environment or from --env-file; the
variable is named in each flag's help.`,
		Example: `  timelake ingest --landing ./landing --warehouse ./lake --table iot.readings
  timelake ingest --env-file timelake.env
  set -a; . ./timelake.env; set +a; timelake ingest --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := resolve(cmd, f)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.String("landing", "", "landing bucket: bucket name, s3://bucket/prefix, or a local folder such as ./landing"+cmdutil.EnvHelp(LandingEnv...))
	fl.String("warehouse", "", "warehouse: s3://bucket/prefix or a local folder"+cmdutil.EnvHelp(WarehouseEnv...))
	fl.String("table", "", "table name, namespace.table"+cmdutil.EnvHelp(TableEnv...))
	fl.String("prefix", "", "only load landing keys that start with this prefix"+cmdutil.EnvHelp(PrefixEnv...))
	fl.String("quarantine-prefix", landing.DefaultQuarantinePrefix, "where files that cannot be loaded are moved"+cmdutil.EnvHelp(QuarantineEnv...))
	fl.String("time-column", "", "time column when creating the table (default: inferred)"+cmdutil.EnvHelp(TimeColumnEnv...))
	fl.String("series-key", "", "comma-separated columns that identify a series, when creating the table"+cmdutil.EnvHelp(SeriesKeyEnv...))
	fl.String("partition", "day", "time partition granularity when creating the table: hour, day or month"+cmdutil.EnvHelp(PartitionEnv...))
	fl.String("time-unit", "", "unit of a numeric epoch time column: s, ms, us or ns (text times need none)"+cmdutil.EnvHelp(TimeUnitEnv...))
	fl.String("assume-timezone", "UTC", "IANA zone of text times written without an offset, e.g. Europe/Berlin"+cmdutil.EnvHelp(TimezoneEnv...))
	fl.Bool("no-create", false, "fail instead of creating a missing table")
	fl.Bool("dry-run", false, "list what would be loaded; change nothing")
	fl.Int("max-files", 0, "load at most this many files in this run (0: all)"+cmdutil.EnvHelp(MaxFilesEnv...))
	fl.Duration("lease-ttl", 10*time.Minute, "how long the ingest lease lasts without renewal"+cmdutil.EnvHelp(LeaseTTLEnv...))
	fl.Int("parallel", ingest.DefaultParallel, "files downloaded, decoded and written at once"+cmdutil.EnvHelp(ParallelEnv...))
	fl.Int("files-per-commit", ingest.DefaultFilesPerCommit, "most files (one snapshot each) per metadata write"+cmdutil.EnvHelp(PerCommitEnv...))
	fl.String("memory-budget", "64MiB", "bytes of landing files decoded at once (more: faster on large files, more memory)"+cmdutil.EnvHelp(MemoryBudgetEnv...))
	return cmd
}

func resolve(cmd *cobra.Command, f *cmdutil.Factory) (*Options, error) {
	ctx := cmd.Context()
	landingS, err := f.MustResolve(cmd, "landing", LandingEnv...)
	if err != nil {
		return nil, err
	}
	warehouseS, err := f.MustResolve(cmd, "warehouse", WarehouseEnv...)
	if err != nil {
		return nil, err
	}
	tableS, err := f.MustResolve(cmd, "table", TableEnv...)
	if err != nil {
		return nil, err
	}
	name, err := lake.ParseTableName(tableS.Value)
	if err != nil {
		return nil, cmdutil.FlagErrorf("%s: %v", tableS.Describe(), err)
	}
	get := func(flag string, env []string) (string, error) {
		s, err := f.Resolve(cmd, flag, env...)
		return s.Value, err
	}
	var c ingest.Config
	c.Table = name
	if c.Prefix, err = get("prefix", PrefixEnv); err != nil {
		return nil, err
	}
	if c.QuarantinePrefix, err = get("quarantine-prefix", QuarantineEnv); err != nil {
		return nil, err
	}
	if qp := strings.TrimSuffix(c.QuarantinePrefix, "/"); storage.ValidateKey(qp) != nil || c.QuarantinePrefix == "" {
		return nil, cmdutil.FlagErrorf("--quarantine-prefix: %q is not a relative key prefix such as _rejected/", c.QuarantinePrefix)
	}
	if !strings.HasSuffix(c.QuarantinePrefix, "/") {
		c.QuarantinePrefix += "/"
	}
	if c.TimeColumn, err = get("time-column", TimeColumnEnv); err != nil {
		return nil, err
	}
	sk, err := get("series-key", SeriesKeyEnv)
	if err != nil {
		return nil, err
	}
	for _, k := range strings.Split(sk, ",") {
		if k = strings.TrimSpace(k); k != "" {
			c.SeriesKey = append(c.SeriesKey, k)
		}
	}
	part, err := get("partition", PartitionEnv)
	if err != nil {
		return nil, err
	}
	if c.Partition, err = lake.ParseGranularity(part); err != nil {
		return nil, cmdutil.FlagErrorf("--partition: %v", err)
	}
	if c.TimeUnit, err = get("time-unit", TimeUnitEnv); err != nil {
		return nil, err
	}
	switch c.TimeUnit {
	case "", "s", "ms", "us", "ns":
	default:
		return nil, cmdutil.FlagErrorf("--time-unit: invalid unit %q (expected s, ms, us or ns)", c.TimeUnit)
	}
	tz, err := get("assume-timezone", TimezoneEnv)
	if err != nil {
		return nil, err
	}
	if c.AssumeLocation, err = time.LoadLocation(tz); err != nil {
		return nil, cmdutil.FlagErrorf("--assume-timezone: unknown time zone %q (expected an IANA name such as Europe/Berlin)", tz)
	}
	maxFiles, err := get("max-files", MaxFilesEnv)
	if err != nil {
		return nil, err
	}
	if c.MaxFiles, err = strconv.Atoi(maxFiles); err != nil || c.MaxFiles < 0 {
		return nil, cmdutil.FlagErrorf("--max-files: expected a whole number >= 0, got %q", maxFiles)
	}
	ttl, err := get("lease-ttl", LeaseTTLEnv)
	if err != nil {
		return nil, err
	}
	if c.LeaseTTL, err = time.ParseDuration(ttl); err != nil || c.LeaseTTL <= 0 {
		return nil, cmdutil.FlagErrorf("--lease-ttl: expected a duration such as 10m, got %q", ttl)
	}
	for _, n := range []struct {
		flag string
		env  []string
		dst  *int
	}{{"parallel", ParallelEnv, &c.Parallel}, {"files-per-commit", PerCommitEnv, &c.FilesPerCommit}} {
		v, err := get(n.flag, n.env)
		if err != nil {
			return nil, err
		}
		if *n.dst, err = strconv.Atoi(v); err != nil || *n.dst < 1 {
			return nil, cmdutil.FlagErrorf("--%s: expected a whole number >= 1, got %q", n.flag, v)
		}
	}
	mb, err := get("memory-budget", MemoryBudgetEnv)
	if err != nil {
		return nil, err
	}
	if c.MemoryBudget, err = parseBytes(mb); err != nil || c.MemoryBudget < 1<<20 {
		return nil, cmdutil.FlagErrorf("--memory-budget: expected a size such as 64MiB or 1GiB (at least 1MiB), got %q", mb)
	}
	c.NoCreate, _ = cmd.Flags().GetBool("no-create")
	c.DryRun, _ = cmd.Flags().GetBool("dry-run")
	c.Logger = f.Logger()

	loc, err := storage.ParseLocation(landingS.Value, true)
	if err != nil {
		return nil, cmdutil.FlagErrorf("landing %s: %v", landingS.Describe(), err)
	}
	if wloc, err := storage.ParseLocation(warehouseS.Value, false); err == nil && storage.Overlaps(loc, wloc) {
		return nil, cmdutil.FlagErrorf("the warehouse %s and the landing location %s overlap: ingest would load the table's own files; use separate buckets, prefixes or folders", wloc, loc)
	}
	if c.Landing, err = f.OpenStore(ctx, cmd, loc); err != nil {
		return nil, err
	}
	if c.Lake, err = f.OpenLake(ctx, cmd, warehouseS.Value); err != nil {
		return nil, err
	}
	return &Options{Config: c, JSON: f.JSON, Out: f.IO.Out, Getenv: f.Getenv}, nil
}

// Run runs one ingest and prints one line per file and a summary, or the
// --json report. It returns cmdutil.ErrPartial (exit 3) when files were
// quarantined.
func Run(ctx context.Context, opts *Options) error {
	c := opts.Config
	if opts.Getenv != nil {
		defer ingest.TuneRuntime(c.MemoryBudget, opts.Getenv)()
	}
	if !opts.JSON {
		c.OnFile = func(r ingest.FileResult) { fmt.Fprintln(opts.Out, FileLine(r)) }
		c.OnCreate = func(cr *ingest.Created) { fmt.Fprint(opts.Out, CreatedText(cr)) }
	}
	rep, err := ingest.Run(ctx, c)
	if err != nil && len(rep.Files) == 0 {
		// Nothing was done: the error is the whole story (no "nothing to
		// load" summary that would read like success).
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		fmt.Fprintln(opts.Out, Summary(rep))
	}
	if err != nil {
		return err
	}
	if rep.Partial() {
		return cmdutil.ErrPartial
	}
	return nil
}

// FileLine is the one output line of a file.
func FileLine(r ingest.FileResult) string {
	switch r.Status {
	case ingest.Loaded:
		if r.DuplicateRows > 0 {
			return fmt.Sprintf("%-15s %s  %d rows (%d repeat the series key and time of an earlier row, kept)  snapshot %d",
				"loaded", r.Key, r.Rows, r.DuplicateRows, r.SnapshotID)
		}
		return fmt.Sprintf("%-15s %s  %d rows  snapshot %d", "loaded", r.Key, r.Rows, r.SnapshotID)
	case ingest.AlreadyLoaded:
		if r.SnapshotID == 0 {
			return fmt.Sprintf("%-15s %s  %s", "already loaded", r.Key, r.Reason)
		}
		return fmt.Sprintf("%-15s %s  snapshot %d, deleted", "already loaded", r.Key, r.SnapshotID)
	case ingest.Quarantined:
		return fmt.Sprintf("%-15s %s  -> %s: %s", "quarantined", r.Key, r.QuarantinedTo, r.Reason)
	case ingest.WouldLoad:
		return fmt.Sprintf("%-15s %s  %d bytes", "would load", r.Key, r.Size)
	}
	return fmt.Sprintf("%-15s %s", r.Status, r.Key)
}

// Summary is the last output line of a run.
func Summary(rep *ingest.Report) string {
	if rep.DryRun {
		n := 0
		for _, f := range rep.Files {
			if f.Status == ingest.WouldLoad {
				n++
			}
		}
		return fmt.Sprintf("%s: dry run, %d files would be loaded, %d already loaded", rep.Table, n, len(rep.Files)-n)
	}
	if len(rep.Files) == 0 {
		return fmt.Sprintf("%s: nothing to load in %s", rep.Table, rep.Landing)
	}
	s := fmt.Sprintf("%s: %d loaded (%d rows), %d already loaded, %d quarantined in %.1fs",
		rep.Table, rep.Loaded, rep.Rows, rep.AlreadyLoaded, rep.Quarantined, rep.Seconds)
	if rep.SnapshotID != 0 {
		s += fmt.Sprintf("; current snapshot %d (metadata v%d)", rep.SnapshotID, rep.MetadataVersion)
	}
	if rep.Remaining {
		s += "; more files wait (--max-files)"
	}
	return s
}

// CreatedText describes a table created by the run.
func CreatedText(c *ingest.Created) string {
	var b strings.Builder
	fmt.Fprintf(&b, "created table %s at %s from %s\n", c.Table, c.Location, c.FromFile)
	fmt.Fprintf(&b, "  time column %s, partition %s(%s)", c.TimeColumn, c.Partition, c.TimeColumn)
	if len(c.SeriesKey) > 0 {
		fmt.Fprintf(&b, ", series key %s", strings.Join(c.SeriesKey, ","))
	}
	b.WriteString("\n")
	for _, col := range c.Columns {
		req := ""
		if col.Required {
			req = " not null"
		}
		fmt.Fprintf(&b, "  %-20s %s%s\n", col.Name, col.Type, req)
	}
	return b.String()
}

// parseBytes reads sizes such as 512KiB, 64MiB, 1GiB, 1GB or 1048576.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("invalid size %q", s)
			}
			return int64(n * float64(u.mult)), nil
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
