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
// A file is read twice (the Source is a file on disk): the first pass
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
// reads it, with the bytes read counted (consumed).
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
}

// openJSONStream opens the text of src (after a UTF-8 byte order mark) for
// the tokenizer. A first value '[' makes the file one array of objects;
// anything else a stream of objects.
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
	s.dec = jsontext.NewDecoder(br)
	if s.dec.PeekKind() == '[' {
		s.array = true
		if _, err := s.dec.ReadToken(); err != nil {
			_ = closer.Close()
			return nil, s.syntaxError(err)
		}
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

// consumed is the number of decompressed bytes the tokenizer took.
func (s *jsonStream) consumed() int64 { return s.dec.InputOffset() + s.bom }

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

// nextObject advances to the next top-level object and returns false at
// the end. A value that is not an object, and anything after a top-level
// array, are errors.
func (s *jsonStream) nextObject() (bool, error) {
	k := s.dec.PeekKind()
	if s.array && k == ']' {
		if _, err := s.dec.ReadToken(); err != nil {
			return false, s.syntaxError(err)
		}
		if s.dec.PeekKind() != 0 {
			return false, s.refuse(s.nextOffset(), "a value after the end of the top-level array: a file is one array of objects, or one object per line")
		}
		return false, s.syntaxError(s.endError())
	}
	if k == 0 {
		err := s.endError()
		if s.array && (err == nil || errors.Is(err, io.ErrUnexpectedEOF)) {
			return false, s.refuse(s.nextOffset(), "the file ends inside the top-level array (no closing ]): upload the whole file again")
		}
		return false, s.syntaxError(err)
	}
	if k != '{' {
		return false, s.refuse(s.nextOffset(), fmt.Sprintf("a %s where an object was expected: each line (or each element of the top-level array) must be one JSON object", kindName(k)))
	}
	return true, nil
}

// endError is the error that ended the token stream; nil at a clean end.
func (s *jsonStream) endError() error {
	_, err := s.dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nextOffset is the offset of the next value (after PeekKind): the
// tokenizer's offset and the white space before the value.
func (s *jsonStream) nextOffset() int64 {
	buf := s.dec.UnreadBuffer()
	space := len(buf) - len(bytes.TrimLeft(buf, " \t\r\n"))
	return s.dec.InputOffset() + int64(space)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '[':
		return "array"
	}
	return "value"
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
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		reason = "a key appears twice in one object (" + reason + "): which value is meant is not known"
	case strings.Contains(reason, "UTF-8"):
		reason = "invalid UTF-8 (" + reason + "): write the file as UTF-8"
	case errors.Is(err, io.ErrUnexpectedEOF):
		reason = "the file ends inside a JSON value: upload the whole file again"
	default:
		reason = "not valid JSON: " + reason
	}
	if p := string(se.JSONPointer); p != "" {
		reason += " (at " + p + ")"
	}
	return s.refuse(se.ByteOffset, reason)
}

// refuse is a FileError at byte offset off of the tokenizer's text, with
// its line.
func (s *jsonStream) refuse(off int64, reason string) error {
	fe := &FileError{Key: s.ro.key, Reason: reason}
	fe.Line = lineOfOffset(s.ro, s.src, s.gz, s.bom+off)
	return fe
}

// lineOfOffset is the line of byte offset off of the decompressed text of
// src; 0 when it cannot be read.
func lineOfOffset(ro *resolved, src Source, gz bool, off int64) int64 {
	return linesOfOffsets(ro, src, gz, []int64{off})[0]
}

// locateJSONRow is the line where object row (1-based) of src starts; 0
// when it cannot be found.
func locateJSONRow(ro *resolved, src Source, gz bool, row int64) int64 {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return 0
	}
	defer s.close()
	for i := int64(1); ; i++ {
		if k := s.dec.PeekKind(); k != '{' {
			return 0
		}
		if i == row {
			return lineOfOffset(ro, src, gz, s.bom+s.nextOffset())
		}
		if err := s.dec.SkipValue(); err != nil {
			return 0
		}
	}
}

// readObject reads the object the stream is at, calling value for each
// scalar (kind and text; a null has kind 0) and each nested object (kind
// jsonObject) with its path (its keys joined with pathSeparator).
func (s *jsonStream) readObject(value func(name string, k jsonKind, text string) error) error {
	if _, err := s.dec.ReadToken(); err != nil { // {
		return s.syntaxError(err)
	}
	return s.readMembers("", value)
}

func (s *jsonStream) readMembers(prefix string, value func(name string, k jsonKind, text string) error) error {
	for {
		if s.dec.PeekKind() == '}' {
			_, err := s.dec.ReadToken()
			return s.syntaxError(err)
		}
		tok, err := s.dec.ReadToken()
		if err != nil {
			return s.syntaxError(err)
		}
		name := prefix + tok.String()
		switch k := s.dec.PeekKind(); k {
		case '{':
			if err := value(name, jsonObject, ""); err != nil {
				return err
			}
			if _, err := s.dec.ReadToken(); err != nil {
				return s.syntaxError(err)
			}
			if err := s.readMembers(name+pathSeparator, value); err != nil {
				return err
			}
		case '[':
			return &FileError{Key: s.ro.key, Line: lineOfOffset(s.ro, s.src, s.gz, s.bom+s.nextOffset()), Column: columnName(name),
				Reason: "an array: arrays are not loaded (write one value per key, or one object per element)"}
		case 0:
			_, err := s.dec.ReadToken()
			return s.syntaxError(err)
		default:
			tok, err := s.dec.ReadToken()
			if err != nil {
				return s.syntaxError(err)
			}
			var kind jsonKind
			switch k {
			case '"':
				kind = jsonString
			case '0':
				kind = jsonNumber
			case 't', 'f':
				kind = jsonBool
			}
			text := ""
			if kind != 0 {
				text = tok.String()
			}
			if err := value(name, kind, text); err != nil {
				return err
			}
		}
	}
}

// scanJSON is the first pass: every object checked, the columns learnt
// (jsonColumns), the rows counted.
func scanJSON(ro *resolved, src Source, gz bool) (*jsonColumns, int64, error) {
	s, err := openJSONStream(ro, src, gz)
	if err != nil {
		return nil, 0, err
	}
	defer s.close()
	cols := &jsonColumns{index: map[string]int{}, byName: map[string]string{}}
	var rows int64
	for {
		ok, err := s.nextObject()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		rows++
		line := func() int64 { return locateJSONRow(ro, src, gz, rows) }
		if err := s.readObject(func(path string, k jsonKind, text string) error {
			if k == 0 { // null: a column all the same
				k = jsonNull
			}
			i, err := cols.add(ro, path, k, line)
			if err != nil || k != jsonNumber {
				return err
			}
			n := &cols.nums[i]
			whole := !strings.ContainsAny(text, ".eE")
			if whole {
				if _, err := strconv.ParseInt(text, 10, 64); err != nil {
					return &FileError{Key: ro.key, Line: line(), Column: columnName(path), Value: text,
						Reason: fmt.Sprintf("the integer %s does not fit a long (-9223372036854775808 to 9223372036854775807): write it as a string to keep it as text", text)}
				}
			}
			n.fraction = n.fraction || !whole
			if n.inexact == "" && (!whole || len(text) > 15) {
				if _, problem := parseFloatText(text, 64); problem != "" {
					n.inexact, n.why, n.inexactRow = text, problem, rows
				}
			}
			return nil
		}); err != nil {
			return nil, 0, err
		}
	}
	if rows == 0 {
		return nil, 0, &FileError{Key: ro.key, Reason: "no JSON objects: the file is empty or holds an empty array"}
	}
	// A key that only ever held objects has no column of its own.
	kept := &jsonColumns{index: map[string]int{}}
	for i, path := range cols.paths {
		name := cols.names[i]
		if cols.kinds[i]&^jsonNull == jsonObject {
			continue
		}
		if n := cols.nums[i]; n.fraction && n.inexact != "" {
			// A column of numbers is a double: each must be one exactly.
			return nil, 0, &FileError{Key: ro.key, Row: n.inexactRow, Line: locateJSONRow(ro, src, gz, n.inexactRow), Column: name, Value: n.inexact,
				Reason: numberReason(n.inexact, arrow.PrimitiveTypes.Float64, n.why)}
		}
		kept.index[path] = len(kept.names)
		kept.paths = append(kept.paths, path)
		kept.names = append(kept.names, name)
		kept.kinds = append(kept.kinds, cols.kinds[i]&^jsonNull)
	}
	if len(kept.names) == 0 {
		return nil, 0, &FileError{Key: ro.key, Reason: "the objects hold no values (only empty objects)"}
	}
	return kept, rows, nil
}

// jsonSource is the second pass: batches of text columns (every column
// utf8, null where a key is null or missing).
type jsonSource struct {
	ro    *resolved
	s     *jsonStream
	cols  *jsonColumns
	sc    *arrow.Schema
	rows  int64
	total int64
}

// openJSON checks a JSON file whole (scanJSON) and opens it for its
// batches. Where a schema is inferred, a column of JSON strings alone
// (the time column aside) is given the string type in ro.columns.
func openJSON(ro *resolved, src Source, gz bool) (batchSource, error) {
	cols, rows, err := scanJSON(ro, src, gz)
	if err != nil {
		return nil, err
	}
	ro.columns = maps.Clone(ro.columns) // the caller's map stays as it is
	fields := make([]arrow.Field, len(cols.names))
	for i, name := range cols.names {
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
	return &jsonSource{ro: ro, s: s, cols: cols, sc: arrow.NewSchema(fields, nil), total: rows}, nil
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
	if j.rows >= j.total {
		return nil, nil
	}
	n := min(int64(j.ro.batchRows), j.total-j.rows)
	if cut := pieceText(j.ro); cut > 0 {
		// Rows are cut by bytes too: a batch of long objects stays near
		// a batchesPerPiece part of a piece.
		n = min(n, max(1, cut/max(1, j.s.consumed()/max(1, j.rows))))
	}
	bs := make([]*array.StringBuilder, len(j.cols.names))
	for i := range bs {
		bs[i] = array.NewStringBuilder(j.ro.mem)
		bs[i].Reserve(int(n))
	}
	defer func() {
		for _, b := range bs {
			b.Release()
		}
	}()
	set := make([]bool, len(bs))
	var done int64
	for ; done < n; done++ {
		ok, err := j.s.nextObject()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		clear(set)
		if err := j.s.readObject(func(path string, k jsonKind, text string) error {
			i, ok := j.cols.index[path]
			if !ok || k == jsonObject {
				return nil // a key of objects only
			}
			set[i] = true
			if k == 0 {
				bs[i].AppendNull()
			} else {
				bs[i].Append(text)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for i, ok := range set {
			if !ok {
				bs[i].AppendNull()
			}
		}
	}
	if done == 0 {
		return nil, nil
	}
	arrs := make([]arrow.Array, len(bs))
	for i, b := range bs {
		arrs[i] = b.NewArray()
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
	offs := make([]int64, 0, len(rows))
	next := 0
	for row := int64(1); next < len(rows); row++ {
		ok, err := s.nextObject()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("write rejects: row %d is not in %s", rows[next].Row, ro.key)
		}
		if row != rows[next].Row {
			if err := s.dec.SkipValue(); err != nil {
				return s.syntaxError(err)
			}
			continue
		}
		offs = append(offs, s.bom+s.nextOffset())
		v, err := s.dec.ReadValue()
		if err != nil {
			return s.syntaxError(err)
		}
		if _, err := bw.Write(append(v, '\n')); err != nil {
			return err
		}
		next++
	}
	for i, line := range linesOfOffsets(ro, src, gz, offs) {
		rows[i].Line = line
	}
	return bw.Flush()
}

// linesOfOffsets are the lines of the byte offsets offs (ascending) of the
// decompressed text of src (read again: only errors and rejected rows need
// them); 0 for those it cannot read.
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
