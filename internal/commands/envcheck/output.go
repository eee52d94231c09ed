package envcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/timelake/timelake/internal/iostreams"
)

// writeJSON writes one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRows prints rows as an aligned table with header on a terminal, and
// as tab-separated lines without header in a pipe (tabs and newlines inside
// a field become spaces, so every row is one line of len(header) fields).
func writeRows(ios *iostreams.IOStreams, header []string, rows [][]string) error {
	if !ios.IsStdoutTTY() {
		var b strings.Builder
		for _, r := range rows {
			for i, f := range r {
				if i > 0 {
					b.WriteByte('\t')
				}
				b.WriteString(strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(f))
			}
			b.WriteByte('\n')
		}
		_, err := io.WriteString(ios.Out, b.String())
		return err
	}
	t := tablewriter.NewTable(ios.Out,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Lines:      tw.LinesNone,
				Separators: tw.SeparatorsNone,
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			MaxWidth: 160,
			Header: tw.CellConfig{
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Formatting: tw.CellFormatting{AutoFormat: tw.On},
			},
			Row: tw.CellConfig{
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Formatting: tw.CellFormatting{AutoWrap: tw.WrapNormal},
				ColMaxWidths: tw.CellWidth{PerColumn: tw.NewMapper[int, int]().
					Set(len(header)-2, 70).Set(len(header)-1, 50)},
			},
		}),
	)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// writeReport prints the check report.
func writeReport(ios *iostreams.IOStreams, rep *Report, asJSON bool) error {
	if asJSON {
		return writeJSON(ios.Out, rep)
	}
	rows := make([][]string, len(rep.Checks))
	for i, ch := range rep.Checks {
		rows[i] = []string{ch.Name, string(ch.Result), ch.Detail, ch.Fix}
	}
	if err := writeRows(ios, []string{"check", "result", "detail", "fix"}, rows); err != nil {
		return err
	}
	if ios.IsStdoutTTY() {
		ok := len(rep.Checks) - rep.Failed - rep.Warnings - rep.Skipped
		verdict := "ready for cron"
		if rep.Failed > 0 {
			verdict = "fix the failed checks before cron runs ingest"
		}
		_, err := fmt.Fprintf(ios.Out, "\n%d ok, %s, %d failed, %d skipped: %s\n",
			ok, plural(rep.Warnings, false, "warning", "warnings"), rep.Failed, rep.Skipped, verdict)
		return err
	}
	return nil
}
