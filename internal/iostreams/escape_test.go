package iostreams

import (
	"errors"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"gw/a.csv":               "gw/a.csv",
		"gw/b c\\d.csv":          "gw/b c\\d.csv", // backslashes stay
		"a\nb\r\tc":              `a\nb\r\tc`,
		"erase\x1b[2K":           `erase\x1b[2K`,
		"del\x7f nel\u0085":      `del\x7f nel\u0085`,
		"ls\u2028rtl\u202eevil":  `ls\u2028rtl\u202eevil`,
		"bad\xffutf8":            `bad\xffutf8`,
		"température/ü.csv":      "température/ü.csv",
		"日本/データ.csv":             "日本/データ.csv",
		`already \n escaped`:     `already \n escaped`,
		"\x00":                   `\x00`,
		strings.Repeat("é", 3):   "ééé",
		"emoji 🙂 and \u200b zws": "emoji 🙂 and \u200b zws",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if got := Escape(Escape(in)); got != want {
			t.Errorf("Escape is not idempotent on %q: %q", in, got)
		}
	}
}

// TestPrintfEscapesOperands: the values are escaped, the format is not;
// widths, numbers and %q keep working.
func TestPrintfEscapesOperands(t *testing.T) {
	var b strings.Builder
	Fprintf(&b, "%-8s|%*d|%.1f|%q|%v\n", "a\nb", 4, 7, 2.25, "x\ny", errors.New("boom\nforged"))
	if want := "a\\nb    |   7|2.2|\"x\\ny\"|boom\\nforged\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	if got := Sprint("key ", "a\x1b", 3); got != `key a\x1b3` {
		t.Fatalf("Sprint: %q", got)
	}
	b.Reset()
	Fprintln(&b, "Error:", errors.Join(errors.New("one"), errors.New("two")))
	if b.String() != "Error: one\\ntwo\n" {
		t.Fatalf("Fprintln: %q", b.String())
	}
}
