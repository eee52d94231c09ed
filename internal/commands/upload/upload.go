// Package upload is the `timelake upload` command: the gateway side, which
// puts files into the landing bucket under keys that are unique per file and
// stable across retries.
package upload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/upload"
)

// ProgressMinBytes is the file size from which a progress bar is shown on a
// terminal (smaller files go up in well under a second on most links).
const ProgressMinBytes = 4 << 20

// Options are the resolved inputs of one upload command.
type Options struct {
	Config upload.Config
	JSON   bool
	Out    io.Writer // file lines and summary, or the --json document
	ErrOut io.Writer // progress bars
	// Progress shows progress bars on ErrOut (it is a terminal) for files of
	// at least ProgressMinBytes.
	Progress bool
}

// Settings and the environment variables behind them.
var (
	// The landing bucket and the time-column settings are ingest's.
	LandingEnv    = ingestcmd.LandingEnv
	TimeColumnEnv = ingestcmd.TimeColumnEnv
	TimeUnitEnv   = ingestcmd.TimeUnitEnv

	GatewayEnv = []string{"TIMELAKE_GATEWAY"}
	PrefixEnv  = []string{"TIMELAKE_UPLOAD_PREFIX"}
	SpoolEnv   = []string{"TIMELAKE_SPOOL"}
	DoneEnv    = []string{"TIMELAKE_SPOOL_DONE"}
)

// NewCmdUpload builds the command. runF replaces Run in tests of flag
// parsing; nil means Run.
func NewCmdUpload(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upload [file...]",
		Short: "Put files into the landing bucket under unique, retry-stable keys",
		Long: `Upload CSV, TSV (optionally gzipped) or Parquet files to the landing bucket,
from a gateway. Each file gets the key <gateway>/<UTC time>-<hash>.<ext>, e.g.
gateway-7/20260105T100000Z-1a2b3c4d.csv, from its modification time and the
first 8 hex digits of its SHA-256, so the same file always gets the same key.

An object is never overwritten (conditional put, If-None-Match: *): a key that
holds the same content is reported as already uploaded, a key that holds
different content is refused. Each file is checked locally (--validate) before
anything is sent, and its SHA-256 travels with it, so the server rejects a
corrupted body. Large files go up as multipart uploads.

With --spool, every file of a folder is uploaded, oldest first, and deleted (or
moved to --done) once its object is confirmed; hidden and partial files
(*.tmp, *.part) are skipped. A run that stops half-way is safe to repeat.

Every setting can also come from the environment or from --env-file; the
variable is named in each flag's help. See docs/gateways.md.`,
		Example: `  timelake upload --gateway gateway-7 readings.csv
  timelake upload --gateway gateway-7 --spool /var/spool/timelake
  timelake upload --key gateway-7/20260105T1000.csv readings.csv
  timelake upload --landing ./landing --gateway gw1 --gzip readings.csv`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := resolve(cmd, f, args)
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
	fl.String("gateway", "", "gateway name, the first segment of generated keys"+cmdutil.EnvHelp(GatewayEnv...))
	fl.String("key", "", "explicit object key for a single file, instead of the generated one")
	fl.String("prefix", "", "key prefix in front of every key, e.g. site-3"+cmdutil.EnvHelp(PrefixEnv...))
	fl.String("time", string(upload.TimeModified), "time in generated keys: mtime (the file's modification time, stable across retries) or now")
	fl.String("spool", "", "upload every file of this folder, oldest first, then delete it"+cmdutil.EnvHelp(SpoolEnv...))
	fl.String("done", "", "with --spool: move uploaded files to this folder instead of deleting them"+cmdutil.EnvHelp(DoneEnv...))
	fl.Duration("min-age", 0, "with --spool: skip files modified less than this long ago, e.g. 30s")
	fl.Bool("gzip", false, "gzip CSV and TSV files on the way (the key ends in .gz)")
	fl.Int("parallel", upload.DefaultParallel, "files uploaded at once (output stays in file order)")
	fl.Bool("validate", true, "check each file (header, rows, time column) before sending it; --validate=false to skip")
	fl.String("time-column", "", "time column for --validate (default: inferred as ingest does)"+cmdutil.EnvHelp(TimeColumnEnv...))
	fl.String("time-unit", "", "unit of a numeric epoch time column for --validate: s, ms, us or ns"+cmdutil.EnvHelp(TimeUnitEnv...))
	return cmd
}

func resolve(cmd *cobra.Command, f *cmdutil.Factory, args []string) (*Options, error) {
	get := func(flag string, env []string) (string, error) {
		s, err := f.Resolve(cmd, flag, env...)
		return strings.TrimSpace(s.Value), err
	}
	var c upload.Config
	var err error
	c.Files = args
	fl := cmd.Flags()

	// Files on the command line win over a spool folder from the
	// environment; both on the command line is a usage error.
	if len(args) == 0 {
		if c.Spool, err = get("spool", SpoolEnv); err != nil {
			return nil, err
		}
	} else if fl.Changed("spool") {
		return nil, cmdutil.FlagErrorf("pass files or --spool, not both")
	}
	if len(args) == 0 && c.Spool == "" {
		return nil, cmdutil.FlagErrorf("nothing to upload: pass files, or --spool DIR (or set %s)", strings.Join(SpoolEnv, " or "))
	}
	if c.Spool != "" {
		if c.Done, err = get("done", DoneEnv); err != nil {
			return nil, err
		}
		if c.Done != "" && filepath.Clean(c.Done) == filepath.Clean(c.Spool) {
			return nil, cmdutil.FlagErrorf("--done must be another folder than --spool")
		}
		c.MinAge, _ = fl.GetDuration("min-age")
		if c.MinAge < 0 {
			return nil, cmdutil.FlagErrorf("--min-age must not be negative")
		}
	} else if fl.Changed("done") || fl.Changed("min-age") {
		return nil, cmdutil.FlagErrorf("--done and --min-age only apply with --spool")
	}

	c.Key, _ = fl.GetString("key")
	if c.Key != "" {
		if c.Spool != "" || len(args) != 1 {
			return nil, cmdutil.FlagErrorf("--key names the object of exactly one file (not with --spool)")
		}
		if err := storage.ValidateKey(c.Key); err != nil {
			return nil, cmdutil.FlagErrorf("--key: %v", err)
		}
	} else {
		gw, err := f.MustResolve(cmd, "gateway", GatewayEnv...)
		if err != nil {
			return nil, err
		}
		c.Gateway = strings.TrimSpace(gw.Value)
		if err := upload.ValidateGateway(c.Gateway); err != nil {
			return nil, cmdutil.FlagErrorf("%s: %v", gw.Describe(), err)
		}
	}
	prefix, err := get("prefix", PrefixEnv)
	if err != nil {
		return nil, err
	}
	if c.Prefix, err = upload.NormalizePrefix(prefix); err != nil {
		return nil, cmdutil.FlagErrorf("--prefix: %v", err)
	}
	ts, _ := fl.GetString("time")
	switch c.Time = upload.TimeSource(ts); c.Time {
	case upload.TimeModified, upload.TimeNow:
	default:
		return nil, cmdutil.FlagErrorf("--time: %q is not one of mtime, now", ts)
	}

	c.Gzip, _ = fl.GetBool("gzip")
	if c.Parallel, _ = fl.GetInt("parallel"); c.Parallel < 1 {
		return nil, cmdutil.FlagErrorf("--parallel: expected a whole number >= 1, got %d", c.Parallel)
	}
	c.Validate, _ = fl.GetBool("validate")
	if c.ValidateOptions.TimeColumn, err = get("time-column", TimeColumnEnv); err != nil {
		return nil, err
	}
	if c.ValidateOptions.TimeUnit, err = get("time-unit", TimeUnitEnv); err != nil {
		return nil, err
	}
	switch c.ValidateOptions.TimeUnit {
	case "", "s", "ms", "us", "ns":
	default:
		return nil, cmdutil.FlagErrorf("--time-unit: invalid unit %q (expected s, ms, us or ns)", c.ValidateOptions.TimeUnit)
	}

	landingS, err := f.MustResolve(cmd, "landing", LandingEnv...)
	if err != nil {
		return nil, err
	}
	loc, err := storage.ParseLocation(landingS.Value, true)
	if err != nil {
		return nil, cmdutil.FlagErrorf("landing %s: %v", landingS.Describe(), err)
	}
	// Building the client reads configuration only: no request is sent
	// before the first file is validated.
	if c.Store, err = f.OpenStore(cmd.Context(), cmd, loc); err != nil {
		return nil, err
	}
	return &Options{Config: c, JSON: f.JSON, Out: f.IO.Out, ErrOut: f.IO.ErrOut, Progress: f.IO.IsStderrTTY()}, nil
}

// Run uploads and prints one line per file (and a summary for a spool or
// several files), or the --json report. It returns the run's error: the
// file's own error for a single file, "N of M files failed", or the error
// that stopped the run.
func Run(ctx context.Context, opts *Options) error {
	c := opts.Config
	single := c.Spool == "" && len(c.Files) == 1
	if !opts.JSON {
		c.OnFile = func(r upload.FileResult) {
			if single && r.Status == upload.Failed {
				return // main prints the error
			}
			fmt.Fprintln(opts.Out, FileLine(r))
		}
	}
	if opts.Progress {
		c.Progress = progressBar(opts.ErrOut)
	}
	rep, err := upload.Run(ctx, c)
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else if !single && (err == nil || len(rep.Files) > 0) {
		fmt.Fprintln(opts.Out, Summary(rep))
	}
	return err
}

// progressBar draws one bar per large file on w.
func progressBar(w io.Writer) func(string, int64) (func(int64), func()) {
	return func(file string, size int64) (func(int64), func()) {
		if size < ProgressMinBytes {
			return nil, nil
		}
		bar := progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(filepath.Base(file)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		var mu sync.Mutex
		update := func(sent int64) {
			mu.Lock()
			defer mu.Unlock()
			_ = bar.Set64(sent)
		}
		done := func() {
			mu.Lock()
			defer mu.Unlock()
			_ = bar.Clear()
			_ = bar.Exit()
		}
		return update, done
	}
}

// FileLine is the one output line of a file.
func FileLine(r upload.FileResult) string {
	switch r.Status {
	case upload.Uploaded, upload.AlreadyUploaded:
		status := "uploaded"
		if r.Status == upload.AlreadyUploaded {
			status = "already uploaded"
		}
		s := fmt.Sprintf("%-16s %s -> %s  %d bytes", status, r.File, r.Key, r.Size)
		if r.Gzipped {
			s += ", gzipped"
		}
		if r.Multipart {
			s += fmt.Sprintf(", %d parts", r.Parts)
		}
		switch {
		case r.MovedTo != "":
			s += "; moved to " + r.MovedTo
		case r.Deleted:
			s += "; deleted"
		}
		return s
	}
	msg := r.Error
	if !strings.HasPrefix(msg, r.File+":") {
		msg = r.File + ": " + msg // validation errors start with the file already
	}
	return fmt.Sprintf("%-16s %s", "failed", msg)
}

// Summary is the last output line of a spool run or a run over several
// files.
func Summary(rep *upload.Report) string {
	if len(rep.Files) == 0 && rep.Spool != "" {
		return "nothing to upload in " + rep.Spool
	}
	s := fmt.Sprintf("%d uploaded (%d bytes), %d already uploaded, %d failed to %s in %.1fs",
		rep.Uploaded, rep.Bytes, rep.AlreadyUploaded, rep.Failed, rep.Landing, rep.Seconds)
	if rep.Stopped {
		s += "; stopped early, the remaining files wait for the next run"
	}
	return s
}
