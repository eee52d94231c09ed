package tables

import (
	"encoding/json"
	"github.com/timelake/timelake/internal/iostreams"
	"strconv"
	"time"
	"unicode/utf8"
)

// Time formats. Commit times come from Iceberg's timestamp-ms, so machine
// formats keep the milliseconds.
const (
	// MachineTime is RFC 3339 in UTC with milliseconds (pipes and --json).
	MachineTime = "2006-01-02T15:04:05.000Z07:00"
	// TerminalTime is the terminal form; column headers say "(UTC)".
	TerminalTime = "2006-01-02 15:04:05"
)

// UTCTime is a commit time. It marshals to JSON as a MachineTime string.
type UTCTime struct{ time.Time }

// At converts Iceberg's milliseconds since the epoch to a UTCTime.
func At(ms int64) UTCTime { return UTCTime{time.UnixMilli(ms).UTC()} }

// MarshalJSON renders the time as "2026-01-05T10:18:41.137Z".
func (t UTCTime) MarshalJSON() ([]byte, error) { return json.Marshal(t.machine()) }

func (t UTCTime) machine() string  { return t.UTC().Format(MachineTime) }
func (t UTCTime) terminal() string { return t.UTC().Format(TerminalTime) }

// format renders t for a terminal or a pipe; nil is "-" on a terminal and
// empty in a pipe.
func formatTime(t *UTCTime, tty bool) string {
	switch {
	case t == nil && tty:
		return "-"
	case t == nil:
		return ""
	case tty:
		return t.terminal()
	}
	return t.machine()
}

// formatBytes is iostreams.HumanBytes on a terminal and the raw number in a pipe.
func formatBytes(n int64, tty bool) string {
	if tty {
		return iostreams.HumanBytes(n)
	}
	return strconv.FormatInt(n, 10)
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// plural renders "1 row", "2 rows" (iostreams.Plural).
func plural(n int64, noun string) string { return iostreams.Plural(n, noun) }

// ellipsis shortens s to at most n runes for a terminal, ending in "...".
func ellipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}

// optInt renders an optional number: "-" on a terminal, empty in a pipe.
func optInt(n *int64, tty bool) string {
	switch {
	case n != nil:
		return formatInt(*n)
	case tty:
		return "-"
	}
	return ""
}

// optString renders an optional text like optInt.
func optString(s string, tty bool) string {
	if s == "" && tty {
		return "-"
	}
	return s
}
