// Package iostreams is timelake's output layer: a command's standard
// streams, and the three ways every command prints on them.
//
//   - Tables (NewTable): an aligned table with upper-case headers on a
//     terminal (tablewriter), tab-separated values under a header line in a
//     pipe, the same for every command.
//   - JSON (PrintJSON): one document on stdout, indented on a terminal and
//     exactly one line in a pipe, so `--json >> ingest.log` keeps one record
//     per run.
//   - Timed lines (TimedOut): lines of a run's log that, in a pipe, start with
//     an RFC 3339 UTC timestamp, so a cron log says when each line happened.
//
// Text is formatted with this package's Fprintf and its kin, which print
// every value (a key, a file name, an error message) through Escape, and
// table cells are escaped the same way: no value can start a line of its
// own or move a terminal's cursor. JSON stays exact.
//
// Commands write only to the injected streams; tests read buffers (Test).
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams of one command invocation.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer // results: lines, tables, the --json document
	ErrOut io.Writer // logs, progress and the final error

	stdinTTY, stdoutTTY, stderrTTY bool
}

// System returns the process's streams, with terminal detection.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Test returns streams backed by buffers (stdin empty, not terminals).
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}, out, errOut
}

// IsStdinTTY reports whether In is a terminal (a question can be asked).
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// SetStdinTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// IsStdoutTTY reports whether Out is a terminal (aligned tables, indented
// JSON, no timestamps).
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether ErrOut is a terminal (progress bars).
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdoutTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// SetStderrTTY overrides terminal detection (tests).
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }
