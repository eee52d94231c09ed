package cmdutil

import (
	"errors"
	"fmt"
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
	ExitLeaseHeld ExitCode = 11  // ingest: another run holds the table's lease
	ExitCancelled ExitCode = 130 // interrupted (SIGINT/SIGTERM)
)

// FlagError is a usage error: main prints it with a hint to run --help and
// exits with ExitUsage.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf builds a FlagError.
func FlagErrorf(format string, a ...any) error {
	return &FlagError{Err: fmt.Errorf(format, a...)}
}

// ErrPartial is returned by ingest after it reported a run in which some
// files were quarantined (ExitPartial).
var ErrPartial = errors.New("some files were quarantined")

// SilentError carries an exit code for a failure already reported on
// stdout; main prints nothing more.
type SilentError struct {
	Code ExitCode
	Err  error
}

func (e *SilentError) Error() string { return e.Err.Error() }
func (e *SilentError) Unwrap() error { return e.Err }
