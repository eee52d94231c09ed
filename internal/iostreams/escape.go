package iostreams

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that could change how a line of
// text output reads written as a Go escape: control characters (C0, DEL,
// C1: "\n", "\r", "\t", "\x1b", "\u0085"), the Unicode line and paragraph
// separators and the bidirectional controls ("\u2028", "\u202e"), and
// bytes that are not UTF-8 ("\xff"). Everything else, backslashes
// included, is left as it is, so Escape(Escape(s)) == Escape(s). A key
// holding a newline therefore prints on its line, and cannot start a
// line of its own (a forged log line) or move a terminal's cursor.
func Escape(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[0])|0x100, 16)[1:])
		case needsEscape(r):
			q := strconv.QuoteRuneToASCII(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// Field is s as one field of a tab-separated line (a table cell, a record
// of a pipe): a tab becomes a space, the rest goes through Escape.
func Field(s string) string { return Escape(strings.ReplaceAll(s, "\t", " ")) }

func needsEscape(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u2028' || r == '\u2029': // line and paragraph separators
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e' || r == '\u200f', r == '\u061c':
		return true // bidirectional controls: text that reads in another order than it is
	}
	return false
}

// Fprintf, Fprintln, Fprint, Sprintf, Sprint and Sprintln are fmt's, with
// every operand but numbers and booleans printed through Escape: the format
// is the program's, the values (keys, file names, error messages) come
// from outside. Every line of text output goes through them (a test of
// package commands checks that commands print nothing through fmt), so
// escaping happens here, once; JSON output (WriteJSON) escapes by itself
// and stays exact.
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return fmt.Fprintf(w, format, escapeOperands(a)...)
}

// Fprintln is fmt.Fprintln with escaped operands (see Fprintf).
func Fprintln(w io.Writer, a ...any) (int, error) { return fmt.Fprintln(w, escapeOperands(a)...) }

// Fprint is fmt.Fprint with escaped operands (see Fprintf).
func Fprint(w io.Writer, a ...any) (int, error) { return io.WriteString(w, Sprint(a...)) }

// Sprintf is fmt.Sprintf with escaped operands (see Fprintf).
func Sprintf(format string, a ...any) string { return fmt.Sprintf(format, escapeOperands(a)...) }

// Sprint is fmt.Sprint with escaped operands (see Fprintf): a space
// between two operands when neither is a string, as fmt puts it.
func Sprint(a ...any) string {
	var b strings.Builder
	for i, v := range escapeOperands(a) {
		if i > 0 {
			_, prev := a[i-1].(string)
			if _, cur := a[i].(string); !prev && !cur {
				b.WriteByte(' ')
			}
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

// Sprintln is fmt.Sprintln with escaped operands (see Fprintf).
func Sprintln(a ...any) string { return fmt.Sprintln(escapeOperands(a)...) }

func escapeOperands(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		out[i] = v
		if v == nil {
			continue
		}
		switch reflect.TypeOf(v).Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
			if _, ok := v.(fmt.Stringer); !ok {
				continue // numbers print no text of their own (and may be a * width)
			}
		}
		out[i] = escaped{v}
	}
	return out
}

// escaped prints its value as fmt would, with the same verb, flags and
// precision, through Escape, then pads it to the width (so that a column
// stays as wide as asked).
type escaped struct{ v any }

func (e escaped) Format(f fmt.State, verb rune) {
	directive := "%"
	for _, flag := range "+-# 0" {
		if f.Flag(int(flag)) && flag != '-' {
			directive += string(flag)
		}
	}
	if p, ok := f.Precision(); ok {
		directive += "." + strconv.Itoa(p)
	}
	text := Escape(fmt.Sprintf(directive+string(verb), e.v))
	if w, ok := f.Width(); ok {
		if f.Flag('-') {
			text = fmt.Sprintf("%-*s", w, text)
		} else {
			text = fmt.Sprintf("%*s", w, text)
		}
	}
	_, _ = io.WriteString(f, text)
}

// Plural renders a count with its noun, "1 file", "2 files" (English
// plurals in s only: callers pick nouns that take it).
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
