// Package iostreams carries a command's standard streams, so commands write
// to injected writers and tests read buffers.
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

	stdoutTTY, stderrTTY bool
}

// System returns the process's streams, with terminal detection.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Test returns streams backed by buffers (stdin empty, not terminals).
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}, out, errOut
}

// IsStdoutTTY reports whether Out is a terminal (aligned tables, progress).
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether ErrOut is a terminal (progress bars).
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdoutTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// SetStderrTTY overrides terminal detection (tests).
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }
