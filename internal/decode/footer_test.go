package decode_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/timelake/timelake/internal/decode"
)

// TestFooterCountsRefused: a Parquet file whose footer's row counts do
// not add up (a row group of -2 rows in a file of 1) is refused as
// damaged; pqarrow would read none of its rows without an error, and
// ingest load the file as 0 rows.
func TestFooterCountsRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", "numbers", "epoch-int64.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	b[366] ^= 1 // the row group's num_rows: 1 becomes -2
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if n := pf.MetaData().RowGroup(0).NumRows(); n >= 0 {
		t.Fatalf("the damaged byte left the row group %d rows: the test damages the wrong byte", n)
	}
	_, err = decode.Check(context.Background(), decode.Source{Key: "d.parquet", R: bytes.NewReader(b), Size: int64(len(b))}, decode.DecodeOptions{}, decode.CheckOptions{})
	if err == nil || !decode.IsUnreadable(err) || !strings.Contains(err.Error(), "row group 0 has -2 rows by its metadata (the file is damaged)") {
		t.Fatalf("check of a footer whose counts do not add up: %v; want it refused as damaged", err)
	}
}
