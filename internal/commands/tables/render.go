package tables

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Output is where and how a subcommand prints: an aligned table on a
// terminal, tab-separated values with a header line in a pipe, or one JSON
// document with --json.
type Output struct {
	Out  io.Writer // f.IO.Out
	TTY  bool      // Out is a terminal
	JSON bool      // --json
}

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

// HumanBytes renders a size with binary units: "512 B", "4.5 KiB",
// "1.2 MiB", "3.0 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit && v > -unit || u == "PiB" {
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
	}
	return "" // unreachable
}

// formatBytes is HumanBytes on a terminal and the raw number in a pipe.
func formatBytes(n int64, tty bool) string {
	if tty {
		return HumanBytes(n)
	}
	return strconv.FormatInt(n, 10)
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// plural renders "1 row", "2 rows".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return formatInt(n) + " " + noun + "s"
}

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

// column is one column of a printed table: its terminal header, its pipe
// header, and whether the terminal right-aligns it (numbers).
type column struct {
	tty, pipe string
	right     bool
}

// printTable writes rows under cols: on a terminal, an aligned borderless
// table (tablewriter) with upper-case headers and two spaces between
// columns; in a pipe, the pipe headers
// and the cells separated by tabs (tabs and newlines inside cells become
// spaces). Every line ends with a newline.
func printTable(w io.Writer, tty bool, cols []column, rows [][]string) error {
	if !tty {
		var b strings.Builder
		hdr := make([]string, len(cols))
		for i, c := range cols {
			hdr[i] = c.pipe
		}
		b.WriteString(strings.Join(hdr, "\t"))
		b.WriteByte('\n')
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
			}
			b.WriteString(strings.Join(cells, "\t"))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	align := make([]tw.Align, len(cols))
	hdr := make([]string, len(cols))
	for i, c := range cols {
		align[i] = tw.AlignLeft
		if c.right {
			align[i] = tw.AlignRight
		}
		hdr[i] = strings.ToUpper(c.tty)
	}
	var b strings.Builder
	t := tablewriter.NewTable(&b,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithPadding(tw.Padding{Right: "  ", Overwrite: true}),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(hdr)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	// The last column is padded too: drop trailing blanks.
	var out strings.Builder
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			out.WriteString(strings.TrimRight(l, " \n") + "\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// printJSON writes v as one indented JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
