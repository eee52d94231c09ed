package decode

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestInvalidUTF8Forms: the reason of a value that is not UTF-8 names what
// its bytes are, by the well-formed byte sequences of the Unicode
// Standard (section 3.9, table 3-7), and where they are.
func TestInvalidUTF8Forms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a\xc0\x80", []string{"C0 80 at byte offset 1", `Java's "modified UTF-8" for U+0000`}},
		{"\xed\xa0\xbd\xed\xb8\x80!", []string{"ED A0 BD ED B8 80 at byte offset 0", "U+1F600", "surrogate pair", "F0 9F 98 80"}},
		{"\xed\xa0\x80\xed\xb0\x80", []string{"U+10000", "UTF-8 writes U+10000 as F0 90 80 80"}},
		{"\xed\xb0\x80", []string{"ED B0 80", "surrogate U+DC00"}},
		{"\xc1\xbf", []string{"C1 BF", "overlong", `U+007F '\x7f'`}},
		{"\xe0\x80\xaf", []string{"E0 80 AF", "overlong", `U+002F '/'`, "UTF-8 writes U+002F as 2F"}},
		{"\xf0\x8f\xbf\xbf", []string{"F0 8F BF BF", "overlong", "U+FFFF"}},
		{"\xf4\x90\x80\x80", []string{"U+110000", "beyond U+10FFFF"}},
		{"\xf7\xbf\xbf\xbf", []string{"U+1FFFFF", "beyond U+10FFFF"}},
		{"ab\xf0\x9f\x98", []string{"ends inside a character", "F0 9F 98 at byte offset 2", "4 bytes"}},
		{"caf\xe9", []string{"byte E9 at byte offset 3", `Latin-1 and Windows-1252 it is "é"`}},
		{"\x80 euro", []string{"byte 80 at byte offset 0", `Windows-1252 it is "€"`}},
		{"x\x81", []string{"byte 81 at byte offset 1 starts no UTF-8 character;"}},
		{"\xff\xfe", []string{"byte FF at byte offset 0", `"ÿ"`}},
		{"\xe6\x9d x", []string{"E6 9D at byte offset 0", "3 bytes that is cut off after 2"}},
	} {
		off, ok := invalidUTF8At(tc.in)
		if ok {
			t.Fatalf("%q: valid", tc.in)
		}
		got := invalidUTF8(tc.in, off)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: %q does not say %q", tc.in, got, w)
			}
		}
	}
	// Whatever the bytes, the reason names the offset of the first bad one.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := string(b)
		if utf8.ValidString(s) {
			continue
		}
		off, _ := invalidUTF8At(s)
		if got := invalidUTF8(s, off); !strings.Contains(got, "at byte offset "+strconv.Itoa(off)) {
			t.Fatalf("%q: %q does not name byte offset %d", s, got, off)
		}
	}
}

// TestIsASCII: a byte of 0x80 or more anywhere, in the words read eight at
// a time or in the tail, makes text not ASCII.
func TestIsASCII(t *testing.T) {
	for n := range 20 {
		b := bytes.Repeat([]byte{'a'}, n)
		if !isASCII(b) {
			t.Fatalf("%d ASCII bytes: not ASCII", n)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xC3, 0xFF} {
				b[i] = c
				if isASCII(b) {
					t.Fatalf("%q: ASCII", b)
				}
			}
			b[i] = 'a'
		}
	}
}
