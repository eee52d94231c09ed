package decode

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Iceberg strings are UTF-8 (Iceberg spec, "Primitive Types"): string values
// from CSV text and from Parquet string columns are checked, and a value
// that is not valid UTF-8 refuses its file, naming the row, the column and
// the byte offset. Nothing is transcoded: a Latin-1 or Windows-1252 export
// must be saved as UTF-8 first.

// utf8Hint ends every invalid UTF-8 reason.
const utf8Hint = "strings must be UTF-8: save or export the file as UTF-8 (a file with bytes like this is often Latin-1 or Windows-1252)"

// utf8Problem returns the reason a value s is refused, or "" when it is
// valid UTF-8.
func utf8Problem(s string) string {
	off, ok := invalidUTF8At(s)
	if ok {
		return ""
	}
	return fmt.Sprintf("value %s is not valid UTF-8 (byte 0x%02x at byte offset %d of the value); %s", quoteValue(s), s[off], off, utf8Hint)
}

// invalidUTF8At returns the byte offset of the first byte of s that is not
// part of a valid UTF-8 character; ok is true when there is none.
func invalidUTF8At(s string) (off int, ok bool) {
	if utf8.ValidString(s) {
		return 0, true
	}
	for off < len(s) {
		r, n := utf8.DecodeRuneInString(s[off:])
		if r == utf8.RuneError && n <= 1 {
			return off, false
		}
		off += n
	}
	return 0, true
}

// nulProblem returns the reason a text value holding a NUL byte is
// refused, or "": CSV text has no NUL bytes; one is binary content (a
// file's start is checked for it, see checkTextStart, and the rest here).
func nulProblem(s string) string {
	i := strings.IndexByte(s, 0)
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("value %s holds a NUL byte at byte offset %d: binary content, not text", quoteValue(s), i)
}

// textProblem is utf8Problem, and nulProblem for values of text files.
func textProblem(ro *resolved, s string) string {
	if r := utf8Problem(s); r != "" || !ro.text {
		return r
	}
	return nulProblem(s)
}

// utf8PassThrough is passThrough for string columns of the target's type
// (string or large_string), checking every value (textProblem). A valid
// concatenation of the values is valid value by value when no value starts
// inside a character, so the common case is one utf8.Valid (and for text
// files one search for a NUL byte) over the data buffer.
func utf8PassThrough(ro *resolved, col string, dst arrow.DataType) convertFn {
	relabel := passThrough(dst)
	return func(arr arrow.Array, rowBase int64) (arrow.Array, error) {
		if i, reason := firstBadText(ro, arr); i >= 0 {
			get := textValues(arr)
			return nil, &FileError{Key: ro.key, Row: rowBase + int64(i) + 1, Column: col, Value: get(i), Reason: reason}
		}
		return relabel(arr, rowBase)
	}
}

// firstBadText returns the index of the first value of a string or
// large_string array that textProblem refuses and its reason, or -1.
func firstBadText(ro *resolved, arr arrow.Array) (int, string) {
	var data []byte
	var start func(i int) int64 // offset of value i in data
	switch a := arr.(type) {
	case *array.String:
		data, start = a.ValueBytes(), func(i int) int64 { return int64(a.ValueOffset(i) - a.ValueOffset(0)) }
	case *array.LargeString:
		data, start = a.ValueBytes(), func(i int) int64 { return a.ValueOffset(i) - a.ValueOffset(0) }
	default:
		return -1, ""
	}
	if utf8.Valid(data) && (!ro.text || bytes.IndexByte(data, 0) < 0) {
		split := false
		for i := 1; i < arr.Len() && !split; i++ {
			if o := start(i); o < int64(len(data)) && data[o]&0xC0 == 0x80 {
				split = true
			}
		}
		if !split {
			return -1, ""
		}
	}
	get := textValues(arr)
	for i := 0; i < arr.Len(); i++ {
		if arr.IsNull(i) {
			continue
		}
		if reason := textProblem(ro, get(i)); reason != "" {
			return i, reason
		}
	}
	return -1, ""
}
