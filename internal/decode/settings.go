package decode

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ParseDelimiter reads a CSV field separator as the settings write it
// (--csv-delimiter, a source profile's csv-delimiter): one character that
// is not a quote or a line end, or the word tab (or \t).
func ParseDelimiter(s string) (rune, error) {
	if strings.EqualFold(s, "tab") || s == `\t` {
		return '\t', nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, fmt.Errorf("expected one character such as ; or |, or tab, got %q", s)
	}
	return r, nil
}

// ParseZone reads an IANA time zone name (Europe/Berlin, UTC), from the
// system's zone database or the one built into the binary: the zone of
// text times without an offset (--assume-timezone).
func ParseZone(s string) (*time.Location, error) {
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (expected an IANA name such as Europe/Berlin)", s)
	}
	return loc, nil
}
