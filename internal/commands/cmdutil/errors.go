package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/settings"
)

// ExitCode is the process exit status, a documented contract
// (docs/exit-codes.md).
type ExitCode int

// Exit codes.
const (
	ExitOK        ExitCode = 0   // everything done
	ExitFailed    ExitCode = 1   // the command failed
	ExitUsage     ExitCode = 2   // bad flags, arguments or settings
	ExitPartial   ExitCode = 3   // ingest: some files were quarantined, the rest loaded
	ExitNotLoaded ExitCode = 4   // tables batch: the batch id is not in the current ancestry
	ExitLeaseHeld ExitCode = 11  // ingest: another run (a serve, or on an overlapping prefix) holds the table's lease
	ExitBusy      ExitCode = 12  // ingest: the previous run of this poller is still working
	ExitCancelled ExitCode = 130 // interrupted (SIGINT/SIGTERM)
)

// UsageError is a usage error: a bad flag, argument, subcommand or
// setting. main prints it with a hint to run --help and exits with
// ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf builds a UsageError.
func UsageErrorf(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// IsUsage reports whether err is a usage error: a *UsageError, or a bad or
// missing setting (settings.IsUsage).
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue) || settings.IsUsage(err)
}

// ErrPartial is returned by ingest after it reported a run in which some
// files were quarantined (ExitPartial).
var ErrPartial = errors.New("some files were quarantined")

// InterruptedError is a command stopped by SIGINT or SIGTERM (its context
// cancelled): main prints "interrupted: " and Left, what the stop left and
// what to do, as the one line of the stop (ExitCancelled). Err is the
// error the stop cut the work short with (in the JSON exit error).
type InterruptedError struct {
	Left string
	Err  error
}

func (e *InterruptedError) Error() string { return "interrupted: " + e.Left }
func (e *InterruptedError) Unwrap() error { return e.Err }

// interruptedLeft is what a stopped command that does not say more
// leaves: every change timelake makes commits whole or not at all.
const interruptedLeft = "nothing was left half done: run the command again to finish"

// SilentError carries an exit code for a failure already reported on
// stdout; main prints nothing more.
type SilentError struct {
	Code ExitCode
	Err  error
}

func (e *SilentError) Error() string { return e.Err.Error() }
func (e *SilentError) Unwrap() error { return e.Err }

// FlagErrorFunc is the root's cobra flag error function: every flag error
// (unknown flag, missing value, a value the setting's kind refuses) is a
// UsageError; a refused value keeps the setting's own message, and an
// unknown flag names the flag meant (cobra suggests only subcommands).
func FlagErrorFunc(cmd *cobra.Command, err error) error {
	var ve *settings.ValueError
	if errors.As(err, &ve) {
		return &UsageError{Err: ve}
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if hint := flagSuggestion(cmd, ne); hint != "" {
			return &UsageError{Err: fmt.Errorf("%w; %s", err, hint)}
		}
	}
	return &UsageError{Err: err}
}

// flagSuggestion names the flag an unknown one most likely stands for: a
// flag of cmd within two edits (Levenshtein distance; one for a name of up
// to five letters) or that the name starts, the long flag of a name given
// with one dash (-json: --json), or the commands that have a flag of that
// name; "" when there is none.
func flagSuggestion(cmd *cobra.Command, ne *pflag.NotExistError) string {
	name := ne.GetSpecifiedName()
	if group := ne.GetSpecifiedShortnames(); group != "" {
		if cmd.Flags().Lookup(group) != nil {
			return "did you mean --" + group + "?"
		}
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	best, bestDist := "", min(3, len(name)/3+1)
	var starting []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		if d := levenshtein.ComputeDistance(name, fl.Name); d < bestDist {
			best, bestDist = fl.Name, d
		}
		if len(name) >= 3 && strings.HasPrefix(fl.Name, name) {
			starting = append(starting, fl.Name)
		}
	})
	if best == "" && len(starting) == 1 {
		best = starting[0]
	}
	if best != "" {
		return "did you mean --" + best + "?"
	}
	var owners []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
			owners = append(owners, c.CommandPath())
			return // its subcommands inherit it
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root())
	if len(owners) > 0 {
		return "--" + name + " is a flag of " + strings.Join(owners, ", ")
	}
	return ""
}

// TypeUsageErrors makes the argument errors of every command below root
// usage errors by type: each command's Args validator (cobra.NoArgs,
// cobra.MaximumNArgs, ...) is wrapped so that what it returns is a
// *UsageError. A command group (subcommands, no run function of its own)
// gets GroupArgs and ShowHelp: a bare group prints its help (exit 0), an
// unknown subcommand is a usage error (exit 2). Call it once the tree is
// complete (cobra's completion command included: InitDefaultCompletionCmd).
func TypeUsageErrors(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args, c.RunE = GroupArgs, ShowHelp
		}
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return &UsageError{Err: err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// GroupArgs is the Args of a command group: an argument is an unknown
// subcommand, reported with the nearest names ("did you mean").
func GroupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}

// ShowHelp is the run function of a command group: it prints the group's
// help.
func ShowHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }
