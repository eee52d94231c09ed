package iostreams

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Column is one column of a printed table.
type Column struct {
	// Header is the terminal header, printed upper-case.
	Header string
	// Pipe is the header in a pipe, a name scripts can rely on (e.g.
	// "size_bytes" where the terminal says "size"); "" means Header.
	Pipe string
	// Right aligns the column to the right on a terminal (numbers).
	Right bool
	// Wrap, when above zero, wraps longer cells at spaces on a terminal to
	// lines of at most this many characters. A pipe never wraps.
	Wrap int
}

// TablePrinter prints rows under columns: on a terminal an aligned,
// borderless table (tablewriter) with upper-case headers and two spaces
// between columns; in a pipe the Pipe headers, then one line per row, the
// cells separated by tabs. In both, a tab inside a cell becomes a space and
// the cell is printed through Escape (a newline as "\n"), so every row is
// one line with one field per column.
type TablePrinter struct {
	w    io.Writer
	tty  bool
	cols []Column
	rows [][]string
}

// NewTable returns a table printer on Out, aligned when Out is a terminal.
func (s *IOStreams) NewTable(cols ...Column) *TablePrinter {
	return NewTablePrinter(s.Out, s.IsStdoutTTY(), cols...)
}

// NewTablePrinter returns a table printer on w; tty selects the terminal
// form (e.g. to render a table inside a terminal text).
func NewTablePrinter(w io.Writer, tty bool, cols ...Column) *TablePrinter {
	return &TablePrinter{w: w, tty: tty, cols: cols}
}

// AddRow adds one row; it must have one cell per column.
func (t *TablePrinter) AddRow(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = Field(c)
	}
	t.rows = append(t.rows, row)
}

// Render writes the header and the rows. Every line ends with a newline.
// Errors: a row with the wrong number of cells, or the writer fails.
func (t *TablePrinter) Render() error {
	for i, r := range t.rows {
		if len(r) != len(t.cols) {
			return fmt.Errorf("render table: row %d has %d cells, want %d", i+1, len(r), len(t.cols))
		}
	}
	var out string
	if t.tty {
		s, err := t.terminal()
		if err != nil {
			return err
		}
		out = s
	} else {
		out = t.pipe()
	}
	_, err := io.WriteString(t.w, out)
	return err
}

func (t *TablePrinter) pipe() string {
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(c)
		}
		b.WriteByte('\n')
	}
	hdr := make([]string, len(t.cols))
	for i, c := range t.cols {
		hdr[i] = c.Pipe
		if hdr[i] == "" {
			hdr[i] = c.Header
		}
	}
	line(hdr)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

func (t *TablePrinter) terminal() (string, error) {
	align := make([]tw.Align, len(t.cols))
	hdr := make([]string, len(t.cols))
	widths := tw.NewMapper[int, int]()
	wrap := tw.WrapNone
	for i, c := range t.cols {
		align[i] = tw.AlignLeft
		if c.Right {
			align[i] = tw.AlignRight
		}
		hdr[i] = strings.ToUpper(c.Header)
		if c.Wrap > 0 {
			widths.Set(i, c.Wrap+2) // the width counts the padding
			wrap = tw.WrapNormal
		}
	}
	var b strings.Builder
	tbl := tablewriter.NewTable(&b,
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
		tablewriter.WithRowAutoWrap(wrap),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if widths.Len() > 0 {
		tbl.Configure(func(c *tablewriter.Config) { c.Row.ColMaxWidths.PerColumn = widths })
	}
	tbl.Header(hdr)
	if err := tbl.Bulk(t.rows); err != nil {
		return "", fmt.Errorf("render table: %w", err)
	}
	if err := tbl.Render(); err != nil {
		return "", fmt.Errorf("render table: %w", err)
	}
	// The last column is padded too: drop trailing blanks.
	var out strings.Builder
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			out.WriteString(strings.TrimRight(l, " \n") + "\n")
		}
	}
	return out.String(), nil
}
