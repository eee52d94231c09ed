package decode

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"unicode/utf8"
)

// Line ends of CSV and TSV text. RFC 4180 (section 2) ends records with
// CRLF, and LF alone is read too; a carriage return belongs to a value
// only inside quotes. encoding/csv, which reads the records (inside
// arrow-go's CSV reader), bends two of these bytes without a word: it
// reads a CRLF inside a quoted value as LF, and it keeps a carriage return
// outside quotes that ends no line in the unquoted value around it (the
// last value of a line that ends CR CR LF, as Python's csv module writes
// on Windows to a file opened in text mode). encoding/csv has no setting
// for either, so lineEnds sits between the text and the CSV reader:
//
//   - inside quotes, it writes the CR of a CRLF twice: encoding/csv turns
//     the CRLF that ends each line it reads into LF, which leaves the
//     value's CRLF as the file has it (keepCRLF);
//   - outside quotes, it stops at the first carriage return that is not
//     part of a CRLF with a *lineEndError saying where (the line, and the
//     field with its text so far), which refuses the file.
//
// Quotes are tracked as RFC 4180 has them: a quote opens or closes a quoted
// value, two quotes inside one stand for a quote (they close and open
// again). A quote inside an unquoted value is encoding/csv's error (a bare
// quote), reported before any line end after it.
type lineEnds struct {
	r        io.Reader
	comma    []byte // the field separator, as UTF-8
	keepCRLF bool   // write a quoted CRLF's CR twice; false when the byte offsets of the text must stay its own (Check's scan)

	in, out []byte // read from r; given out by Read (out[next:])
	next    int
	err     error // returned once out is given out: r's error or the line end refused

	quoted   bool   // inside a quoted value
	cr       bool   // the last byte given out is a carriage return, the byte after it not yet seen
	crQuoted bool   // ... inside quotes
	crcr     bool   // a carriage return outside quotes was followed by one that ended the last read
	lines    int64  // line feeds given out
	record   []byte // the current record as given out so far (from the last line feed outside quotes)

	// Segments (textSource): with segment set, the text is given out in
	// runs of whole records of about segment bytes each, so that a CSV
	// batch is cut by its bytes, not by a count of rows (textSource.next).
	segment  int64
	segBytes int64 // bytes of out given to the current segment so far
	cutAt    int   // index in out where the current segment ends, -1 for none
	cutLines int64 // line feeds given out up to cutAt
}

// newLineEnds returns the text of r with quoted CRLFs kept (keepCRLF) and
// carriage returns outside quotes checked; comma separates its fields.
func newLineEnds(r io.Reader, comma rune, keepCRLF bool) *lineEnds {
	return &lineEnds{r: r, comma: utf8.AppendRune(nil, comma), keepCRLF: keepCRLF, in: make([]byte, 32<<10), cutAt: -1}
}

// lineEndError is a carriage return outside quotes that is not part of a
// CRLF: where it is in the text lineEnds read (line, 1-based, and the
// field of the record, 0-based) and the field's text up to and including
// it, as written (quotes too). crcrlf says the line ends CR CR LF; atEOF
// that the carriage return is the last byte of the text.
type lineEndError struct {
	line   int64
	field  int
	text   string
	crcrlf bool
	atEOF  bool
}

func (e *lineEndError) Error() string { return e.reason() }

// reason words the error for a FileError naming the row and column.
func (e *lineEndError) reason() string {
	switch {
	case e.crcrlf:
		return "the line ends CR CR LF (\\r\\r\\n), so its last value would keep a carriage return (" + quoteValue(e.text) + "): " +
			"Python's csv module writes such line ends on Windows to a file opened without newline=''; line ends must be LF or CRLF: open the file with newline='' (or convert its line ends)"
	case e.atEOF:
		return "the file ends with a carriage return alone (" + quoteValue(e.text) + " at the end of the last line): line ends must be LF or CRLF"
	}
	return "the value " + quoteValue(e.text) + " holds a carriage return outside quotes, which other readers take for a line end: line ends must be LF or CRLF, not CR alone; quote the value if the carriage return belongs to it"
}

func (l *lineEnds) Read(p []byte) (int, error) {
	if l.cutAt >= 0 && l.next == l.cutAt {
		return 0, io.EOF // the end of a segment (nextSegment goes on)
	}
	for l.next == len(l.out) {
		if l.err != nil {
			return 0, l.err
		}
		n, err := l.r.Read(l.in)
		l.out, l.next = l.out[:0], 0
		l.scan(l.in[:n])
		if err != nil && l.err == nil {
			switch {
			case !errors.Is(err, io.EOF):
				l.err = err
			case l.crcr:
				l.fail(false, false, nil)
			case l.cr && !l.crQuoted:
				l.fail(false, true, nil)
			default:
				l.err = err
			}
		}
	}
	end := len(l.out)
	if l.cutAt >= 0 {
		end = l.cutAt
	}
	n := copy(p, l.out[l.next:end])
	l.next += n
	return n, nil
}

// segmentEnded reports whether Read stopped at the end of a segment rather
// than at the end of the text; nextSegment then reads on.
func (l *lineEnds) segmentEnded() bool { return l.cutAt >= 0 && l.next == l.cutAt }

// nextSegment starts the next segment after segmentEnded; the text given
// out already past the cut (at most one read of r) counts towards it.
func (l *lineEnds) nextSegment() {
	l.cutAt = -1
	l.segBytes = int64(len(l.out) - l.next)
}

// scan appends b to out as described at lineEnds, up to the end of b or up
// to the carriage return refused (then l.err is set).
func (l *lineEnds) scan(b []byte) {
	if len(b) == 0 {
		return
	}
	if l.crcr {
		l.fail(b[0] == '\n', false, nil)
		return
	}
	nextQuote, nextCR := -1, -1 // in b, each found once per occurrence
	for i := 0; i < len(b); {
		if l.cr {
			l.cr = false
			switch c := b[i]; {
			case l.crQuoted:
				if c == '\n' && l.keepCRLF {
					l.out = append(l.out, '\r')
				}
			case c == '\n':
			case c == '\r' && i+1 == len(b):
				l.crcr = true // the byte after it decides the words
				return
			case c == '\r':
				l.fail(b[i+1] == '\n', false, nil)
				return
			default:
				l.fail(false, false, b[i:])
				return
			}
		}
		if nextQuote < i {
			nextQuote = indexFrom(b, i, '"')
		}
		if nextCR < i {
			nextCR = indexFrom(b, i, '\r')
		}
		stop := min(nextQuote, nextCR)
		if stop == len(b) {
			l.emit(b[i:])
			return
		}
		l.emit(b[i : stop+1])
		if b[stop] == '"' {
			l.quoted = !l.quoted
		} else {
			l.cr, l.crQuoted = true, l.quoted
		}
		i = stop + 1
	}
}

// indexFrom is the index of c in b at or after i, len(b) when there is none.
func indexFrom(b []byte, i int, c byte) int {
	if j := bytes.IndexByte(b[i:], c); j >= 0 {
		return i + j
	}
	return len(b)
}

// emit gives seg out, counting its lines and keeping the current record's
// text. seg holds no quote but maybe one as its last byte, whose change of
// l.quoted comes after.
func (l *lineEnds) emit(seg []byte) {
	start := len(l.out)
	l.out = append(l.out, seg...)
	if l.segment > 0 && l.cutAt < 0 {
		// A line feed outside quotes ends a record (seg holds no quote
		// before its last byte): the first one at or past segment bytes
		// ends the segment.
		from := max(l.segment-l.segBytes-1, 0)
		if !l.quoted && from < int64(len(seg)) {
			if j := bytes.IndexByte(seg[from:], '\n'); j >= 0 {
				cut := int(from) + j + 1
				l.cutAt = start + cut
				l.cutLines = l.lines + int64(bytes.Count(seg[:cut], []byte{'\n'}))
			}
		}
		l.segBytes += int64(len(seg))
	}
	if i := bytes.LastIndexByte(seg, '\n'); i >= 0 {
		l.lines += int64(bytes.Count(seg, []byte{'\n'}))
		if !l.quoted {
			l.record = append(l.record[:0], seg[i+1:]...)
			return
		}
	}
	l.record = append(l.record, seg...)
}

// fail sets l.err to the carriage return refused, the last byte given out
// (and of l.record); rest is what follows it in the bytes read, of which
// the rest of its field is quoted too.
func (l *lineEnds) fail(crcrlf, atEOF bool, rest []byte) {
	field, start, quoted := 0, 0, false
	for i := 0; i < len(l.record); i++ {
		switch {
		case l.record[i] == '"':
			quoted = !quoted
		case !quoted && bytes.HasPrefix(l.record[i:], l.comma):
			field, start = field+1, i+len(l.comma)
			i += len(l.comma) - 1
		}
	}
	text := l.record[start:]
	if end := bytes.IndexAny(rest, "\r\n\""+string(l.comma)); end >= 0 {
		rest = rest[:end]
	}
	text = append(text[:len(text):len(text)], rest[:min(len(rest), maxValueInMessage)]...)
	l.err = &lineEndError{line: l.lines + 1, field: field, text: string(text), crcrlf: crcrlf, atEOF: atEOF}
	l.cr, l.crcr = false, false
}

// explain returns the line end l refused when err, from the CSV reader, is
// a parse error of the same line (to encoding/csv a quoted value followed
// by a carriage return is a misplaced quote, but the line end is what is
// wrong), else err.
func (l *lineEnds) explain(err error) error {
	var le *lineEndError
	if l == nil || !errors.As(l.err, &le) {
		return err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && int64(pe.Line) == le.line {
		return le
	}
	return err
}
