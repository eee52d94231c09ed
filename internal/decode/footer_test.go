package decode_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
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

// TestTruncatedParquetSaysSo: a Parquet file cut short (no PAR1 at its
// end) is refused naming the missing footer, by Decode and Check alike; a
// file that ends in PAR1 but is no Parquet file keeps the plain reason.
func TestTruncatedParquetSaysSo(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", "numbers", "epoch-int64.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	cut := b[:len(b)-100]
	src := decode.Source{Key: "cut.parquet", R: bytes.NewReader(cut), Size: int64(len(cut))}
	_, cerr := decode.Check(context.Background(), src, decode.DecodeOptions{}, decode.CheckOptions{})
	_, derr := decode.Decode(context.Background(), src, decode.DecodeOptions{})
	for _, err := range []error{cerr, derr} {
		if err == nil || !decode.IsUnreadable(err) || !strings.Contains(err.Error(), "it does not end in PAR1, so its footer is missing: the file was cut short") {
			t.Errorf("a truncated file: %v", err)
		}
	}
	junk := []byte("PAR1 not really a parquet file PAR1")
	_, err = decode.Decode(context.Background(), decode.Source{Key: "j.parquet", R: bytes.NewReader(junk), Size: int64(len(junk))}, decode.DecodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a readable parquet file") || strings.Contains(err.Error(), "cut short") {
		t.Errorf("a file ending in PAR1: %v", err)
	}
}

// hugeFooter is a Parquet file's last bytes declaring a footer of footer
// bytes, zeros before them: a reader of it allocates nothing.
type hugeFooter struct{ size, footer int64 }

func (h hugeFooter) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	tail := append(binary.LittleEndian.AppendUint32(nil, uint32(h.footer)), "PAR1"...)
	copy(p, "PAR1"[min(off, 4):min(4, max(off, 0)+int64(len(p)))])
	for i := range p {
		if at := off + int64(i) - (h.size - 8); at >= 0 && at < 8 {
			p[i] = tail[at]
		}
	}
	if off+int64(len(p)) > h.size {
		return int(max(h.size-off, 0)), io.EOF
	}
	return len(p), nil
}

// TestParquetFooterTooLarge: a Parquet file declaring a footer larger than
// decode.MaxParquetFooterBytes is refused, naming its size, by Decode and
// Check, before any reader parses it; its decoded size is its size.
func TestParquetFooterTooLarge(t *testing.T) {
	footer := int64(40 << 20)
	src := decode.Source{Key: "rg.parquet", R: hugeFooter{size: footer + 12, footer: footer}, Size: footer + 12}
	_, cerr := decode.Check(context.Background(), src, decode.DecodeOptions{}, decode.CheckOptions{})
	_, derr := decode.Decode(context.Background(), src, decode.DecodeOptions{})
	for _, err := range []error{cerr, derr} {
		if err == nil || !decode.IsUnreadable(err) || !strings.Contains(err.Error(), "rg.parquet: cannot read parquet data: its footer (the file's metadata) takes 40 MiB, more than the 32 MiB a Parquet file may have") {
			t.Errorf("a footer of %d bytes: %v", footer, err)
		}
	}
	if n := decode.DecodedSize(src, 0); n != src.Size {
		t.Errorf("decoded size %d, want the file's %d (its footer is not read)", n, src.Size)
	}
}
