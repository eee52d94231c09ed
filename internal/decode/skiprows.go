package decode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Bad rows set aside (DecodeOptions.OnError = OnErrorSkipRows, ingest's
// --on-error skip-rows, docs/schema.md): a file of an existing table loads
// its valid rows, and each row a rule refuses is reported with its row,
// line, column, value and rule (Decoded.Rejected) instead of refusing the
// whole file, up to DecodeOptions.MaxBadRows. Decode first reads a file as
// always; only a file refused for one of its rows is read again in this
// mode, sequentially:
//
//   - text: rowFilter sits in front of the line-end check and the CSV
//     reader and takes out the records whose structure is broken (the
//     wrong number of fields, a bare or unclosed quote, a carriage return
//     outside quotes), following encoding/csv's record rules byte for
//     byte, so that the reader sees only well-formed records;
//   - every file: a column whose value does not convert is converted again
//     around the refused row (convertSkipping), and the refused rows are
//     left out of the batch.
//
// What cannot be set aside refuses the file as before: a problem of the
// whole file (its encoding, its header, a column the table lacks), and a
// Parquet file arrow-go cannot read.

// OnError says what a row that cannot be loaded does to its file.
type OnError string

// The on-error modes.
const (
	// OnErrorFile refuses the whole file (the default): nothing of it is
	// loaded, and it is quarantined with the reason.
	OnErrorFile OnError = "file"
	// OnErrorSkipRows loads the file's valid rows and sets the others
	// aside (Decoded.Rejected), up to DecodeOptions.MaxBadRows.
	OnErrorSkipRows OnError = "skip-rows"
)

// ParseOnError reads file or skip-rows; "" is file.
func ParseOnError(s string) (OnError, error) {
	switch OnError(s) {
	case "", OnErrorFile:
		return OnErrorFile, nil
	case OnErrorSkipRows:
		return OnErrorSkipRows, nil
	}
	return "", fmt.Errorf("on-error %q: expected file or skip-rows", s)
}

// MaxBadRows bounds the rows of one file set aside under OnErrorSkipRows:
// a number of rows, or a fraction of the file's rows. A file with more is
// refused whole, as with OnErrorFile.
type MaxBadRows struct {
	Rows     int64   // at most this many rows (with Fraction 0)
	Fraction float64 // at most this fraction of the file's rows, in (0, 1]
	set      bool    // the zero value is DefaultMaxBadRows
}

// DefaultMaxBadRows is 10% of a file's rows: a file whose values are all
// of another kind (columns in another order, a wrong decimal separator)
// is quarantined as a whole, a few bad readings are set aside.
var DefaultMaxBadRows = MaxBadRows{Fraction: 0.1, set: true}

// IsSet reports whether m was given (ParseMaxBadRows), not the zero value.
func (m MaxBadRows) IsSet() bool { return m.set }

// orDefault is m, or DefaultMaxBadRows for the zero value.
func (m MaxBadRows) orDefault() MaxBadRows {
	if !m.set {
		return DefaultMaxBadRows
	}
	return m
}

// ParseMaxBadRows reads a number of rows (0, 100), a fraction (0.01, 1.0)
// or a percentage (1%, 10%): a whole number is rows, a number with a point
// a fraction of the file's rows.
func ParseMaxBadRows(s string) (MaxBadRows, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("max-bad-rows %q: expected a number of rows (100), a fraction (0.05) or a percentage (5%%)", s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return MaxBadRows{}, bad
		}
		return MaxBadRows{Fraction: f / 100, set: true}, nil
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return MaxBadRows{}, bad
		}
		return MaxBadRows{Rows: n, set: true}, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || f > 1 || math.IsNaN(f) {
		return MaxBadRows{}, bad
	}
	return MaxBadRows{Fraction: f, set: true}, nil
}

// String writes m as ParseMaxBadRows reads it (rows, or a percentage).
func (m MaxBadRows) String() string {
	m = m.orDefault()
	if m.Fraction > 0 {
		return strconv.FormatFloat(m.Fraction*100, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(m.Rows, 10)
}

// exceeded reports whether bad refused rows of a file of total rows are
// more than m allows.
func (m MaxBadRows) exceeded(bad, total int64) bool {
	if m.Fraction > 0 {
		return float64(bad) > m.Fraction*float64(total)
	}
	return bad > m.Rows
}

// RejectedRow is one row set aside under OnErrorSkipRows.
type RejectedRow struct {
	Row  int64 `json:"row"`            // 1-based data row of the file (the header not counted)
	Line int64 `json:"line,omitempty"` // 1-based line of a text file where the row starts; set by Decoded.WriteRejects
	// Column and Value are the first refused value of the row ("" when the
	// row's structure is what is refused: its number of fields, a quote).
	Column string `json:"column,omitempty"`
	Value  string `json:"value,omitempty"`
	// Rule names the rule that refused it (docs/ingest.md, "Bad rows set
	// aside"): fields, quoting, line-end, unnamed-column, required, utf-8,
	// nul, or "type T" for a value that is not a T of the column's type.
	Rule   string `json:"rule"`
	Reason string `json:"reason"` // as a refused file's reason words it, without the key
}

// Rules of RejectedRow.Rule.
const (
	RuleFields        = "fields"
	RuleQuoting       = "quoting"
	RuleLineEnd       = "line-end"
	RuleUnnamedColumn = "unnamed-column"
	RuleRequired      = "required"
	RuleUTF8          = "utf-8"
	RuleNUL           = "nul"
	RuleJSON          = "json" // a line of a JSON file that is not one JSON object, or holds an array
)

// rowSkipper collects the rows set aside while a file is decoded with
// OnErrorSkipRows.
type rowSkipper struct {
	max      MaxBadRows
	rejected []RejectedRow
	first    *FileError // the refusal of the lowest row, returned when max is exceeded
	// dropped are the data rows rowFilter took out of a text file (file
	// rows, ascending): the CSV reader numbers the rows it sees without
	// them.
	dropped []int64
	// raw holds the refused rows of a Parquet file as read (one batch per
	// refusal), for its rejects file.
	raw []arrow.RecordBatch
}

// reset forgets the rows set aside so far (and releases the raw ones),
// for a file read again from its start.
func (s *rowSkipper) reset() {
	for _, r := range s.raw {
		r.Release()
	}
	s.rejected, s.first, s.dropped, s.raw = nil, nil, nil, nil
}

// fileRow maps the row number k (1-based) the CSV reader gives a row it
// read through rowFilter to the row's number in the file.
func (s *rowSkipper) fileRow(k int64) int64 {
	for _, d := range s.dropped {
		if d > k {
			break
		}
		k++
	}
	return k
}

// reject records a refused row (fe: its error with the row in the file);
// it returns the error that refuses the whole file once more rows than
// max allows without a fraction are refused.
func (s *rowSkipper) reject(fe *FileError, rule string) error {
	if s.first == nil || fe.Row < s.first.Row {
		c := *fe
		s.first = &c
	}
	s.rejected = append(s.rejected, RejectedRow{Row: fe.Row, Column: fe.Column, Value: fe.Value, Rule: rule, Reason: reasonOf(fe)})
	if s.max.Fraction == 0 && int64(len(s.rejected)) > s.max.Rows {
		return s.tooMany(0)
	}
	return nil
}

// tooMany is the error of a file with more refused rows than max allows
// (total: the file's rows, 0 when not known yet): the first refused row's,
// saying how many were refused.
func (s *rowSkipper) tooMany(total int64) error {
	fe := *s.first
	count := fmt.Sprintf("at least %d rows", len(s.rejected)) // it stops at the first one too many
	if total > 0 {
		count = fmt.Sprintf("%d rows of %d", len(s.rejected), total)
	}
	fe.Reason = reasonOf(&fe) + fmt.Sprintf(" (%s refused, more than --max-bad-rows %s allows: the whole file is refused)", count, s.max)
	fe.Err = nil
	return &fe
}

// reasonOf is the message of fe without its key and place.
func reasonOf(fe *FileError) string { return fe.message() }

// ruleOf names the rule behind a conversion's refusal of a value of a
// column of type dst.
func ruleOf(fe *FileError, dst arrow.DataType) string {
	switch {
	case fe.nullCell:
		return RuleRequired
	case strings.Contains(fe.Reason, "is not valid UTF-8"):
		return RuleUTF8
	case strings.Contains(fe.Reason, "holds a NUL byte"):
		return RuleNUL
	}
	return "type " + typeName(dst)
}

// skippable reports whether err, Decode's error for a file, refuses one of
// its rows, which opts.OnError skip-rows sets aside: a row of a file of an
// existing table.
func skippable(err error, opts DecodeOptions) bool {
	var fe *FileError
	if opts.OnError != OnErrorSkipRows || opts.Target == nil || !errors.As(err, &fe) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return fe.Row > 0 && !fe.newColumns && !fe.columnsSetting
}

// convertSkipping is convert for a file decoded with OnErrorSkipRows: a
// column whose converter refuses a row is converted again around it (the
// rows before it, a null in its place, the rows after it), and the rows
// refused in any column are left out of the batch, each recorded with the
// first column (in table order) that refused it. rowBase counts the rows
// before rec as the source numbers them (fileRow maps them to the file's).
// rec is not released. Cost: each refusal converts the part of its column
// before it twice.
func (c *conformer) convertSkipping(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error) {
	s := c.ro.skipRows
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, len(c.convs))
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	bad := map[int]bool{}
	var badOrder []int // rows of rec refused, in the order found
	var refusals []*FileError
	var rules []string
	for i, conv := range c.convs {
		dst := c.target.Field(i).Type
		if conv == nil {
			cols = append(cols, array.MakeArrayOfNull(c.ro.mem, dst, n))
			continue
		}
		src := rec.Column(c.srcIdx[i])
		var pieces []arrow.Array
		release := func() {
			for _, p := range pieces {
				p.Release()
			}
		}
		for lo := 0; lo < n; {
			part := array.NewSlice(src, int64(lo), int64(n))
			out, err := conv(part, rowBase+int64(lo))
			part.Release()
			if err == nil {
				pieces = append(pieces, out)
				break
			}
			var fe *FileError
			r := -1
			if errors.As(err, &fe) && fe.Row > 0 {
				r = int(fe.Row - rowBase - 1)
			}
			if r < lo || r >= n {
				release()
				return nil, err // not a row's: the file's
			}
			if r > lo {
				part := array.NewSlice(src, int64(lo), int64(r))
				out, err := conv(part, rowBase+int64(lo))
				part.Release()
				if err != nil {
					release()
					return nil, err
				}
				pieces = append(pieces, out)
			}
			pieces = append(pieces, array.MakeArrayOfNull(c.ro.mem, dst, 1))
			if !bad[r] {
				bad[r] = true
				badOrder = append(badOrder, r)
				refusals = append(refusals, fe)
				rules = append(rules, ruleOf(fe, dst))
			}
			lo = r + 1
		}
		var col arrow.Array
		if len(pieces) == 1 {
			col = pieces[0]
		} else {
			joined, err := array.Concatenate(pieces, c.ro.mem)
			release()
			if err != nil {
				return nil, &FileError{Key: c.ro.key, Column: c.target.Field(i).Name, Reason: "cannot join converted values", Err: err}
			}
			col = joined
		}
		cols = append(cols, col)
	}
	if len(badOrder) == 0 {
		out := array.NewRecordBatch(c.target, cols, int64(n))
		return out, nil
	}
	// Record the refusals in row order, each with its row in the file.
	order := make([]int, len(badOrder))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return badOrder[a] - badOrder[b] })
	for _, j := range order {
		fe := *refusals[j]
		fe.Row = s.fileRow(fe.Row)
		if err := s.reject(&fe, rules[j]); err != nil {
			return nil, err
		}
	}
	if !c.ro.text {
		s.keepRaw(rec, bad)
	}
	return c.keepRows(cols, n, bad)
}

// keepRows builds the batch of cols without the rows in bad.
func (c *conformer) keepRows(cols []arrow.Array, n int, bad map[int]bool) (arrow.RecordBatch, error) {
	bld := array.NewInt64Builder(c.ro.mem)
	defer bld.Release()
	for i := 0; i < n; i++ {
		if !bad[i] {
			bld.Append(int64(i))
		}
	}
	idx := bld.NewArray()
	defer idx.Release()
	kept := make([]arrow.Array, 0, len(cols))
	defer func() {
		for _, a := range kept {
			a.Release()
		}
	}()
	for i, col := range cols {
		a, err := take(c.ro.mem, col, idx)
		if err != nil {
			return nil, &FileError{Key: c.ro.key, Column: c.target.Field(i).Name, Reason: "cannot leave out refused rows", Err: err}
		}
		kept = append(kept, a)
	}
	return array.NewRecordBatch(c.target, kept, int64(idx.Len())), nil
}

// keepRaw keeps the refused rows of a Parquet batch as read, for the
// rejects file.
func (s *rowSkipper) keepRaw(rec arrow.RecordBatch, bad map[int]bool) {
	for i := 0; i < int(rec.NumRows()); i++ {
		if bad[i] {
			s.raw = append(s.raw, rec.NewSlice(int64(i), int64(i)+1))
		}
	}
}

// rowFilter passes the records of a CSV or TSV text (after its byte order
// mark and separator hint) on to the line-end check and the CSV reader,
// and takes out, recording them with the skipper, the data records whose
// structure the reader would refuse: a number of fields other than the
// header's, a quote inside an unquoted value or after a closing quote, a
// quoted value that never ends, a carriage return outside quotes that is
// not part of a CRLF. Records are found as encoding/csv finds them
// (RFC 4180 quoting; a line of nothing but its line end is no record), so
// the rows the reader numbers are the records passed on, in order.
type rowFilter struct {
	br     *bufio.Reader
	ro     *resolved
	skip   *rowSkipper
	scan   recordScanner
	named  int   // the header's columns up to the last with a name (textColumns.out)
	width  int   // fields of the header; 0 until it is read
	row    int64 // data records read
	line   int64 // line feeds read
	out    bytes.Buffer
	err    error
	record []byte
}

func newRowFilter(r io.Reader, ro *resolved, cols textColumns) *rowFilter {
	return &rowFilter{br: bufio.NewReaderSize(r, 64<<10), ro: ro, skip: ro.skipRows, named: cols.out.NumFields(),
		scan: recordScanner{comma: utf8.AppendRune(nil, ro.comma)}}
}

func (f *rowFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.fill()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

// fill reads the next record and passes it on, or takes it out.
func (f *rowFilter) fill() {
	rec, st, err := f.scan.next(f.br)
	if len(rec) > 0 {
		if st.blank {
			f.out.Write(rec)
		} else if f.width == 0 {
			f.width = st.fields
			f.out.Write(rec)
		} else {
			f.row++
			reason, rule, value := st.problem, st.rule, st.value
			if reason == "" && st.fields != f.width {
				reason = fmt.Sprintf("wrong number of fields: the line has %d, the header has %d", st.fields, f.width)
				rule = RuleFields
			}
			for j := f.named; reason == "" && j < st.fields; j++ {
				// An unnamed column at the end holds only nulls (textColumns.trim).
				if v := st.field(rec, j); !slices.Contains(f.ro.nulls, v) {
					reason, rule, value = fmt.Sprintf("column %d has no name in the header but holds the value %s: name the column, or remove the value (an unnamed column is dropped only when it is empty in every row)", j+1, quoteValue(v)), RuleUnnamedColumn, v
				}
			}
			if reason == "" {
				f.out.Write(rec)
			} else {
				f.skip.dropped = append(f.skip.dropped, f.row)
				if rerr := f.skip.reject(&FileError{Key: f.ro.key, Row: f.row, Line: f.line + 1 + f.ro.lineOffset, Value: value, Reason: reason}, rule); rerr != nil {
					f.err = rerr
					return
				}
			}
		}
		f.line += int64(bytes.Count(rec, []byte{'\n'}))
	}
	if err != nil {
		f.err = err
	}
}

// recordScanner cuts CSV text into records as encoding/csv reads them.
type recordScanner struct {
	comma []byte
}

// recordState is what recordScanner found in one record.
type recordState struct {
	blank   bool // a line of nothing but its line end: no record
	fields  int
	problem string // why encoding/csv or the line-end check would refuse it; "" when fine
	rule    string
	value   string // the field's text up to the problem, for a carriage return
	// bounds are where each field is in the record (quotes included,
	// separators and the line end not), and quoted says which fields are
	// quoted.
	bounds [][2]int
	quoted []bool
}

// field returns the value of field j of rec as encoding/csv reads it
// (quotes taken off, doubled quotes single).
func (st *recordState) field(rec []byte, j int) string {
	b := rec[st.bounds[j][0]:st.bounds[j][1]]
	if !st.quoted[j] || len(b) < 2 {
		return string(b)
	}
	return strings.ReplaceAll(string(b[1:len(b)-1]), `""`, `"`)
}

// next returns the next record's bytes (with its line end) and what it
// holds; err is io.EOF after the last one.
func (s *recordScanner) next(br *bufio.Reader) ([]byte, recordState, error) {
	var rec []byte
	var st recordState
	quoted, afterQuote, fieldStart := false, false, true
	fieldAt, fieldQuoted := 0, false // where the current field starts in rec
	fail := func(reason, rule string) {
		if st.problem == "" {
			st.problem, st.rule = reason, rule
		}
	}
	endField := func(at int) {
		st.fields++
		st.bounds = append(st.bounds, [2]int{fieldAt, at})
		st.quoted = append(st.quoted, fieldQuoted)
		fieldAt, fieldQuoted, fieldStart = at+len(s.comma), false, true
	}
	for {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			rec = append(rec, line...)
			line, err = br.ReadSlice('\n')
		}
		start := len(rec)
		rec = append(rec, line...)
		if start == 0 && (string(line) == "\n" || string(line) == "\r\n") {
			st.blank = true
			return rec, st, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rec, st, err
		}
		end := -1 // where the record's line end starts
		for i := start; i < len(rec) && end < 0; i++ {
			c := rec[i]
			if quoted {
				switch {
				case afterQuote && c == '"':
					afterQuote = false
				case afterQuote:
					afterQuote, quoted = false, false
					switch {
					case bytes.HasPrefix(rec[i:], s.comma):
						endField(i)
						i += len(s.comma) - 1
					case c == '\n' || c == '\r' && i+1 < len(rec) && rec[i+1] == '\n':
						end = i
					default:
						fail(fmt.Sprintf("malformed csv: %v", csv.ErrQuote), RuleQuoting)
						fieldStart = false
					}
				case c == '"':
					afterQuote = true
				}
				continue
			}
			switch {
			case fieldStart && c == '"':
				quoted, fieldStart, fieldQuoted = true, false, true
			case bytes.HasPrefix(rec[i:], s.comma):
				endField(i)
				i += len(s.comma) - 1
			case c == '\n':
				end = i
			case c == '\r' && i+1 < len(rec) && rec[i+1] == '\n':
				end = i
			case c == '\r':
				le := &lineEndError{text: string(rec[fieldAt : i+1]), crcrlf: i+2 < len(rec) && rec[i+1] == '\r' && rec[i+2] == '\n',
					atEOF: i+1 == len(rec) && errors.Is(err, io.EOF)}
				fail(le.reason(), RuleLineEnd)
				if st.value == "" {
					st.value = le.text
				}
				fieldStart = false
			case c == '"':
				fail(fmt.Sprintf("malformed csv: %v", csv.ErrBareQuote), RuleQuoting)
				fieldStart = false
			default:
				fieldStart = false
			}
		}
		if end >= 0 {
			endField(end)
			return rec, st, nil
		}
		if errors.Is(err, io.EOF) {
			if len(rec) == 0 {
				return nil, st, io.EOF
			}
			if quoted && !afterQuote {
				fail("malformed csv: a quoted value is not closed before the end of the file", RuleQuoting)
			}
			endField(len(rec))
			return rec, st, io.EOF
		}
		// The line feed was inside a quoted value: the record goes on.
	}
}

// WriteRejects writes the rows d set aside (Decoded.Rejected, decoded with
// OnErrorSkipRows) as a file of src's format that can be fixed and loaded
// again: for CSV and TSV text the file's separator hint, its header and
// each refused record as written (uncompressed, every line end kept); for
// Parquet the refused rows as read, in a zstd Parquet file of the file's
// columns. The rows are in file order, so row i of the rejects file is
// d.Rejected[i-1]. It fills in the line of each rejected row of a text
// file. For JSON each refused object as written, one per line. ext is the
// name's extension the rejects file takes (".csv", ".tsv", ".jsonl" or
// ".parquet"). Errors are src's, w's or Parquet's.
func (d *Decoded) WriteRejects(src Source, w io.Writer) (ext string, err error) {
	if d == nil || d.skip == nil || len(d.Rejected) == 0 {
		return "", errors.New("write rejects: no rows were set aside")
	}
	ro := d.skip.ro
	if !ro.text {
		return ".parquet", writeParquetRejects(d.skip.rows.raw, w)
	}
	if ro.json {
		return ".jsonl", writeJSONRejects(ro, src, d.skip.gz, d.Rejected, w)
	}
	ext = ".csv"
	if ro.tsv {
		ext = ".tsv"
	}
	r, c, err := openTextStream(ro, src, d.skip.gz, false)
	if err != nil {
		return "", err
	}
	defer c.Close()
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(r.prefix); err != nil {
		return "", err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	scan := recordScanner{comma: utf8.AppendRune(nil, ro.comma)}
	want := make(map[int64]int, len(d.Rejected))
	for i, rr := range d.Rejected {
		want[rr.Row] = i
	}
	var row, lines int64
	header := true
	for len(want) > 0 {
		rec, st, err := scan.next(br)
		if len(rec) > 0 && !st.blank {
			switch {
			case header:
				header = false
				if len(rec) > 0 && rec[len(rec)-1] != '\n' {
					rec = append(rec, '\n')
				}
				if _, err := bw.Write(rec); err != nil {
					return "", err
				}
			default:
				row++
				if i, ok := want[row]; ok {
					delete(want, row)
					d.Rejected[i].Line = lines + 1 + ro.lineOffset
					d.Rejected[i].Reason = nullTokenReason(ro, d.skip.header, rec, d.Rejected[i])
					if rec[len(rec)-1] != '\n' {
						rec = append(rec, '\n')
					}
					if _, err := bw.Write(rec); err != nil {
						return "", err
					}
				}
			}
		}
		lines += int64(bytes.Count(rec, []byte{'\n'}))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", textReadError(ro, 0, 0, err)
		}
	}
	if len(want) > 0 {
		return "", fmt.Errorf("write rejects: %d refused rows not found in %s again", len(want), src.Key)
	}
	return ext, bw.Flush()
}

// nullTokenReason words again the refusal of a null in a required column
// when the cell of record rec was a CSV.Null token, as addLine does for a
// refused file.
func nullTokenReason(ro *resolved, header *arrow.Schema, rec []byte, rr RejectedRow) string {
	if rr.Rule != RuleRequired || rr.Column == "" || header == nil {
		return rr.Reason
	}
	idx := header.FieldIndices(rr.Column)
	if len(idx) == 0 {
		return rr.Reason
	}
	cr := csv.NewReader(bytes.NewReader(rec))
	cr.Comma = ro.comma
	cr.FieldsPerRecord = -1
	fields, err := cr.Read()
	if err != nil || idx[0] >= len(fields) {
		return rr.Reason
	}
	if cell := fields[idx[0]]; cell != "" && slices.Contains(ro.nulls, cell) {
		return quoteValue(cell) + " is a null token (--csv-null) but the column is required"
	}
	return rr.Reason
}

// writeParquetRejects writes rows (batches of one schema) as a zstd
// Parquet file, with the registered ParquetFormat.
func writeParquetRejects(rows []arrow.RecordBatch, w io.Writer) error {
	if len(rows) == 0 {
		return errors.New("write rejects: no rows")
	}
	if parquetFormat == nil {
		return fmt.Errorf("write rejects: %w", errNoParquetFormat)
	}
	return parquetFormat.Write(w, rows)
}

// skipState is what a Decoded decoded with OnErrorSkipRows keeps for
// WriteRejects.
type skipState struct {
	ro     *resolved
	gz     bool
	header *arrow.Schema // the text file's columns
	rows   *rowSkipper
}

// release drops the raw rows kept for a Parquet rejects file.
func (s *skipState) release() {
	if s == nil || s.rows == nil {
		return
	}
	for _, r := range s.rows.raw {
		r.Release()
	}
	s.rows.raw = nil
}
