package decode

import (
	"strconv"
	"strings"
	"testing"
)

// TestFoldKeyIsEqualFold: two names have the same foldKey exactly when
// strings.EqualFold calls them equal, so that one map finds the column a
// new one would be confused with.
func TestFoldKeyIsEqualFold(t *testing.T) {
	names := []string{"k", "K", "\u212a", "s", "S", "\u017f", "ss", "SS", "\u00df", "\u03a3", "\u03c3", "\u03c2",
		"temp", "TEMP", "T\u00e9mp", "t\u00c9MP", "", "\u01c4", "\u01c5", "\u01c6", "i", "I", "\u0130", "\u0131", "a\xffb", "A\xffB"}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q, %q: same key %t, EqualFold %t", a, b, got, want)
			}
		}
	}
}

// TestManyNewColumnsNamed: a file of many columns the table lacks is
// refused with a reason that quotes the first few and counts the others.
func TestManyNewColumnsNamed(t *testing.T) {
	header := "time"
	for i := range 25 {
		header += ",c" + strconv.Itoa(i)
	}
	data := header + "\n2026-01-05T10:00:00Z" + strings.Repeat(",1", 25) + "\n"
	_, err := decode(t, "k.csv", []byte(data), DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time"})
	want := `column "c0": not in the table schema (nor are "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10" and 14 more): ingest adds new columns only with --evolve add-columns`
	if err == nil || !strings.Contains(err.Error(), want) || !IsNewColumns(err) {
		t.Errorf("%v, want %q", err, want)
	}
}
