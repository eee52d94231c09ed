// Package landing is the `timelake landing` command group: the quarantined
// files of the landing bucket, and putting them back once what refused them
// is fixed (docs/schema.md, "A gateway changed its format").
//
// Each subcommand has an Options struct, a NewCmdX(f, runF) constructor and
// a plain RunX(ctx, opts) function; output goes through internal/iostreams
// (a table, or one JSON document with --json).
package landing

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// NewCmdLanding builds the `landing` group. runF, when not nil, replaces
// the run function of every subcommand and receives its *XOptions (tests
// of flag parsing); nil means the real run functions.
func NewCmdLanding(f *cmdutil.Factory, runF func(context.Context, any) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "landing",
		Short: "Show the quarantined files of the landing bucket, and put them back to be loaded again",
		Long: `Files that ingest cannot load are moved to the quarantine prefix of the
landing bucket (--quarantine-prefix, _rejected/ by default) with a JSON report
beside each. "landing rejected" lists them with their reasons; once the cause
is fixed (a setting such as --csv-delimiter or --evolve, a type given with
--column), "landing requeue" puts them back under their original keys, and
the next ingest run loads them.`,
		Example: `  timelake landing rejected --env-file timelake.env
  timelake landing requeue --all
  timelake landing requeue gateway-7/20260105T1000.csv --json`,
		Args: cobra.NoArgs,
	}
	settings.Bind(cmd.PersistentFlags(), settings.LandingGroup)
	cmd.AddCommand(
		NewCmdRejected(f, cmdutil.Adapt[RejectedOptions](runF)),
		NewCmdRequeue(f, cmdutil.Adapt[RequeueOptions](runF)),
	)
	return cmd
}

// Output is where and how a subcommand prints.
type Output struct {
	IO   *iostreams.IOStreams
	JSON bool // --json
}

// Landing is the landing bucket a subcommand works on.
type Landing struct {
	Bucket *landing.Bucket
	// Explain words the setup errors of the store (storage.Diagnose).
	Explain func(error) error
}

func (l Landing) explain(err error) error {
	if l.Explain == nil || err == nil {
		return err
	}
	return l.Explain(err)
}

// openLanding resolves --landing and --quarantine-prefix and opens the
// store (no request is sent).
func openLanding(cmd *cobra.Command, f *cmdutil.Factory) (Landing, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return Landing{}, err
	}
	loc := settings.Landing.Require(r)
	prefix := settings.QuarantinePrefix.Get(r)
	if err := r.Err(); err != nil {
		return Landing{}, err
	}
	st, err := f.OpenStore(cmd.Context(), cmd, loc)
	if err != nil {
		return Landing{}, err
	}
	what := "landing folder"
	if loc.IsS3() {
		what = "landing bucket"
	}
	where, names := f.Where(cmd, &settings.Landing.Spec, what, loc), f.StorageNames(cmd)
	return Landing{Bucket: &landing.Bucket{Store: st, QuarantinePrefix: prefix},
		Explain: func(err error) error { return storage.Explain(err, where, names) }}, nil
}

// run calls runF when set, else run.
func run[T any](ctx context.Context, opts *T, runF func(context.Context, *T) error, run func(context.Context, *T) error) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}

// Times: RFC 3339 in UTC with milliseconds in pipes and JSON, seconds on a
// terminal (the header says UTC).
const (
	machineTime  = "2006-01-02T15:04:05.000Z07:00"
	terminalTime = "2006-01-02 15:04:05"
)

func formatTime(t time.Time, tty bool) string {
	if tty {
		return t.UTC().Format(terminalTime)
	}
	return t.UTC().Format(machineTime)
}

// errSomeNotRequeued is the error of a requeue that left files in
// quarantine (exit 3, after the report was printed).
var errSomeNotRequeued = errors.New("some files were not requeued")

// noFiles says that the quarantine holds nothing.
func noFiles(b *landing.Bucket) string {
	p := b.QuarantinePrefix
	if p == "" {
		p = landing.DefaultQuarantinePrefix
	}
	return iostreams.Sprintf("no quarantined files in %s/%s\n", strings.TrimSuffix(b.Store.URI(), "/"), p)
}
