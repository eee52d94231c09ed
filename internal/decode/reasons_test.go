package decode

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/zlib"
	"strconv"
	"strings"
	"testing"
)

const reasonsCSV = "time,device,temp\n2026-03-01T12:00:00Z,gw-7,21.5\n2026-03-01T12:01:00Z,gw-7,22.5\n"

// TestZlibNamedGzip: zlib data (a zlib header, not gzip's) in a file named
// .csv.gz is named as zlib, whatever its compression level, with the fix.
func TestZlibNamedGzip(t *testing.T) {
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, 2, zlib.DefaultCompression, zlib.BestCompression} {
		var buf bytes.Buffer
		w, err := zlib.NewWriterLevel(&buf, level)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(strings.Repeat(reasonsCSV, 20))); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = decode(t, "gw/z.csv.gz", buf.Bytes(), DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		for _, want := range []string{"zlib data", "not gzip", "named .gz", "compress the text with gzip"} {
			if !strings.Contains(fe.Reason, want) {
				t.Errorf("level %d (% x): reason %q, want %q", level, buf.Bytes()[:2], fe.Reason, want)
			}
		}
	}
	// Text that starts "x^" (a valid zlib header) is text.
	d, err := decode(t, "gw/x.csv", []byte("x^,time\n1,2026-03-01T12:00:00Z\n"), DecodeOptions{TimeColumn: "time"})
	if err != nil || d.Rows != 1 {
		t.Fatalf("text starting x^: %v", err)
	}
}

func tarOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, n := range names {
		if err := w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(reasonsCSV)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(reasonsCSV)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, n := range names {
		f, err := w.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(reasonsCSV)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestArchivesNamedCSV: a tar or zip archive named .csv or .csv.gz (a
// .tar.gz among them) is named as the archive it is, with its first file.
func TestArchivesNamedCSV(t *testing.T) {
	tarball := tarOf(t, "export/2026-03-01.csv", "export/2026-03-02.csv")
	zipped := zipOf(t, "2026-03-01.csv")
	xlsx := zipOf(t, "[Content_Types].xml", "xl/workbook.xml")
	cases := []struct {
		key  string
		data []byte
		want []string
	}{
		{"gw/a.csv.gz", gz(t, string(tarball)), []string{"a tar archive compressed with gzip", `"export/2026-03-01.csv"`, "upload the CSV files themselves"}},
		{"gw/a.csv", tarball, []string{"a tar archive whose first file is", `"export/2026-03-01.csv"`, "upload the CSV files themselves"}},
		{"gw/a.csv.gz", zipped, []string{"a zip archive", "named .gz", `"2026-03-01.csv"`, "extract the CSV file"}},
		{"gw/a.csv", zipped, []string{"a zip archive whose first file is", `"2026-03-01.csv"`, "extract the CSV file"}},
		{"gw/a.csv.gz", gz(t, string(zipped)), []string{"a zip archive", "inside the gzip data", "extract the CSV file"}},
		{"gw/a.csv", xlsx, []string{"an Excel .xlsx workbook", "export the sheet as CSV UTF-8"}},
	}
	for _, c := range cases {
		_, err := decode(t, c.key, c.data, DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		for _, want := range c.want {
			if !strings.Contains(fe.Reason, want) {
				t.Errorf("%s: reason %q, want %q", c.key, fe.Reason, want)
			}
		}
		if strings.Contains(fe.Reason, "UTF-16") || strings.Contains(fe.Reason, "NUL") {
			t.Errorf("%s: reason %q", c.key, fe.Reason)
		}
	}
}

// TestEncryptedParquet: a Parquet file with an encrypted footer (PARE at
// its start and end) is named as such.
func TestEncryptedParquet(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	copy(data, "PARE")
	copy(data[len(data)-4:], "PARE")
	_, err := decode(t, "gw/e.parquet", data, DecodeOptions{TimeColumn: "time"})
	fe := mustFileError(t, err)
	if !strings.Contains(fe.Reason, "an encrypted Parquet file (Parquet modular encryption") || !strings.Contains(fe.Reason, "without encryption") || !IsUnreadable(err) {
		t.Errorf("reason %q", fe.Reason)
	}
}

// TestParquetTrailingBytes: bytes after a Parquet file's footer are named
// with their number and where the footer ends; a truncated file keeps its
// own reason.
func TestParquetTrailingBytes(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	for _, extra := range [][]byte{make([]byte, 512), []byte("2026-03-01T12:03:00Z,gw-7,24.5\n"), append([]byte("PAR1"), 1, 2, 3)} {
		padded := append(bytes.Clone(data), extra...)
		_, err := decode(t, "gw/p.parquet", padded, DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		want := strings.Join([]string{strconv.Itoa(len(extra)), " bytes after the end of the Parquet file (its footer ends at byte ", strconv.Itoa(len(data)), ")"}, "")
		if !strings.Contains(fe.Reason, want) || !strings.Contains(fe.Reason, "upload the file as the writer wrote it") {
			t.Errorf("reason %q, want %q", fe.Reason, want)
		}
	}
	_, err := decode(t, "gw/p.parquet", data[:len(data)-7], DecodeOptions{TimeColumn: "time"})
	fe := mustFileError(t, err)
	if strings.Contains(fe.Reason, "after the end") {
		t.Errorf("truncated file: reason %q", fe.Reason)
	}
}
