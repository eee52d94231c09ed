// Package commands assembles the timelake command tree and maps the final
// error of a run to a documented exit code (docs/exit-codes.md): usage
// errors are recognised by type (cmdutil.IsUsage), never by their text.
package commands

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	envcheckcmd "github.com/timelake/timelake/internal/commands/envcheck"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	landingcmd "github.com/timelake/timelake/internal/commands/landing"
	servecmd "github.com/timelake/timelake/internal/commands/serve"
	tablescmd "github.com/timelake/timelake/internal/commands/tables"
	uploadcmd "github.com/timelake/timelake/internal/commands/upload"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// NewRootCmd builds the command tree around f.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command { return newRootCmd(f, nil) }

// newRootCmd builds the command tree; stub, when not nil, replaces the run
// function of every command and receives its resolved *Options (tests of
// command lines: every flag parsed, every setting resolved, nothing run).
func newRootCmd(f *cmdutil.Factory, stub func(context.Context, any) error) *cobra.Command {
	root := &cobra.Command{
		Use:   "timelake",
		Short: "Load files from field gateways into Apache Iceberg tables on S3-compatible storage",
		Long: `timelake turns CSV and Parquet files that field gateways drop into a landing
bucket into Apache Iceberg tables on S3-compatible storage (Tigris, AWS S3,
MinIO) or a local folder. Run "timelake ingest" from cron every minute, or
"timelake serve" to load files seconds after they land.`,
		Version:       build.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	settings.Bind(root.PersistentFlags(), settings.Global)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := f.ResolveGlobals(cmd); err != nil {
			return err
		}
		if !cmdutil.HasAnnotation(cmd, cmdutil.AnnotationReportsEnvFile) {
			f.WarnEnvironment()
		}
		if !cmdutil.HasAnnotation(cmd, cmdutil.AnnotationShowsLocations) {
			return f.CheckLocations(cmd)
		}
		return nil
	}
	root.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	var env *envcheckcmd.RunFuncs
	if stub != nil {
		env = &envcheckcmd.RunFuncs{Check: cmdutil.Adapt[envcheckcmd.CheckOptions](stub), Show: cmdutil.Adapt[envcheckcmd.ShowOptions](stub)}
	}
	root.AddCommand(ingestcmd.NewCmdIngest(f, cmdutil.Adapt[ingestcmd.Options](stub)))
	root.AddCommand(servecmd.NewCmdServe(f, cmdutil.Adapt[servecmd.Options](stub)))
	root.AddCommand(uploadcmd.NewCmdUpload(f, cmdutil.Adapt[uploadcmd.Options](stub)))
	root.AddCommand(envcheckcmd.NewCmdEnv(f, env))
	root.AddCommand(tablescmd.NewCmdTables(f, stub))
	root.AddCommand(landingcmd.NewCmdLanding(f, stub))
	root.InitDefaultCompletionCmd()
	cmdutil.TypeUsageErrors(root)
	return root
}

// Main runs timelake with args (without the program name) and returns the
// exit code. The first SIGINT or SIGTERM cancels the run, which stops
// cleanly (serve finishes the files being loaded and releases its lease);
// see stopOnSignals for the signals after it.
func Main(args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go stopOnSignals(sigs, cancel, time.Now, func(sig os.Signal) {
		// The signal's default action, now that it is no longer caught.
		signal.Stop(sigs)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Signal(sig)
		}
	})
	return execute(ctx, args, &cmdutil.Factory{IO: ios, Getenv: getenv, Environ: os.Environ})
}

// RepeatedSignal is how long after the first stop signal a signal is
// taken for the same stop: timeout(1) sends its SIGTERM both to the
// process and to its process group, and a shell's Ctrl-C may reach a
// process both ways, so one stop often arrives twice within microseconds.
const RepeatedSignal = time.Second

// stopOnSignals reads sigs until it is closed: the first signal calls
// cancel (the graceful stop), signals within RepeatedSignal of it are the
// same stop, and the first one after that is handed to kill (the process
// ends at once, as a second Ctrl-C is meant to).
func stopOnSignals(sigs <-chan os.Signal, cancel func(), now func() time.Time, kill func(os.Signal)) {
	var first time.Time
	for sig := range sigs {
		switch {
		case first.IsZero():
			first = now()
			cancel()
		case now().Sub(first) >= RepeatedSignal:
			kill(sig)
			return
		}
	}
}

// Execute is Main with a caller-supplied context (tests); no variable of
// the process environment is reported unknown (getenv cannot list them).
func Execute(ctx context.Context, args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	return execute(ctx, args, &cmdutil.Factory{IO: ios, Getenv: getenv})
}

// ExecuteEnviron is Execute with the process environment given as a list
// of KEY=value (as os.Environ), whose unknown TIMELAKE_* variables are
// reported.
func ExecuteEnviron(ctx context.Context, args []string, ios *iostreams.IOStreams, environ []string) cmdutil.ExitCode {
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	getenv := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	return execute(ctx, args, &cmdutil.Factory{IO: ios, Getenv: getenv, Environ: func() []string { return environ }})
}

func execute(ctx context.Context, args []string, f *cmdutil.Factory) cmdutil.ExitCode {
	ios := f.IO
	root := NewRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	var silent *cmdutil.SilentError
	if cmd != nil && fixHint(err) == "" && !cmdutil.IsUsage(err) && !errors.As(err, &silent) && !errors.Is(err, cmdutil.ErrPartial) &&
		!errors.Is(err, landing.ErrLeaseHeld) && ctx.Err() == nil {
		// A store's setup problem that the command did not word itself
		// still gets the reason and fix env check gives.
		if p := storage.Diagnose(err, storage.Where{}, f.StorageNames(cmd)); p != nil {
			err = p
		}
	}
	code := exitCode(ctx, err)
	switch {
	case errors.As(err, &silent), errors.Is(err, cmdutil.ErrPartial):
		// Already reported on stdout.
	default:
		w := ios.ErrOut
		if cmd != nil && cmdutil.HasAnnotation(cmd, cmdutil.AnnotationTimedErrors) && !ios.IsStderrTTY() {
			w = iostreams.NewTimedWriter(w, nil)
		}
		iostreams.Fprintln(w, "Error:", err)
		if fix := fixHint(err); fix != "" {
			iostreams.Fprintln(w, "Fix:", fix)
		}
		if cmdutil.IsUsage(err) && cmd != nil {
			iostreams.Fprintf(w, "Try: %s --help\n", cmd.CommandPath())
		}
	}
	// --json is read again: a flag error may stop cobra before the
	// globals are resolved.
	if code != cmdutil.ExitBusy && (f.JSON || (cmd != nil && settings.JSON.Get(settings.NewResolver(cmd.Flags(), nil)))) {
		doc := map[string]any{"message_type": "exit_error", "code": int(code), "message": err.Error()}
		if fix := fixHint(err); fix != "" {
			doc["fix"] = fix
		}
		_ = iostreams.WriteJSON(ios.ErrOut, doc, false)
	}
	return code
}

// fixHint is the fix an error carries (a storage.Problem: what env check
// would say to do), or "".
func fixHint(err error) string {
	var h interface{ FixHint() string }
	if errors.As(err, &h) {
		return h.FixHint()
	}
	return ""
}

func exitCode(ctx context.Context, err error) cmdutil.ExitCode {
	var silent *cmdutil.SilentError
	switch {
	case errors.As(err, &silent):
		return silent.Code
	case cmdutil.IsUsage(err):
		return cmdutil.ExitUsage
	case errors.Is(err, cmdutil.ErrPartial):
		return cmdutil.ExitPartial
	case errors.Is(err, landing.ErrLeaseHeld):
		return cmdutil.ExitLeaseHeld
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return cmdutil.ExitCancelled
	}
	return cmdutil.ExitFailed
}
