package pqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// corpusFile reads a Parquet file of decode's corpus.
func corpusFile(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "testdata", "corpus"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegistered: importing the package registers its format, which checks
// a whole file, estimates its values from the footer, refuses one whose
// footer counts do not add up in decode's words and writes no Parquet.
func TestRegistered(t *testing.T) {
	prev := decode.SetParquetFormat(pqlite.Format{})
	defer decode.SetParquetFormat(prev)
	if _, ok := prev.(pqlite.Format); !ok {
		t.Fatalf("registered format %T, want pqlite.Format", prev)
	}
	b := corpusFile(t, "numbers", "epoch-int64.parquet")
	check := func(b []byte) error {
		_, err := decode.Check(context.Background(), decode.Source{Key: "d.parquet", R: bytes.NewReader(b), Size: int64(len(b))},
			decode.DecodeOptions{TimeColumn: "time", TimeUnit: "ms"}, decode.CheckOptions{})
		return err
	}
	if err := check(b); err != nil {
		t.Fatalf("check: %v", err)
	}
	if n, ok := decode.ParquetValueBytes(decode.Source{R: bytes.NewReader(b), Size: int64(len(b))}); !ok || n <= 0 {
		t.Errorf("ParquetValueBytes = %d, %v", n, ok)
	}
	if !(pqlite.Format{}).FooterReads(bytes.NewReader(b), int64(len(b))) || (pqlite.Format{}).FooterReads(bytes.NewReader(b), int64(len(b)-1)) {
		t.Error("FooterReads does not tell the whole file from one cut short")
	}
	damaged := bytes.Clone(b)
	damaged[366] ^= 1 // the row group's num_rows: 1 becomes -2
	if err := check(damaged); err == nil || !decode.IsUnreadable(err) || !strings.Contains(err.Error(), "row group 0 has -2 rows by its metadata (the file is damaged)") {
		t.Errorf("check of a footer whose counts do not add up: %v", err)
	}
	if err := (pqlite.Format{}).Write(&bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "does not write Parquet") {
		t.Errorf("Write: %v", err)
	}
}
