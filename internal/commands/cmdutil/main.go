package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// PrepareRoot makes root a timelake root command around f: its output
// streams, the global flags, and the checks before every command (the
// globals, unknown variables, the kinds of the locations).
func PrepareRoot(root *cobra.Command, f *Factory) {
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	settings.Bind(root.PersistentFlags(), settings.Global)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := f.ResolveGlobals(cmd); err != nil {
			return err
		}
		if !HasAnnotation(cmd, AnnotationReportsEnvFile) {
			f.WarnEnvironment()
		}
		if !HasAnnotation(cmd, AnnotationShowsLocations) {
			return f.CheckLocations(cmd)
		}
		return nil
	}
	root.SetFlagErrorFunc(FlagErrorFunc)
}

// FinishRoot adds the completion command and types the usage errors of
// root's tree, once its commands are added.
func FinishRoot(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	TypeUsageErrors(root)
}

// Main runs the command tree newRoot builds with args (without the
// program name) and returns the exit code. The first SIGINT or SIGTERM cancels the run, which stops
// cleanly (serve finishes the files being loaded and releases its lease);
// see stopOnSignals for the signals after it.
func Main(args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool), newRoot func(*Factory) *cobra.Command) ExitCode {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	// The signals stay caught after the run returns, until the process
	// exits: the second of a doubled stop signal may come once the stop
	// is over, and must not end the process by the signal's default
	// action (which would turn its exit code into a kill).
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go stopOnSignals(sigs, cancel, time.Now, func(sig os.Signal) {
		// The signal's default action, now that it is no longer caught.
		signal.Stop(sigs)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Signal(sig)
		}
	})
	return Execute(ctx, &Factory{IO: ios, Getenv: getenv, Environ: os.Environ}, args, newRoot)
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

// ExecuteEnviron runs the tree newRoot builds with the process
// environment given as a list of KEY=value (as os.Environ), whose unknown
// TIMELAKE_* variables are reported (tests).
func ExecuteEnviron(ctx context.Context, args []string, ios *iostreams.IOStreams, environ []string, newRoot func(*Factory) *cobra.Command) ExitCode {
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	getenv := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	return Execute(ctx, &Factory{IO: ios, Getenv: getenv, Environ: func() []string { return environ }}, args, newRoot)
}

// Execute runs the tree newRoot builds around f with args under ctx,
// prints the final error (with its fix, and as JSON with --json) and
// returns the exit code (docs/exit-codes.md).
func Execute(ctx context.Context, f *Factory, args []string, newRoot func(*Factory) *cobra.Command) ExitCode {
	ios := f.IO
	root := newRoot(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var silent *SilentError
	if cmd != nil && fixHint(err) == "" && !IsUsage(err) && !errors.As(err, &silent) && !errors.Is(err, ErrPartial) &&
		!errors.Is(err, landing.ErrLeaseHeld) && ctx.Err() == nil {
		// A store's setup problem that the command did not word itself
		// still gets the reason and fix env check gives.
		if p := storage.Diagnose(err, storage.Where{}, f.StorageNames(cmd)); p != nil {
			err = p
		}
	}
	var missing *settings.MissingError
	if errors.As(err, &missing) {
		// A variable set under a misspelled name (LANDING_BUCKT) is the
		// likeliest reason; the error names it with the one meant.
		missing.NoteMisspelled(f.UnknownVariables())
	}
	var problem *storage.Problem
	if errors.As(err, &problem) {
		// A store's setup problem (no credentials, the wrong endpoint):
		// a misspelled AWS_* variable is the first thing to fix.
		problem.Fix = renameMisspelledAWS(f.UnknownVariables(), problem.Fix)
	}
	code := exitCode(ctx, err)
	var interrupted *InterruptedError
	if code == ExitCancelled && !errors.As(err, &interrupted) {
		// One line that says the stop was asked for, not the cancelled
		// request it cut short.
		err = &InterruptedError{Left: interruptedLeft, Err: err}
	}
	switch {
	case errors.As(err, &silent), errors.Is(err, ErrPartial):
		// Already reported on stdout.
	default:
		w := ios.ErrOut
		if cmd != nil && HasAnnotation(cmd, AnnotationTimedErrors) && !ios.IsStderrTTY() {
			w = iostreams.NewTimedWriter(w, nil)
		}
		iostreams.Fprintln(w, "Error:", err)
		if fix := fixHint(err); fix != "" {
			iostreams.Fprintln(w, "Fix:", fix)
		}
		if IsUsage(err) && cmd != nil {
			iostreams.Fprintf(w, "Try: %s --help\n", cmd.CommandPath())
		}
	}
	// --json is read again: a flag error may stop cobra before the
	// globals are resolved.
	if code != ExitBusy && (f.JSON || (cmd != nil && settings.JSON.Get(settings.NewResolver(cmd.Flags(), nil)))) {
		doc := map[string]any{"message_type": "exit_error", "code": int(code), "message": err.Error()}
		if errors.As(err, &interrupted) && interrupted.Err != nil {
			doc["cause"] = interrupted.Err.Error()
		}
		if fix := fixHint(err); fix != "" {
			doc["fix"] = fix
		}
		_ = iostreams.WriteJSON(ios.ErrOut, doc, false)
	}
	return code
}

// renameMisspelledAWS puts before fix the renaming of each AWS_* variable
// set under a misspelled name: "rename AWS_SECRET_ACCES_KEY (env file) to
// AWS_SECRET_ACCESS_KEY; set AWS_ACCESS_KEY_ID ...".
func renameMisspelledAWS(unknown []settings.UnknownVariable, fix string) string {
	var renames []string
	for _, u := range unknown {
		if !strings.HasPrefix(u.Name, settings.VariablePrefix) && strings.HasPrefix(u.Meant, "AWS_") {
			renames = append(renames, fmt.Sprintf("rename %s (%s) to %s", u.Name, u.Source, u.Meant))
		}
	}
	if len(renames) == 0 {
		return fix
	}
	if fix == "" {
		return strings.Join(renames, "; ")
	}
	return strings.Join(renames, "; ") + "; " + fix
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

// ExitCodeOf is the exit code err would end the command with (nil:
// ExitOK); ctx is the command's, whose end makes any error ExitCancelled.
// A command that does several things (ingest of routed tables) ends with
// the worst of theirs.
func ExitCodeOf(ctx context.Context, err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	return exitCode(ctx, err)
}

func exitCode(ctx context.Context, err error) ExitCode {
	var silent *SilentError
	switch {
	case errors.As(err, &silent):
		return silent.Code
	case IsUsage(err):
		return ExitUsage
	case errors.Is(err, ErrPartial):
		return ExitPartial
	case errors.Is(err, landing.ErrLeaseHeld):
		return ExitLeaseHeld
	case errors.As(err, new(*InterruptedError)), ctx.Err() != nil:
		// A failure after the stop was asked for is the stop's doing (a
		// request it cut short), whatever the error says.
		return ExitCancelled
	}
	return ExitFailed
}
