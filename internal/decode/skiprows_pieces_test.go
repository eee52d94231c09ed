package decode

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A file decoded in pieces (DecodeEach) under skip-rows: the rows set
// aside are those of the whole file, numbered in it, and come with its
// last piece; --max-bad-rows counts the whole file's rows.
func TestSkipRowsInPieces(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,device,temp,count\n")
	bad := map[int]bool{10: true, 1500: true, 1999: true}
	for i := 1; i <= 2000; i++ {
		temp := fmt.Sprint(i)
		if bad[i] {
			temp = "bad"
		}
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,d%d,%s,%d\n", (i/60)%60, i%60, i%7, temp, i)
	}
	data := []byte(b.String())
	decodeInPieces := func(max string) (pieces int, rows int64, rejected []int64, last int, err error) {
		opts := skipOpts(t, max)
		opts.PieceBytes = 8 << 10
		err = DecodeEach(context.Background(), Source{Key: "gw/a.csv", R: strings.NewReader(string(data)), Size: int64(len(data))}, opts,
			func(d *Decoded) error {
				defer d.Release()
				if d.Piece == 0 {
					pieces, rows, rejected = 0, 0, nil
				}
				pieces++
				rows += d.Rows
				for _, r := range d.Rejected {
					rejected = append(rejected, r.Row)
					last = d.Piece
				}
				return nil
			})
		return
	}
	pieces, rows, rejected, last, err := decodeInPieces("10")
	if err != nil {
		t.Fatal(err)
	}
	if pieces < 2 || rows != 1997 || !reflect.DeepEqual(rejected, []int64{10, 1500, 1999}) || last != pieces-1 {
		t.Fatalf("%d pieces, %d rows, rejected %v on piece %d", pieces, rows, rejected, last)
	}
	if _, _, _, _, err := decodeInPieces("2"); err == nil || !strings.Contains(err.Error(), "at least 3 rows refused") && !strings.Contains(err.Error(), "3 rows of 2000") {
		t.Fatalf("over --max-bad-rows: %v", err)
	}
	if _, _, _, _, err := decodeInPieces("0.001"); err == nil || !strings.Contains(err.Error(), "3 rows of 2000 refused") {
		t.Fatalf("over a fraction of the file: %v", err)
	}
}
