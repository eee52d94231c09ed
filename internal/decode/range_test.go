package decode

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestImplausibleTimesAreRejected: milliseconds read as seconds (year
// 57,000) or placeholder dates are errors naming the row, not silent rows.
func TestImplausibleTimesAreRejected(t *testing.T) {
	for _, tc := range []struct {
		name, csv, unit, want string
	}{
		{"ms read as s", "time,v\n1767607200000,1\n", "s", "year 57983"},
		{"placeholder date", "time,v\n0001-01-01T00:00:00Z,1\n", "", "year 1"},
		{"far future", "time,v\n2026-01-05T10:00:00Z,1\n9999-12-31T00:00:00Z,2\n", "", "row 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.csv)
			_, err := Decode(context.Background(), Source{Key: "gw/x.csv", R: bytes.NewReader(b), Size: int64(len(b))},
				DecodeOptions{TimeColumn: "time", TimeUnit: tc.unit})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "1900-2199") {
				t.Fatalf("err = %v, want one naming %q and the 1900-2199 range", err, tc.want)
			}
		})
	}
	b := []byte("time,v\n1767607200,1\n")
	d, err := Decode(context.Background(), Source{Key: "gw/ok.csv", R: bytes.NewReader(b), Size: int64(len(b))},
		DecodeOptions{TimeColumn: "time", TimeUnit: "s"})
	if err != nil {
		t.Fatal(err)
	}
	d.Release()
}
