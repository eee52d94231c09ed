package decode

import (
	"strings"
	"testing"
)

// TestInferredDecodeNamesTheFirstBadRow: a file that creates a table is
// converted on several cores once its types are known (convertKept); a
// refusal names the first row refused, as one pass would, and every batch
// converted ahead of it is released.
func TestInferredDecodeNamesTheFirstBadRow(t *testing.T) {
	bad := map[int]bool{1200: true, 1800: true, 2700: true}
	text := piecesCSV(3000, func(i int) string {
		if bad[i] {
			return "0001-01-01T00:00:00Z,dev-1,1.5,1,true,1\n" // a time before the accepted years
		}
		return ""
	})
	for _, key := range []string{"a.csv", "a.csv.gz"} {
		t.Run(key, func(t *testing.T) {
			data := []byte(text)
			if strings.HasSuffix(key, ".gz") {
				data = gz(t, text)
			}
			opts := DecodeOptions{TimeColumn: "time", BatchRows: 100, Parallelism: 2, ChunkBytes: 4 << 10}
			_, _, _, _, err := decodeInPieces(t, key, data, opts) // its allocator checks that every batch is released
			fe := mustFileError(t, err)
			if fe.Row != 1201 || fe.Column != "time" {
				t.Fatalf("%v (row %d, column %q), want row 1201 of column time", fe, fe.Row, fe.Column)
			}
		})
	}
}

// TestInferredDecodeConvertsEveryBatch: without a refusal, the batches
// converted on several cores come out whole and in order.
func TestInferredDecodeConvertsEveryBatch(t *testing.T) {
	text := piecesCSV(3000, nil)
	opts := DecodeOptions{TimeColumn: "time", BatchRows: 100, Parallelism: 2, ChunkBytes: 4 << 10}
	got, sc, _, _, err := decodeInPieces(t, "a.csv", []byte(text), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sc.NumFields() != 6 || len(got) != 3000 {
		t.Fatalf("%d columns, %d rows, want 6 and 3000", sc.NumFields(), len(got))
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:]
	for i, row := range got {
		want := strings.Split(lines[i], ",")
		if row[1] != want[1] || row[3] != want[3] {
			t.Fatalf("row %d: %v, want %v", i+1, row, want)
		}
	}
}
