package decode

// JSON landing files: one object per line (NDJSON, JSON Lines), or one
// top-level array of objects, plain or gzip.
//
// The tokens are read with github.com/go-json-experiment/json's jsontext
// (the JSON v2 of the Go project, outside the standard library while it is
// experimental there), because it keeps the rules of docs/schema.md
// without code of ours: names duplicated in an object and invalid UTF-8 are
// errors (encoding/json takes the last duplicate and replaces bad bytes
// silently), a number is read as its text (nothing is rounded through a
// float64 before the number rules see it), NaN and Infinity are not JSON,
// and it streams token by token, so that neither a file nor a line is held
// whole. arrow-go's JSON reader needs the schema before the first object
// and converts numbers as it reads them.
//
// A line of JSON Lines in the common shape is read without the tokenizer
// (jsonfast.go, lineScan): an object of plain strings (no escape), numbers,
// true, false, null and objects nested up to 16 deep, up to 128 keys an
// object. BenchmarkDecodeJSON's 200,000 lines took 190 ms of CPU through
// jsontext alone (its token state machine, PeekKind and ReadValue, its
// name set per object: 64% of the time), about 100 ms with the scan (and
// the batches' own text buffers, jsontextcols.go), as much as CSV. The
// scan keeps the rules by accepting only what it reads whole and valid:
// strings in valid UTF-8 without control characters, numbers by JSON's
// grammar (not 01, 1., -, +1, .5), no duplicate key, no path beyond
// maxJSONPath, nothing after the object but white space. Any other line
// (an escape, an array, NaN, trailing text, any doubt) is read by the
// tokenizer from its start, so that its values and errors, and their
// wording, are the tokenizer's (TestJSONLineScan and FuzzJSONFastPath
// compare the two). A line with the bytes of the line before between its
// values (its shape: the same keys, nesting and white space) is read by
// comparing those bytes and reading its values alone (lineShape,
// TestJSONLineShape).
//
// A file of objects one per line is read a line at a time (an object
// must be on one line), so that a line that is not JSON has its line
// number and can be set aside (skip-rows); an array is read as one stream
// of tokens. A file is read twice (the Source is a file on disk): the first pass
// (scanJSON) checks every object and learns the columns, in the order
// their keys first appear, so that a key missing from early objects is a
// column like any other; the second (jsonSource.next) builds batches of
// text columns that the CSV path's inference and conversion take as they
// are (ro.text): the number, time and null rules are the same.
//
// Mapping: a nested object's keys become columns named by their path
// joined with "_" ({"readings":{"temp":21.5}} is the column
// "readings_temp"; "." would be read as a struct's field by DuckDB and
// others), true and false are text the boolean rules read, null
// and a missing key are null. A column whose values are all JSON strings
// is a string column when the table is created (its text is not read as a
// number: "0042" stays "0042"), except the time column. Arrays are refused
// with the column and line, as is a key that holds an object in one object
// and a value in another.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-json-experiment/json/jsontext"
)

// maxJSONDepth bounds how deep objects nest, and maxJSONPath the bytes of
// a column's path (its keys joined): a path is held per column and per
// nested object, so a file of deep objects with long keys would otherwise
// take memory growing with the square of its depth.
const (
	maxJSONDepth = 64
	maxJSONPath  = 1024
)

// maxJSONColumns bounds the distinct keys of one JSON file (a file of
// random keys would otherwise make a column of each, held while it is
// read); the table's own width bound is checked after (CheckColumns).
const maxJSONColumns = 100_000

// jsonKind is a bit set of the JSON kinds a column holds.
type jsonKind uint8

const (
	jsonString jsonKind = 1 << iota
	jsonNumber
	jsonBool
	jsonObject // the key holds an object: its keys are columns of their own
	jsonNull   // the key held null (scanJSON)
)

// jsonColumns are the columns of a JSON file, in the order their keys
// first appear.
type jsonColumns struct {
	paths  []string       // the keys of each column's path, joined with pathSeparator
	names  []string       // each column's name (columnName)
	index  map[string]int // by path
	byName map[string]string
	kinds  []jsonKind
	nums   []jsonNumbers
}

// jsonNumbers is what scanJSON learns of a column's numbers: whether one
// has a fraction or an exponent (the column is then double), and the
// first that a double does not hold exactly, with why.
type jsonNumbers struct {
	fraction     bool
	inexact, why string
	inexactRow   int64
}

// pathSeparator joins the keys of a nested value's path while it is read
// (a key holding it would have to be written \u0000); columnName turns it
// into the column's separator.
const pathSeparator = "\x00"

// columnName is the column of a path: its keys joined with "_".
func columnName(path string) string { return strings.ReplaceAll(path, pathSeparator, "_") }

// pathText is a path as its keys joined with "." for messages.
func pathText(path string) string { return strings.ReplaceAll(path, pathSeparator, ".") }

// add records that the value at path holds kind k; line finds the line of
// the object (only an error needs it).
func (c *jsonColumns) add(ro *resolved, path string, k jsonKind, line func() int64) (int, error) {
	i, ok := c.index[path]
	if !ok {
		if len(c.names) >= maxJSONColumns {
			return 0, &FileError{Key: ro.key, Line: line(), Reason: fmt.Sprintf("more than %d distinct keys in one file: load files whose objects share their keys", maxJSONColumns)}
		}
		name := columnName(path)
		if other, taken := c.byName[name]; taken && k != jsonObject && c.kinds[c.index[other]] != jsonObject {
			return 0, &FileError{Key: ro.key, Line: line(), Column: name,
				Reason: fmt.Sprintf("the keys %s and %s both make the column %s (a nested key's column is its path joined with _): rename one", quoteValue(pathText(other)), quoteValue(pathText(path)), quoteValue(name))}
		}
		if k != jsonObject {
			c.byName[name] = path
		}
		i = len(c.names)
		c.index[path] = i
		c.paths = append(c.paths, path)
		c.names = append(c.names, name)
		c.kinds = append(c.kinds, 0)
		c.nums = append(c.nums, jsonNumbers{})
	}
	if all := (c.kinds[i] | k) &^ jsonNull; all&jsonObject != 0 && all != jsonObject {
		return 0, &FileError{Key: ro.key, Line: line(), Column: c.names[i],
			Reason: fmt.Sprintf("the key %s holds an object in one place and a value in another: a column is either an object's keys or one value", quoteValue(pathText(path)))}
	}
	c.kinds[i] |= k
	return i, nil
}

// jsonStream is the decompressed text of a JSON file as the tokenizer
// reads it: one top-level array of objects read as one stream of tokens,
// or lines, each read on its own (one object per line), so that a line
// that is not JSON can be set aside (skip-rows) and every error has its
// line without reading the text again.
type jsonStream struct {
	ro     *resolved
	src    Source
	gz     bool
	dec    *jsontext.Decoder
	read   *countingReader
	br     *bufio.Reader
	closer io.Closer
	bom    int64 // the length of a UTF-8 byte order mark skipped
	array  bool  // the file is one top-level array
	// Lines: the line of the object read last, and the rows (non-blank
	// lines) read so far.
	line, row int64
	lineBuf   bytes.Reader
	// path and text are readObject's buffers.
	path, text []byte
	// cur is the line nextObject found; pending that the tokenizer has
	// not been given it (readObject tries lines first).
	cur     []byte
	pending bool
	lines   lineScan
}

// openJSONStream opens the text of src (after a UTF-8 byte order mark) for
// the tokenizer. A first value '[' makes the file one array of objects;
// anything else objects one per line.
func openJSONStream(ro *resolved, src Source, gz bool) (*jsonStream, error) {
	r, closer, err := jsonText(ro, src, gz)
	if err != nil {
		return nil, err
	}
	read := &countingReader{r: r}
	br := bufio.NewReaderSize(read, 64<<10)
	s := &jsonStream{ro: ro, src: src, gz: gz, read: read, br: br, closer: closer}
	if head, _ := br.Peek(len(utf8BOM)); bytes.Equal(head, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
		s.bom = int64(len(utf8BOM))
	}
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i || err != nil {
			break
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			s.array = c == '['
			break
		}
		if i >= 64<<10 {
			break
		}
	}
	if s.array {
		s.dec = jsontext.NewDecoder(br)
		if _, err := s.dec.ReadToken(); err != nil {
			_ = closer.Close()
			return nil, s.syntaxError(err)
		}
	} else {
		s.dec = jsontext.NewDecoder(&s.lineBuf)
	}
	return s, nil
}

// jsonText is the decompressed text of src, lines bounded by ro.maxRecord.
func jsonText(ro *resolved, src Source, gz bool) (io.Reader, io.Closer, error) {
	var r io.Reader = io.NewSectionReader(src.R, 0, src.Size)
	var closer io.Closer = nopCloser{}
	if gz {
		zr, err := newGzipStream(r, src.Size)
		if err != nil {
			return nil, nil, jsonStreamError(ro, err)
		}
		r, closer = zr, zr
	}
	return newLineLimit(r, ro.maxRecord), closer, nil
}

func (s *jsonStream) close() { _ = s.closer.Close() }

// consumed is the number of decompressed bytes read from the text (the
// tokenizer's own buffer aside).
func (s *jsonStream) consumed() int64 { return s.read.n - int64(s.br.Buffered()) }

// jsonStreamError words an error of the stream under the tokenizer (gzip,
// a line beyond the record limit).
func jsonStreamError(ro *resolved, err error) error {
	var se *streamError
	if errors.As(err, &se) {
		return &FileError{Key: ro.key, Reason: se.reason, Err: se.err}
	}
	var fe *FileError
	if errors.As(err, &fe) {
		if fe.Key == "" {
			fe.Key = ro.key
		}
		return fe
	}
	return &FileError{Key: ro.key, Reason: "cannot read file", Err: err}
}

// readLine reads the next line (its line end kept); io.EOF after the last.
// A line within the reader's buffer is the reader's bytes, valid until
// its next read; a longer one, or the last without a line end, is copied
// into *buf.
func (s *jsonStream) readLine(buf *[]byte) ([]byte, error) {
	b, err := s.br.ReadSlice('\n')
	if err == nil {
		s.line++
		return b, nil
	}
	line := append((*buf)[:0], b...)
	defer func() { *buf = line[:0] }()
	for {
		switch {
		case err == nil:
			s.line++
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			b, err = s.br.ReadSlice('\n')
			line = append(line, b...)
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			s.line++
			return line, nil
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		}
		return nil, jsonStreamError(s.ro, err)
	}
}

// readRow reads the next line that is not blank (readLine's bytes, *buf
// its buffer), counting it as a row (s.row) of a file of one object per
// line; io.EOF after the last.
func (s *jsonStream) readRow(buf *[]byte) ([]byte, error) {
	for {
		line, err := s.readLine(buf)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			s.row++
			return line, nil
		}
	}
}

// nextObject advances to the next object and returns false at the end: in
// an array, its next element; else the next line that is not blank, whose
// first value must be an object (readObject checks that nothing follows
// it). A value that is not an object, and anything after a top-level
// array, are errors.
func (s *jsonStream) nextObject(buf *[]byte) (bool, error) {
	if !s.array {
		line, err := s.readRow(buf)
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		s.cur = line
		if i := skipJSONSpace(line, 0); i < len(line) && line[i] == '{' {
			s.pending = true // the tokenizer's PeekKind would say '{'
			return true, nil
		}
		s.pending = false
		s.lineBuf.Reset(line)
		s.dec.Reset(&s.lineBuf)
		switch k := s.dec.PeekKind(); k {
		case '{':
			return true, nil
		case 0:
			_, err := s.dec.ReadToken()
			return false, s.syntaxError(err)
		default:
			return false, s.refuse(0, fmt.Sprintf("%s where an object was expected: each line must be one JSON object", kindName(k)))
		}
	}
	k := s.dec.PeekKind()
	if k == ']' {
		if _, err := s.dec.ReadToken(); err != nil {
			return false, s.syntaxError(err)
		}
		if s.dec.PeekKind() != 0 {
			return false, s.refuse(s.nextOffset(), "a value after the end of the top-level array: a file is one array of objects, or one object per line")
		}
		return false, s.syntaxError(s.endError())
	}
	if k == 0 {
		if err := s.endError(); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return false, s.syntaxError(err)
		}
		return false, s.refuse(s.nextOffset(), "the file ends inside the top-level array (no closing ]): upload the whole file again")
	}
	if k != '{' {
		return false, s.refuse(s.nextOffset(), fmt.Sprintf("%s where an object was expected: each element of the top-level array must be one JSON object", kindName(k)))
	}
	s.row++
	return true, nil
}

// skipObject passes over the object nextObject found.
func (s *jsonStream) skipObject() error {
	if !s.array {
		return nil // the next line is read anyway
	}
	return s.syntaxError(s.dec.SkipValue())
}

// endError is the error that ended the token stream; nil at a clean end.
func (s *jsonStream) endError() error {
	_, err := s.dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nextOffset is the offset of the next value in an array (after PeekKind):
// the tokenizer's offset and the white space before the value.
func (s *jsonStream) nextOffset() int64 {
	buf := s.dec.UnreadBuffer()
	space := len(buf) - len(bytes.TrimLeft(buf, " \t\r\n,"))
	return s.dec.InputOffset() + int64(space)
}

// kindName names a kind of JSON value with its article.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	}
	return "a value"
}

// capValue cuts a value kept in an error (FileError.Value, a report) to
// what a message shows of it.
func capValue(v string) string {
	if len(v) <= maxValueInMessage {
		return v
	}
	return v[:valueCut(v)] + "..."
}

// syntaxError words a tokenizer error with the line it is on.
func (s *jsonStream) syntaxError(err error) error {
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return jsonStreamError(s.ro, err)
	}
	reason := se.Err.Error()
	pointer := string(se.JSONPointer)
	column := ""
	encoding := false
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		reason = "a key appears twice in one object (" + reason + "): which value is meant is not known"
	case strings.Contains(reason, "UTF-8"):
		reason, encoding = "invalid UTF-8: write the file as UTF-8", true
	case errors.Is(err, io.ErrUnexpectedEOF) && s.array:
		reason = "the file ends inside a JSON value: upload the whole file again"
	case errors.Is(err, io.ErrUnexpectedEOF) || s.atLineEnd(se.ByteOffset):
		reason = "the line ends inside a JSON value (" + s.oneLineRule() + ")"
	default:
		if word := s.nonNumberAt(se.ByteOffset); word != "" {
			reason = fmt.Sprintf("%s is not a JSON number (JSON has no NaN or Infinity): write null for no value, or the string %s to keep it as text", word, quoteValue(word))
			if word == "+" {
				reason = "a number with a plus sign is not a JSON number: write it without the sign"
			}
			if column = s.pointerColumn(se.JSONPointer); column != "" {
				pointer = ""
			}
		} else {
			reason = "not valid JSON: " + reason
		}
	}
	if pointer != "" {
		reason += " (at " + pointer + ")"
	}
	fe := s.refuse(se.ByteOffset, reason).(*FileError)
	fe.Column = column
	if encoding {
		// The file's encoding: no setting and no skipped row loads it.
		fe.brokenRecord, fe.unreadable = false, true
	}
	return fe
}

// keyError is syntaxError for the key of an object below the path parent
// (its keys joined with pathSeparator): invalid UTF-8 in it is worded
// with the object it is a key of and its byte offset.
func (s *jsonStream) keyError(err error, parent []byte) error {
	var se *jsontext.SyntacticError
	refused := s.syntaxError(err)
	fe, ok := refused.(*FileError)
	if !ok || !errors.As(err, &se) || !fe.unreadable || errors.Is(err, jsontext.ErrDuplicateName) {
		return refused
	}
	where := "a key of the line's object"
	if s.array {
		where = "a key of the object"
	}
	if len(parent) > 0 {
		where = "a key inside " + quoteValue(pathText(strings.TrimSuffix(string(parent), pathSeparator)))
	}
	at := fmt.Sprintf("byte offset %d of the line", se.ByteOffset)
	if s.array {
		at = fmt.Sprintf("byte offset %d of the file", s.bom+se.ByteOffset)
	}
	fe.Reason = fmt.Sprintf("invalid UTF-8 in %s (at %s): write the file as UTF-8", where, at)
	return fe
}

// oneLineRule is the rule a line of a file of objects one per line
// breaks when it ends inside a value; a .json file may be one array
// instead.
func (s *jsonStream) oneLineRule() string {
	name := strings.TrimSuffix(strings.ToLower(s.ro.key), ".gz")
	if strings.HasSuffix(name, ".json") {
		return "each object must be on one line, or wrap the objects in [ ] as one array"
	}
	return "each object must be on one line"
}

// atLineEnd reports whether byte offset off of the line being read (a
// file of objects one per line) is its line end: an error there is a
// value the line ends inside (a string cut short meets the line feed).
func (s *jsonStream) atLineEnd(off int64) bool {
	if s.array || off < 0 || off >= int64(len(s.cur)) {
		return false
	}
	return len(bytes.TrimLeft(s.cur[off:], "\r\n")) == 0
}

// nonNumberAt is NaN, Infinity, -Infinity or +Infinity where the tokenizer
// stopped at byte offset off (a value some writers put where JSON has
// none), "+" for a number with a plus sign; "" for any other text.
func (s *jsonStream) nonNumberAt(off int64) string {
	var text []byte
	var before byte
	if s.array {
		buf, start := s.dec.UnreadBuffer(), s.dec.InputOffset()
		if off < start || off-start >= int64(len(buf)) {
			return ""
		}
		text = buf[off-start:]
		if off > start {
			before = buf[off-start-1]
		}
	} else {
		if off < 0 || off >= int64(len(s.cur)) {
			return ""
		}
		text = s.cur[off:]
		if off > 0 {
			before = s.cur[off-1]
		}
	}
	if len(text) > 1 && (text[0] == '+' || text[0] == '-') {
		before, text = text[0], text[1:] // the tokenizer stopped at the sign
	}
	for _, w := range []string{"NaN", "Infinity"} {
		if !hasWord(text, 0, w) {
			continue
		}
		if before == '-' || before == '+' {
			return string(before) + w
		}
		return w
	}
	if before == '+' && len(text) > 0 && text[0] >= '0' && text[0] <= '9' {
		return "+" // a number with a plus sign
	}
	return ""
}

// pointerColumn is the column of the value at JSON pointer p (a top-level
// array's element index left out); "" when p names no value of an object.
func (s *jsonStream) pointerColumn(p jsontext.Pointer) string {
	var keys []string
	for tok := range p.Tokens() {
		keys = append(keys, tok)
	}
	if s.array && len(keys) > 0 {
		keys = keys[1:]
	}
	if len(keys) == 0 {
		return ""
	}
	return columnName(strings.Join(keys, pathSeparator))
}

// refuse is a FileError of the object being read: at its row and line
// (which skip-rows may set aside: a row whose structure is broken, which
// no setting changes), or in an array at byte offset off of the
// tokenizer's text (which refuses the file, unreadable whatever the
// settings).
func (s *jsonStream) refuse(off int64, reason string) error {
	if s.array {
		return &FileError{Key: s.ro.key, Reason: reason, Line: lineOfOffset(s.ro, s.src, s.gz, s.bom+off), unreadable: true}
	}
	return &FileError{Key: s.ro.key, Reason: reason, Row: s.row, Line: s.line, brokenRecord: s.row > 0}
}

// lineOfOffset is the line of byte offset off of the decompressed text of
// src; 0 when it cannot be read.
func lineOfOffset(ro *resolved, src Source, gz bool, off int64) int64 {
	return linesOfOffsets(ro, src, gz, []int64{off})[0]
}

// linesOfOffsets are the lines of the byte offsets offs (ascending) of the
// decompressed text of src (read again: only the errors and rejected rows
// of an array need them); 0 for those it cannot read.
func linesOfOffsets(ro *resolved, src Source, gz bool, offs []int64) []int64 {
	out := make([]int64, len(offs))
	r, closer, err := jsonText(ro, src, gz)
	if err != nil {
		return out
	}
	defer closer.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	var at int64
	line := int64(1)
	for i := 0; i < len(offs); {
		// b holds at most one line end, its last byte.
		b, err := br.ReadSlice('\n')
		end := at + int64(len(b))
		for ; i < len(offs) && offs[i] < end; i++ {
			out[i] = line
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line++
		}
		at = end
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			for ; i < len(offs); i++ {
				out[i] = line // at the end of the text: its last line
			}
		}
	}
	return out
}

// locateJSONRow is the line where object row (1-based, among every object
// of the file, set aside or not) starts; 0 when it cannot be found.
func locateJSONRow(ro *resolved, src Source, gz bool, row int64) int64 {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return 0
	}
	defer s.close()
	var buf []byte
	if !s.array {
		for {
			if _, err := s.readRow(&buf); err != nil {
				return 0
			}
			if s.row == row {
				return s.line
			}
		}
	}
	for {
		if ok, err := s.nextObject(&buf); !ok || err != nil {
			return 0
		}
		if s.row == row {
			return lineOfOffset(ro, src, gz, s.bom+s.nextOffset())
		}
		if err := s.skipObject(); err != nil {
			return 0
		}
	}
}

// readObject reads the object nextObject found, calling value for each
// scalar and each nested object (kind jsonObject) with its path (its keys
// joined with pathSeparator) and its text (a string's unquoted, a number's
// or a boolean's as written; nil for null and objects): both valid only
// during the call. On a line, nothing but white space may follow the
// object.
func (s *jsonStream) readObject(value func(path []byte, k jsonKind, text []byte) error) error {
	if !s.array && s.pending {
		s.pending = false
		if s.lines.scan(s.cur) {
			return s.lines.emit(s.cur, &s.path, value)
		}
		s.lineBuf.Reset(s.cur)
		s.dec.Reset(&s.lineBuf)
	}
	if _, err := s.dec.ReadToken(); err != nil { // {
		return s.syntaxError(err)
	}
	s.path = s.path[:0]
	if err := s.readMembers(value); err != nil {
		return err
	}
	if s.array {
		return nil
	}
	if k := s.dec.PeekKind(); k != 0 {
		return s.refuse(0, fmt.Sprintf("%s after the object on the same line: each line must be one JSON object", kindName(k)))
	}
	if err := s.endError(); err != nil {
		return s.syntaxError(err)
	}
	return nil
}

// readMembers reads the members of an object below s.path. Names and
// values are read as raw values (no string made for them: the tokenizer
// still checks them, duplicates among them and their UTF-8).
func (s *jsonStream) readMembers(value func(path []byte, k jsonKind, text []byte) error) error {
	base := len(s.path)
	for {
		if s.dec.PeekKind() == '}' {
			_, err := s.dec.ReadToken()
			return s.syntaxError(err)
		}
		name, err := s.dec.ReadValue()
		if err != nil {
			return s.keyError(err, s.path[:base])
		}
		if s.path, err = appendUnquoted(s.path[:base], name); err != nil {
			return s.syntaxError(err)
		}
		switch {
		case bytes.IndexByte(s.path[base:], 0) >= 0:
			return s.refuse(s.nextOffset(), "a key holds a NUL character (\\u0000): a column name cannot")
		case len(s.path) > maxJSONPath:
			return s.refuse(s.nextOffset(), fmt.Sprintf("a key's path (its keys and those of the objects around it) is longer than %d bytes: a column name that long is refused", maxJSONPath))
		}
		switch k := s.dec.PeekKind(); k {
		case '{':
			if s.dec.StackDepth() >= maxJSONDepth {
				return s.refuse(s.nextOffset(), fmt.Sprintf("objects nested more than %d deep: write flatter objects", maxJSONDepth))
			}
			if err := value(s.path, jsonObject, nil); err != nil {
				return err
			}
			if _, err := s.dec.ReadToken(); err != nil {
				return s.syntaxError(err)
			}
			s.path = append(s.path, pathSeparator...)
			if err := s.readMembers(value); err != nil {
				return err
			}
		case '[':
			fe := s.refuse(s.nextOffset(), "an array: arrays are not loaded (write one value per key, or one object per element)").(*FileError)
			fe.Column = columnName(string(s.path))
			return fe
		case 0:
			_, err := s.dec.ReadToken()
			return s.syntaxError(err)
		default:
			raw, err := s.dec.ReadValue()
			if err != nil {
				return s.syntaxError(err)
			}
			var kind jsonKind
			var text []byte
			switch k {
			case '"':
				kind = jsonString
				if s.text, err = appendUnquoted(s.text[:0], raw); err != nil {
					return s.syntaxError(err)
				}
				text = s.text
			case '0':
				kind, text = jsonNumber, raw
			case 't', 'f':
				kind, text = jsonBool, raw
			}
			if err := value(s.path, kind, text); err != nil {
				return err
			}
		}
	}
}

// appendUnquoted appends the text of the JSON string raw to dst.
func appendUnquoted(dst, raw []byte) ([]byte, error) {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw[1:len(raw)-1]...), nil
	}
	return jsontext.AppendUnquote(dst, raw)
}

// jsonValue is a value of an object as readObject reads it: its path and
// text at offsets of an arena (jsonValues).
type jsonValue struct {
	path, text, end int
	kind            jsonKind
}

// jsonValues are the values of one object, their bytes in one arena.
type jsonValues struct {
	arena []byte
	vals  []jsonValue
}

func (v *jsonValues) reset() { v.arena, v.vals = v.arena[:0], v.vals[:0] }

func (v *jsonValues) add(path []byte, k jsonKind, text []byte) error {
	p := len(v.arena)
	v.arena = append(v.arena, path...)
	t := len(v.arena)
	v.arena = append(v.arena, text...)
	v.vals = append(v.vals, jsonValue{path: p, text: t, end: len(v.arena), kind: k})
	return nil
}

func (v *jsonValues) path(x jsonValue) []byte { return v.arena[x.path:x.text] }
func (v *jsonValues) text(x jsonValue) []byte { return v.arena[x.text:x.end] }

// scanJSON is the first pass: every object checked, the columns learnt
// (a file of no object is ErrNoRows unless intoTable: a table exists)
// (jsonColumns), the objects kept counted. With skip-rows, a line that is
// not a JSON object, or whose values no column could take (an array, an
// integer beyond a long), is set aside (its row in dropped) in a file of
// one object per line; in an array it refuses the file.
func scanJSON(ro *resolved, src Source, gz bool, intoTable bool) (cols *jsonColumns, rows int64, dropped map[int64]bool, err error) {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return nil, 0, nil, err
	}
	defer s.close()
	cols = &jsonColumns{index: map[string]int{}, byName: map[string]string{}}
	var buf []byte
	var vals jsonValues
	for {
		ok, err := s.nextObject(&buf)
		if err == nil && ok {
			vals.reset()
			if err = s.readObject(vals.add); err == nil {
				err = checkJSONNumbers(ro, s, &vals)
			}
		}
		if err != nil {
			var fe *FileError
			if ro.skipRows == nil || !errors.As(err, &fe) || fe.Row == 0 {
				return nil, 0, nil, err
			}
			rule := RuleJSON
			if fe.Value != "" {
				rule = "type long"
			}
			if err := ro.skipRows.reject(fe, rule); err != nil {
				return nil, 0, nil, err
			}
			ro.skipRows.dropped = append(ro.skipRows.dropped, s.row)
			if dropped == nil {
				dropped = map[int64]bool{}
			}
			dropped[s.row] = true
			continue
		}
		if !ok {
			break
		}
		rows++
		for _, v := range vals.vals {
			if err := cols.addValue(ro, s, vals.path(v), v.kind, vals.text(v)); err != nil {
				return nil, 0, nil, err
			}
		}
	}
	if rows == 0 && len(dropped) == 0 && !intoTable {
		// As a CSV file of a header alone: it cannot create a table, and
		// waits for one (ingest), or is valid (upload --validate).
		return nil, 0, nil, &FileError{Key: ro.key, Reason: "no JSON objects (the file holds an empty array or blank lines)", Err: ErrNoRows}
	}
	// A key that only ever held objects has no column of its own.
	kept := &jsonColumns{index: map[string]int{}}
	for i, path := range cols.paths {
		name := cols.names[i]
		if cols.kinds[i]&^jsonNull == jsonObject {
			continue
		}
		if n := cols.nums[i]; n.fraction && n.inexact != "" && ro.skipRows == nil {
			// A column of numbers is a double: each must be one exactly
			// (with skip-rows, the conversion sets such a row aside).
			return nil, 0, nil, &FileError{Key: ro.key, Row: n.inexactRow, Line: locateJSONRow(ro, src, gz, n.inexactRow), Column: name, Value: capValue(n.inexact),
				Reason: numberReason(n.inexact, arrow.PrimitiveTypes.Float64, n.why)}
		}
		kept.index[path] = len(kept.names)
		kept.paths = append(kept.paths, path)
		kept.names = append(kept.names, name)
		kept.kinds = append(kept.kinds, cols.kinds[i]&^jsonNull)
	}
	if len(kept.names) == 0 && rows > 0 {
		return nil, 0, nil, &FileError{Key: ro.key, Reason: "the objects hold no values (only empty objects)"}
	}
	return kept, rows, dropped, nil
}

// checkJSONNumbers refuses an integer of the object beyond a long.
func checkJSONNumbers(ro *resolved, s *jsonStream, vals *jsonValues) error {
	for _, v := range vals.vals {
		text := vals.text(v)
		// Every integer of at most 18 digits fits a long.
		if v.kind != jsonNumber || len(text) < 19 || bytes.ContainsAny(text, ".eE") {
			continue
		}
		if _, err := strconv.ParseInt(string(text), 10, 64); err != nil {
			fe := s.refuse(0, fmt.Sprintf("the integer %s does not fit a long (-9223372036854775808 to 9223372036854775807): write it as a string to keep it as text", quoteValue(string(text)))).(*FileError)
			if s.array {
				fe.Line = locateJSONRow(ro, s.src, s.gz, s.row)
			}
			fe.Column, fe.Value = columnName(string(vals.path(v))), capValue(string(text))
			return fe
		}
	}
	return nil
}

// addValue records a value of the object at row s.row.
func (c *jsonColumns) addValue(ro *resolved, s *jsonStream, path []byte, k jsonKind, text []byte) error {
	if k == 0 {
		k = jsonNull // a null: a column all the same
	}
	i, ok := c.index[string(path)]
	if !ok || c.kinds[i]|k != c.kinds[i] {
		row := s.row
		var err error
		i, err = c.add(ro, string(path), k, func() int64 {
			if s.array {
				return locateJSONRow(ro, s.src, s.gz, row)
			}
			return s.line
		})
		if err != nil {
			return err
		}
	}
	if k != jsonNumber {
		return nil
	}
	n := &c.nums[i]
	whole := !bytes.ContainsAny(text, ".eE")
	n.fraction = n.fraction || !whole
	// A number of at most 15 digits without an exponent is a double's
	// value exactly (a double holds 15 significant digits); others are
	// checked by the number rules.
	if n.inexact == "" && (len(text) > 15 || bytes.ContainsAny(text, "eE")) {
		if _, problem := parseFloatText(string(text), 64); problem != "" {
			n.inexact, n.why, n.inexactRow = capValue(string(text)), problem, s.row
		}
	}
	return nil
}

// jsonSource is the second pass: batches of text columns (every column
// utf8, null where a key is null or missing).
type jsonSource struct {
	ro      *resolved
	s       *jsonStream
	cols    *jsonColumns
	sc      *arrow.Schema
	rows    int64
	total   int64
	dropped map[int64]bool // the rows scanJSON set aside
	buf     []byte
	// fast, when set, reads the file in one pass into the table's
	// columns (openJSONInto); total is then not known.
	fast *jsonInto
	memo []pathMemo   // by the place of a value in its object
	text []textColumn // the batch being read
}

// jsonInto maps the paths of a file read in one pass to the columns of
// the table's schema: learnt path by path, each column taking one path.
type jsonInto struct {
	byName map[string]int // the table's columns
	byPath map[string]int // the paths seen: their column, -1 for an object's
	owner  []string       // the path each column took
}

// errJSONScan ends a one-pass read of a JSON file (openJSONInto) that
// finds what only the two passes judge: a key the table does not have, two
// keys of one column, an object where a column is, an integer beyond a
// long, a file of no objects. The file is read again with both passes.
var errJSONScan = errors.New("the file needs both passes")

// openJSONInto opens a JSON file of a table whose schema is known (target)
// for one pass: the source columns are the table's, and a key that is not
// one of them stops the read (errJSONScan) rather than being learnt by a
// first pass. Each value is read once instead of twice.
func openJSONInto(ro *resolved, src Source, gz bool, target *arrow.Schema) (batchSource, error) {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, target.NumFields())
	in := &jsonInto{byName: make(map[string]int, len(fields)), byPath: map[string]int{}, owner: make([]string, len(fields))}
	cols := &jsonColumns{}
	for i, f := range target.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true}
		in.byName[f.Name] = i
		cols.names = append(cols.names, f.Name)
	}
	return &jsonSource{ro: ro, s: s, cols: cols, sc: arrow.NewSchema(fields, nil), fast: in}, nil
}

// column is the column of the value at path, of kind k: -1 for an
// object's path; errJSONScan where the one pass cannot judge.
func (in *jsonInto) column(path []byte, k jsonKind, text []byte) (int, error) {
	i, ok := in.byPath[string(path)]
	if !ok {
		p := string(path)
		c, isColumn := in.byName[columnName(p)]
		switch {
		case k == jsonObject && isColumn, k != jsonObject && !isColumn,
			k != jsonObject && in.owner[c] != "" && in.owner[c] != p:
			return 0, errJSONScan
		case k == jsonObject:
			c = -1
		default:
			in.owner[c] = p
		}
		in.byPath[p], i = c, c
	}
	return i, in.check(i, k, text)
}

// check is errJSONScan where the value of kind k and text cannot be one
// of column i (column's answer for its path).
func (in *jsonInto) check(i int, k jsonKind, text []byte) error {
	if (i < 0) != (k == jsonObject) {
		return errJSONScan
	}
	if k == jsonNumber && len(text) >= 19 && !bytes.ContainsAny(text, ".eE") {
		if _, err := strconv.ParseInt(string(text), 10, 64); err != nil {
			return errJSONScan
		}
	}
	return nil
}

// pathMemo is the column of the path an object's value at one place (its
// first value, its second...) had last: objects of a file mostly hold
// their keys in one order, so that a path is mostly found by comparing it
// with the last one's.
type pathMemo struct {
	path []byte
	col  int
	ok   bool
}

// maxPathMemos bounds the places of an object remembered.
const maxPathMemos = 1024

// openJSON checks a JSON file whole (scanJSON) and opens it for its
// batches. Where a schema is inferred, a column of JSON strings alone
// (the time column aside) is given the string type in ro.columns.
func openJSON(ro *resolved, src Source, gz bool, target *arrow.Schema) (batchSource, error) {
	cols, rows, dropped, err := scanJSON(ro, src, gz, target != nil)
	if err != nil {
		return nil, err
	}
	if rows == 0 && len(dropped) == 0 {
		// No object (an empty array, blank lines): 0 rows of the table's
		// columns, as a CSV file of a header alone.
		return openJSONInto(ro, src, gz, target)
	}
	names, err := renameColumns(ro, cols.names) // a source profile's time column
	if err != nil {
		return nil, err
	}
	ro.columns = maps.Clone(ro.columns) // the caller's map stays as it is
	fields := make([]arrow.Field, len(names))
	for i, name := range names {
		fields[i] = arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
		if cols.kinds[i] == jsonString && !isTimeColumnName(name) {
			if _, given := ro.columns[name]; !given {
				if ro.columns == nil {
					ro.columns = map[string]arrow.DataType{}
				}
				ro.columns[name] = arrow.BinaryTypes.String
			}
		}
	}
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return nil, err
	}
	return &jsonSource{ro: ro, s: s, cols: cols, sc: arrow.NewSchema(fields, nil), total: rows, dropped: dropped}, nil
}

// isTimeColumnName reports a name the time column may have when it is
// inferred (timeColumnNames).
func isTimeColumnName(name string) bool {
	for _, n := range timeColumnNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

func (j *jsonSource) schema() *arrow.Schema { return j.sc }

func (j *jsonSource) consumed() int64 { return j.s.consumed() }

func (j *jsonSource) close() { j.s.close() }

func (j *jsonSource) next() (arrow.RecordBatch, error) {
	n := int64(j.ro.batchRows)
	if j.fast == nil {
		if j.rows >= j.total {
			return nil, nil
		}
		n = min(n, j.total-j.rows)
	}
	if cut := pieceText(j.ro); cut > 0 {
		// Rows are cut by bytes too: a batch of long objects stays near
		// a batchesPerPiece part of a piece.
		n = min(n, max(1, cut/max(1, j.s.consumed()/max(1, j.rows))))
	}
	if len(j.text) != len(j.cols.names) {
		j.text = make([]textColumn, len(j.cols.names))
	}
	bs := j.text
	for i := range bs {
		bs[i].reset()
	}
	set := make([]bool, len(bs))
	start := j.s.consumed()
	var done int64
	full := false // a column holds maxBatchText bytes
	for done < n && !full {
		ok, err := j.s.nextObject(&j.buf)
		if err != nil && j.dropped[j.s.row] {
			continue // a line that is no object, set aside by scanJSON
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if j.dropped[j.s.row] {
			if err := j.s.skipObject(); err != nil {
				return nil, err
			}
			continue
		}
		done++
		if done == 17 {
			// Room for the rows the batch is expected to hold: n, or
			// fewer where the bytes left hold fewer like those so far.
			expect := n
			if !j.s.gz {
				left := j.s.src.Size - j.s.consumed()
				expect = min(n, 16+left*16/max(1, j.s.consumed()-start)+1)
			}
			for i := range bs {
				bs[i].reserve(int(expect))
			}
		}
		clear(set)
		at := 0
		if err := j.s.readObject(func(path []byte, k jsonKind, text []byte) error {
			var i int
			var ok bool
			m := at
			at++
			hit := m < len(j.memo) && bytes.Equal(j.memo[m].path, path)
			switch {
			case hit:
				i, ok = j.memo[m].col, j.memo[m].ok
				if j.fast != nil {
					if err := j.fast.check(i, k, text); err != nil {
						return err
					}
				}
			case j.fast != nil:
				var err error
				if i, err = j.fast.column(path, k, text); err != nil {
					return err
				}
				ok = i >= 0
			default:
				i, ok = j.cols.index[string(path)]
			}
			if !hit && m < maxPathMemos {
				if m >= len(j.memo) {
					j.memo = append(j.memo, make([]pathMemo, m+1-len(j.memo))...)
				}
				j.memo[m] = pathMemo{path: append(j.memo[m].path[:0], path...), col: i, ok: ok}
			}
			if !ok || k == jsonObject {
				return nil // a key of objects only
			}
			set[i] = true
			bs[i].add(text, k == 0)
			full = full || len(bs[i].data) >= maxBatchText
			return nil
		}); err != nil {
			return nil, err
		}
		for i, ok := range set {
			if !ok {
				bs[i].add(nil, true)
			}
		}
	}
	if done == 0 {
		// No object in the whole file (an empty array, blank lines): 0
		// rows for the table, as a CSV file of a header alone.
		return nil, nil
	}
	arrs := make([]arrow.Array, len(bs))
	for i := range bs {
		arrs[i] = bs[i].array(j.ro.mem)
	}
	rec := array.NewRecordBatch(j.sc, arrs, done)
	for _, a := range arrs {
		a.Release()
	}
	j.rows += done
	return rec, nil
}

// writeJSONRejects writes the objects of rows (in file order) as written,
// one per line, and fills in their lines.
func writeJSONRejects(ro *resolved, src Source, gz bool, rows []RejectedRow, w io.Writer) error {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return err
	}
	defer s.close()
	bw := bufio.NewWriter(w)
	var offs []int64
	var buf []byte
	for next := 0; next < len(rows); {
		var v []byte
		if s.array {
			ok, err := s.nextObject(&buf)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("write rejects: row %d is not in %s", rows[next].Row, ro.key)
			}
			if s.row != rows[next].Row {
				if err := s.skipObject(); err != nil {
					return err
				}
				continue
			}
			offs = append(offs, s.bom+s.nextOffset())
			raw, err := s.dec.ReadValue()
			if err != nil {
				return s.syntaxError(err)
			}
			// On one line, so that the rejects file is JSON Lines.
			compact := jsontext.Value(bytes.Clone(raw))
			if err := compact.Compact(); err != nil {
				return s.syntaxError(err)
			}
			v = compact
		} else {
			line, err := s.readRow(&buf)
			if err != nil {
				return fmt.Errorf("write rejects: row %d is not in %s: %w", rows[next].Row, ro.key, err)
			}
			if s.row != rows[next].Row {
				continue
			}
			rows[next].Line = s.line
			v = bytes.TrimRight(line, "\r\n")
		}
		if _, err := bw.Write(v); err != nil {
			return err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		next++
	}
	for i, line := range linesOfOffsets(ro, src, gz, offs) {
		rows[i].Line = line
	}
	return bw.Flush()
}
