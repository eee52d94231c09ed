package iostreams

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// TimeFormat is the timestamp at the start of a timed line: RFC 3339 in
// UTC, to the second ("2026-01-05T10:00:03Z").
const TimeFormat = time.RFC3339

// TimedOut returns the writer for a run's line-by-line output (ingest's
// file lines and summary). On a terminal it is Out. In a pipe (cron appends
// to a log) every line written to it starts with the time it was written,
// in TimeFormat, and a space. now is the clock; nil means time.Now.
func (s *IOStreams) TimedOut(now func() time.Time) io.Writer {
	if s.IsStdoutTTY() {
		return s.Out
	}
	return NewTimedWriter(s.Out, now)
}

// NewTimedWriter returns a writer that starts every line written to w with
// now() in TimeFormat and a space (the time at which the line's first byte
// was written). It is safe for concurrent use; concurrent writers should
// write whole lines. now nil means time.Now.
func NewTimedWriter(w io.Writer, now func() time.Time) io.Writer {
	if now == nil {
		now = time.Now
	}
	return &timedWriter{w: w, now: now, lineStart: true}
}

type timedWriter struct {
	mu        sync.Mutex
	w         io.Writer
	now       func() time.Time
	lineStart bool
}

func (t *timedWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b bytes.Buffer
	for rest := p; len(rest) > 0; {
		if t.lineStart {
			b.WriteString(t.now().UTC().Format(TimeFormat))
			b.WriteByte(' ')
			t.lineStart = false
		}
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, t.lineStart = rest[:i+1], true
		}
		b.Write(line)
		rest = rest[len(line):]
	}
	if _, err := t.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
