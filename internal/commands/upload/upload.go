// Package upload is the `timelake upload` command: the gateway side, which
// puts files into the landing bucket under keys that are unique per file and
// stable across retries.
package upload

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/tablename"
	"github.com/timelake/timelake/internal/upload"
)

// ProgressMinBytes is the file size from which a progress bar is shown on a
// terminal (smaller files go up in well under a second on most links).
const ProgressMinBytes = 4 << 20

// Options are the resolved inputs of one upload command.
type Options struct {
	Config upload.Config
	IO     *iostreams.IOStreams // file lines and summary or the --json document on Out; progress bars on ErrOut
	JSON   bool
	// Progress shows progress bars on ErrOut (it is a terminal) for files of
	// at least ProgressMinBytes.
	Progress bool
	// Rules, when set, loads the poller's rules validation applies (an
	// exported profile, or the table's) before the first file; nil keeps
	// Config.Rules.
	Rules func() (*upload.Rules, error)
}

// NewCmdUpload builds the command; table reads a table's rules for
// --validate (nil in the gateway binary). runF replaces Run in tests of
// flag parsing; nil means Run.
func NewCmdUpload(f *cmdutil.Factory, runF func(context.Context, *Options) error, table TableRules) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upload [file...]",
		Short: "Put files into the landing bucket under unique, retry-stable keys",
		Long: `Upload CSV, TSV, JSON (optionally gzipped) or Parquet files to the landing bucket,
from a gateway. Each file gets the key <gateway>/<UTC time>-<hash>.<ext>, e.g.
gateway-7/20260105T100000Z-1a2b3c4d.csv, from its modification time and the
first 8 hex digits of its SHA-256, so the same file always gets the same key.

An object is never overwritten (conditional put, If-None-Match: *): a key that
holds the same content is reported as already uploaded, a key that holds
different content is refused. Each file is checked locally (--validate) before
anything is sent, and its SHA-256 travels with it, so the server rejects a
corrupted body. Large files go up as multipart uploads. Given the poller's
routes (--route), a file is checked with the rules of the route that takes
its key, and a key no route takes is refused.

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
			opts, err := resolve(cmd, f, args, table)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return f.ExplainLanding(cmd, Run(cmd.Context(), opts))
		},
	}
	settings.Bind(cmd.Flags(), settings.Upload)
	return cmd
}

func resolve(cmd *cobra.Command, f *cmdutil.Factory, args []string, table TableRules) (*Options, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	c := upload.Config{Files: args}
	flagSet := cmd.Flags().Changed

	// Files on the command line win over a spool folder from the
	// environment; both on the command line is a usage error.
	if len(args) == 0 {
		c.Spool = settings.Spool.Get(r)
	} else if flagSet(settings.Spool.Flag) {
		return nil, cmdutil.UsageErrorf("pass files or --spool, not both")
	}
	if len(args) == 0 && c.Spool == "" {
		return nil, cmdutil.UsageErrorf("nothing to upload: pass files, or --spool DIR (or set %s)", strings.Join(settings.Spool.Env, " or "))
	}
	if c.Spool != "" {
		c.Done = settings.SpoolDone.Get(r)
		if c.Done != "" && filepath.Clean(c.Done) == filepath.Clean(c.Spool) {
			return nil, cmdutil.UsageErrorf("--done must be another folder than --spool")
		}
		c.MinAge = settings.SpoolMinAge.Get(r)
		c.OpenEndMinAge = settings.SpoolOpenEndMinAge.Get(r)
	} else if flagSet(settings.SpoolDone.Flag) || flagSet(settings.SpoolMinAge.Flag) || flagSet(settings.SpoolOpenEndMinAge.Flag) {
		return nil, cmdutil.UsageErrorf("--done, --min-age and --open-end-min-age only apply with --spool")
	}

	if c.Key = settings.Key.Get(r); c.Key != "" {
		if c.Spool != "" || len(args) != 1 {
			return nil, cmdutil.UsageErrorf("--key names the object of exactly one file (not with --spool)")
		}
	} else {
		c.Gateway = settings.Gateway.Require(r)
	}
	c.Prefix = settings.UploadPrefix.Get(r)
	c.Time = settings.UploadTime.Get(r)
	c.Gzip = settings.Gzip.Get(r)
	c.Parallel = settings.UploadParallel.Get(r)
	c.Validate = settings.Validate.Get(r)
	c.ValidateOptions.CSV = settings.CSVOf(r)
	validateSettings(r, &c.ValidateOptions)
	routes, err := cmdutil.RoutesNotTable(r)
	if err != nil {
		return nil, err
	}
	profileFile, warehouse, tableName := settings.ProfileFile.Get(r), settings.Warehouse.Get(r), settings.Table.Get(r)
	loc := settings.Landing.Require(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := checkValidateSettings(c.ValidateOptions); err != nil {
		return nil, err
	}
	var loadRules func() (*upload.Rules, error)
	tableRules := func(name tablename.Name) (*upload.Rules, error) {
		return rules(cmd, f, table, profileFile, warehouse, name)
	}
	switch {
	case !c.Validate:
	case len(routes) > 0:
		if c.RulesFor, err = routedRules(r, routes, c.ValidateOptions, tableRules); err != nil {
			return nil, err
		}
	default:
		loadRules = func() (*upload.Rules, error) { return tableRules(tableName) }
	}
	// Building the client reads configuration only: no request is sent
	// before the first file is validated.
	if c.Store, err = f.OpenStore(cmd.Context(), cmd, loc); err != nil {
		return nil, err
	}
	return &Options{Config: c, IO: f.IO, JSON: f.JSON, Progress: f.IO.IsStderrTTY(), Rules: loadRules}, nil
}

// validateSettings sets the settings of o that a route's options may set
// as well (settings.RouteOptions) from r; errors are recorded in r.
func validateSettings(r *settings.Resolver, o *upload.ValidateOptions) {
	o.TimeColumn = settings.TimeColumn.Get(r)
	o.TimeUnit = settings.TimeUnit.Get(r)
	o.AssumeLocation = settings.AssumeTimezone.Get(r)
	o.Columns = settings.Columns.Get(r)
	o.OnError = settings.OnError.Get(r)
	o.MaxBadRows = settings.MaxBadRows.Get(r)
}

// checkValidateSettings refuses validation settings that do not go
// together (a usage error).
func checkValidateSettings(o upload.ValidateOptions) error {
	if err := decode.CheckTimeColumnType(o.TimeColumn, o.Columns); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	return nil
}

// routedRules returns upload.Config.RulesFor with routes: a key is
// validated with the rules of the table its route names (tableRules, read
// once per table) and the options of that route over base, the run's
// (docs/routing.md, "Table defaults per route"), as ingest reads it. A
// key no route takes is refused as ingest reports it. Errors: a route
// whose options do not go together (a usage error naming it).
func routedRules(r *settings.Resolver, routes route.Routes, base upload.ValidateOptions, tableRules func(tablename.Name) (*upload.Rules, error)) (func(context.Context, string) (*upload.Rules, upload.ValidateOptions, error), error) {
	byRoute, err := cmdutil.RouteResolvers(r, routes, base, validateSettings, checkValidateSettings)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	read := map[tablename.Name]*upload.Rules{}
	return func(_ context.Context, key string) (*upload.Rules, upload.ValidateOptions, error) {
		t, rt, err := routes.Table(key)
		if err != nil {
			return nil, base, &decode.FileError{Reason: err.Error()} // it names the key; upload names the file
		}
		opts := base
		if rr := byRoute[rt.String()]; rr != nil {
			validateSettings(rr, &opts) // read without error above
		}
		mu.Lock()
		defer mu.Unlock()
		rules, ok := read[t]
		if !ok {
			if rules, err = tableRules(t); err != nil {
				return nil, opts, err
			}
			read[t] = rules
		}
		return rules, opts, nil
	}, nil
}

// TableRules reads the rules of table name in warehouse that --validate
// applies (its schema, source profiles and load properties; nil, nil for a
// table that does not exist yet): lakecmd.UploadRules in timelake. The
// gateway binary reads no table and has none: it validates with
// --profile-file's rules (an exported profile), or with none.
type TableRules func(ctx context.Context, cmd *cobra.Command, f *cmdutil.Factory, warehouse string, name tablename.Name) (*upload.Rules, error)

// rules are the poller's rules validation applies: an exported profile's
// (profileFile), else the table's when the warehouse and the table are
// set and table reads them, else none. Errors: the file does not read (a
// usage error), the table cannot be loaded.
func rules(cmd *cobra.Command, f *cmdutil.Factory, table TableRules, profileFile, warehouse string, name tablename.Name) (*upload.Rules, error) {
	switch {
	case profileFile != "":
		exp, p, target, err := profile.ReadExport(profileFile)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--profile-file %v", err)
		}
		return &upload.Rules{Target: target, TimeColumn: exp.TimeColumn, Exported: p,
			ExportedFrom: iostreams.Sprintf("%s at %s", profileFile, exp.ExportedAt.UTC().Format(time.RFC3339))}, nil
	case warehouse == "" || name == (tablename.Name{}):
		return nil, nil
	case table == nil:
		f.Logger().Warn("timelake-gateway reads no table: files are validated without the table's schema and profiles",
			"table", name.String(), "fix", "export them with timelake and pass --profile-file (docs/gateways.md)")
		return nil, nil
	}
	return table(cmd.Context(), cmd, f, warehouse, name)
}

// Run uploads and prints one line per file (and a summary for a spool or
// several files), or the --json report. It returns the run's error: the
// file's own error for a single file, "N of M files failed", or the error
// that stopped the run.
func Run(ctx context.Context, opts *Options) error {
	c := opts.Config
	if opts.Rules != nil {
		var err error
		if c.Rules, err = opts.Rules(); err != nil {
			return err
		}
	}
	single := c.Spool == "" && len(c.Files) == 1
	if !opts.JSON {
		c.OnFile = func(r upload.FileResult) {
			if single && r.Status == upload.Failed {
				return // main prints the error
			}
			iostreams.Fprintln(opts.IO.Out, FileLine(r))
		}
	}
	if opts.Progress {
		c.Progress = progressBar(opts.IO.ErrOut)
	}
	rep, err := upload.Run(ctx, c)
	if opts.JSON {
		if jerr := opts.IO.PrintJSON(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else if !single && (err == nil || len(rep.Files) > 0) {
		iostreams.Fprintln(opts.IO.Out, Summary(rep))
	}
	if errors.Is(err, upload.ErrRejected) {
		return &rejected{err} // reported above: exit 3
	}
	return err
}

// rejected is a spool run that moved files to the rejected folder and
// uploaded the others: partial (exit 3), already reported on stdout.
type rejected struct{ err error }

func (e *rejected) Error() string   { return e.err.Error() }
func (e *rejected) Unwrap() []error { return []error{cmdutil.ErrPartial, e.err} }

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
		s := iostreams.Sprintf("%-16s %s -> %s  %d bytes", status, r.File, r.Key, r.Size)
		if r.Gzipped {
			s += ", gzipped"
		}
		if r.Multipart {
			s += iostreams.Sprintf(", %d parts", r.Parts)
		}
		switch {
		case r.MovedTo != "":
			s += "; moved to " + r.MovedTo
		case r.Deleted:
			s += "; deleted"
		}
		if r.Reason != "" { // its end open, uploaded as it is
			s += "; " + r.Reason
		}
		return s + setAsideNote(r)
	}
	if r.Status == upload.Waiting {
		return iostreams.Sprintf("%-16s %s  %s; a later run uploads it", "waiting", r.File, r.Reason)
	}
	msg := r.Error
	if !strings.HasPrefix(msg, r.File+":") {
		msg = r.File + ": " + msg // validation errors start with the file already
	}
	if r.Status == upload.Rejected {
		return iostreams.Sprintf("%-16s %s -> %s", "rejected", msg, r.RejectedTo)
	}
	return iostreams.Sprintf("%-16s %s", "failed", msg)
}

// setAsideNote says which rows validation found that ingest sets aside
// when it reads the file with on-error skip-rows (the gateway's flag, or
// the profile's setting, is what validation assumed; ingest reads the file
// with its own flags and the table's properties): their number and the
// first one's reason.
func setAsideNote(r upload.FileResult) string {
	if r.RowsSetAside == 0 || len(r.SetAside) == 0 {
		return ""
	}
	first := r.SetAside[0]
	rows := "rows"
	if r.RowsSetAside == 1 {
		rows = "row"
	}
	at := iostreams.Sprintf("row %d", first.Row)
	if first.Column != "" {
		at += iostreams.Sprintf(", column %q", first.Column)
	}
	if r.SampledRows > 0 {
		rows += iostreams.Sprintf(" of the first %d checked", r.SampledRows)
	}
	return iostreams.Sprintf("; %d %s ingest sets aside if it reads the file with on-error skip-rows (it quarantines the file otherwise), the first %s: %s",
		r.RowsSetAside, rows, at, first.Reason)
}

// Summary is the last output line of a spool run or a run over several
// files.
func Summary(rep *upload.Report) string {
	if len(rep.Files) == 0 && rep.Spool != "" {
		return "nothing to upload in " + rep.Spool
	}
	s := iostreams.Sprintf("%d uploaded (%d bytes), %d already uploaded, %d failed to %s in %.1fs",
		rep.Uploaded, rep.Bytes, rep.AlreadyUploaded, rep.Failed, rep.Landing, rep.Seconds)
	if rep.Rejected > 0 {
		s += iostreams.Sprintf("; %d rejected to %s (see the .error.json reports)", rep.Rejected, filepath.Dir(rejectedTo(rep)))
	}
	if rep.Waiting > 0 {
		s += "; " + waitingNote(rep)
	}
	if rep.Stopped {
		s += "; stopped early, the remaining files wait for the next run"
	}
	return s
}

// waitingNote counts the files waiting to be complete by the setting
// they wait for: their age (--min-age) or their end (--open-end-min-age).
func waitingNote(rep *upload.Report) string {
	openEnd := 0
	for _, f := range rep.Files {
		if f.Status == upload.Waiting && f.OpenEnd {
			openEnd++
		}
	}
	switch byAge := rep.Waiting - openEnd; {
	case openEnd == 0:
		return iostreams.Sprintf("%d waiting to be complete (--min-age)", rep.Waiting)
	case byAge <= 0:
		return iostreams.Sprintf("%d waiting to be complete (--open-end-min-age)", rep.Waiting)
	default:
		return iostreams.Sprintf("%d waiting to be complete (%d --min-age, %d --open-end-min-age)", rep.Waiting, byAge, openEnd)
	}
}

// rejectedTo is where the first rejected file went.
func rejectedTo(rep *upload.Report) string {
	for _, f := range rep.Files {
		if f.RejectedTo != "" {
			return f.RejectedTo
		}
	}
	return ""
}
