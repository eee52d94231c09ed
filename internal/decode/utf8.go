package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Iceberg strings are UTF-8 (Iceberg spec, "Primitive Types"): string values
// from CSV text and from Parquet string columns are checked, and a value
// that is not valid UTF-8 refuses its file, naming the row, the column, the
// byte offset and what the bytes are: the byte sequences UTF-8 allows are
// those of the Unicode Standard, section 3.9, table 3-7, and the reason
// names the near misses other encoders write (Java's "modified UTF-8" and
// CESU-8, overlong forms, encoded surrogates, code points beyond U+10FFFF,
// a character cut off) apart from bytes of another encoding (Latin-1,
// Windows-1252). Nothing is transcoded.

// utf8Hint ends the reason of bytes that look like another encoding.
const utf8Hint = "strings must be UTF-8: save or export the file as UTF-8 (\"CSV UTF-8\" in Excel)"

// utf8Problem returns the reason a value s is refused, or "" when it is
// valid UTF-8.
func utf8Problem(s string) string {
	off, ok := invalidUTF8At(s)
	if ok {
		return ""
	}
	return fmt.Sprintf("value %s is not valid UTF-8: %s", quoteValue(s), invalidUTF8(s, off))
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

// Hints of invalidUTF8 for bytes a UTF-8 encoder of another kind wrote.
const (
	javaUTF8Hint = "write the file with a standard UTF-8 encoder (in Java an OutputStreamWriter or Files.newBufferedWriter with StandardCharsets.UTF_8, not DataOutputStream.writeUTF, JNI's NewStringUTF output or CESU-8)"
	badUTF8Hint  = "the writer's UTF-8 encoder is broken: strings must be UTF-8, every character in its shortest form"
)

// invalidUTF8 says what the bytes at off of s are (off from
// invalidUTF8At), their offset and what to do.
func invalidUTF8(s string, off int) string {
	b := s[off:]
	cont := func(i int) bool { return i < len(b) && b[i]&0xc0 == 0x80 }
	bytesAt := func(n int) string { return fmt.Sprintf("the bytes % X at byte offset %d", b[:n], off) }
	shortest := func(r rune) string { return fmt.Sprintf("UTF-8 writes %U as % X", r, utf8.AppendRune(nil, r)) }
	switch {
	case len(b) >= 2 && b[0] == 0xc0 && b[1] == 0x80:
		return bytesAt(2) + ` are Java's "modified UTF-8" for U+0000 (NUL; UTF-8 writes it as the byte 00); ` + javaUTF8Hint
	case len(b) >= 6 && b[0] == 0xed && b[1]&0xf0 == 0xa0 && cont(2) && b[3] == 0xed && b[4]&0xf0 == 0xb0 && cont(5):
		r := utf16.DecodeRune(surrogateAt(b), surrogateAt(b[3:]))
		return fmt.Sprintf(`%s are %U written as a UTF-16 surrogate pair, each half in 3 bytes (CESU-8, as Java's "modified UTF-8" writes characters beyond U+FFFF); %s; %s`,
			bytesAt(6), r, shortest(r), javaUTF8Hint)
	case len(b) >= 3 && b[0] == 0xed && b[1] >= 0xa0 && cont(1) && cont(2):
		return fmt.Sprintf(`%s encode the UTF-16 surrogate %U, which is no character (half of a pair, as CESU-8 and Java's "modified UTF-8" write them, or a lone half); %s`,
			bytesAt(3), surrogateAt(b), badUTF8Hint)
	case (b[0] == 0xc0 || b[0] == 0xc1) && cont(1):
		return overlong(bytesAt(2), rune(b[0]&0x1f)<<6|rune(b[1]&0x3f), shortest)
	case b[0] == 0xe0 && len(b) >= 3 && b[1] < 0xa0 && cont(1) && cont(2):
		return overlong(bytesAt(3), rune(b[1]&0x3f)<<6|rune(b[2]&0x3f), shortest)
	case b[0] == 0xf0 && len(b) >= 4 && b[1] < 0x90 && cont(1) && cont(2) && cont(3):
		return overlong(bytesAt(4), rune(b[1]&0x3f)<<12|rune(b[2]&0x3f)<<6|rune(b[3]&0x3f), shortest)
	case b[0] >= 0xf4 && b[0] <= 0xf7 && len(b) >= 4 && cont(1) && cont(2) && cont(3):
		r := rune(b[0]&0x07)<<18 | rune(b[1]&0x3f)<<12 | rune(b[2]&0x3f)<<6 | rune(b[3]&0x3f)
		return fmt.Sprintf("%s would be %U, beyond U+10FFFF, the last Unicode code point; %s", bytesAt(4), r, badUTF8Hint)
	case b[0] >= 0xc2 && b[0] <= 0xf4 && cont(1):
		// A lead byte and fewer continuation bytes than it needs.
		n := 1
		for cont(n) {
			n++
		}
		if n == len(b) {
			return fmt.Sprintf("the value ends inside a character: %s begin a character of %d bytes that is cut off (a value cut at a number of bytes, or a character split between two values)",
				bytesAt(n), utf8Length(b[0]))
		}
		return fmt.Sprintf("%s begin a character of %d bytes that is cut off after %d; %s", bytesAt(n), utf8Length(b[0]), n, badUTF8Hint)
	}
	what := fmt.Sprintf("the byte %02X at byte offset %d starts no UTF-8 character", b[0], off)
	if r := charmap.Windows1252.DecodeByte(b[0]); r != utf8.RuneError && b[0] >= 0x80 {
		enc := "Latin-1 and Windows-1252"
		if b[0] < 0xa0 {
			enc = "Windows-1252"
		}
		what += fmt.Sprintf(" (in %s it is %q: the file is likely in that encoding)", enc, string(r))
	}
	return what + "; " + utf8Hint
}

// surrogateAt is the UTF-16 surrogate ED xx xx at the start of b encodes.
func surrogateAt(b string) rune {
	return 0xd000 | rune(b[1]&0x3f)<<6 | rune(b[2]&0x3f)
}

// utf8Length is the length of the character lead byte c starts.
func utf8Length(c byte) int {
	switch {
	case c >= 0xf0:
		return 4
	case c >= 0xe0:
		return 3
	}
	return 2
}

func overlong(what string, r rune, shortest func(rune) string) string {
	return fmt.Sprintf("%s are an overlong (not shortest) form of %U %q; %s; %s", what, r, r, shortest(r), badUTF8Hint)
}

// nulProblem returns the reason a text value holding a NUL byte is
// refused, or "": CSV text has no NUL bytes; one is binary content (a
// file's start is checked for it, see checkTextStart, and the rest here).
// In JSON a NUL byte in a value can only be the escape \u0000 (the
// tokenizer refuses a control character written as it is).
func nulProblem(ro *resolved, s string) string {
	i := strings.IndexByte(s, 0)
	if i < 0 {
		return ""
	}
	if ro.json {
		return fmt.Sprintf("value %s holds a NUL byte at byte offset %d: a NUL character (\\u0000), which a column value cannot hold", quoteValue(s), i)
	}
	return fmt.Sprintf("value %s holds a NUL byte at byte offset %d: binary content, not text", quoteValue(s), i)
}

// textProblem is utf8Problem, and nulProblem for values of text files.
func textProblem(ro *resolved, s string) string {
	if r := utf8Problem(s); r != "" || !ro.text {
		return r
	}
	return nulProblem(ro, s)
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
	if isASCII(data) {
		// No byte of a character split between two values either.
		if !ro.text || bytes.IndexByte(data, 0) < 0 {
			return -1, ""
		}
	} else if utf8.Valid(data) && (!ro.text || bytes.IndexByte(data, 0) < 0) {
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

// isASCII reports whether every byte of b is below 0x80, eight at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&highBits != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
