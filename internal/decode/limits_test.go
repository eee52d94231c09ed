package decode

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// gzipStream compresses the text w writes, at the best compression.
func gzipWrite(t testing.TB, write func(w io.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(zw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// repeat writes s n times.
func repeat(s string, n int) func(w io.Writer) error {
	return func(w io.Writer) error {
		chunk := []byte(strings.Repeat(s, max(1, (64<<10)/len(s))))
		for written := 0; written < n; {
			k := min(n-written, len(chunk)/len(s))
			if _, err := w.Write(chunk[:k*len(s)]); err != nil {
				return err
			}
			written += k
		}
		return nil
	}
}

// TestRowLongerThanTheLimit: a row (or a header) longer than
// MaxRecordBytes refuses its file naming the line and the limit, however
// it is read: plain text sequentially and in parallel ranges, gzip text,
// the header; a file whose rows fit loads. The text after the long line is
// never read: the line is 64 times the limit.
func TestRowLongerThanTheLimit(t *testing.T) {
	const limit = 64 << 10
	huge := strings.Repeat("x", 64*limit)
	var good strings.Builder
	good.WriteString("time,device_id,v\n")
	for range 2000 {
		good.WriteString("2026-01-05T10:00:00Z,d1,1.5\n")
	}
	withHuge := good.String() + "2026-01-05T10:00:00Z,d1," + huge + "\n" + good.String()[17:]
	for _, tc := range []struct {
		name, key string
		data      []byte
		opts      DecodeOptions
		line      int64
	}{
		{"plain", "gw/a.csv", []byte(withHuge), DecodeOptions{Parallelism: 1}, 2002},
		{"plain, parallel ranges", "gw/a.csv", []byte(withHuge), DecodeOptions{Parallelism: 2, ChunkBytes: 16 << 10}, 2002},
		{"gzip", "gw/a.csv.gz", gz(t, withHuge), DecodeOptions{}, 2002},
		{"a value without a line end", "gw/a.csv.gz", gz(t, "time,device_id,v\n2026-01-05T10:00:00Z,d1,"+huge), DecodeOptions{}, 2},
		{"header", "gw/a.csv", []byte("time,device_id," + huge + "\n2026-01-05T10:00:00Z,d1,1\n"), DecodeOptions{}, 1},
		{"after a separator hint", "gw/a.csv", []byte("sep=;\ntime;device_id;v\n2026-01-05T10:00:00Z;d1;" + huge + "\n"), DecodeOptions{}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.MaxRecordBytes = limit
			_, err := Decode(context.Background(), Source{Key: tc.key, R: bytes.NewReader(tc.data), Size: int64(len(tc.data))}, opts)
			var fe *FileError
			if !errors.As(err, &fe) || fe.Line != tc.line || fe.Row != 0 ||
				!strings.Contains(fe.Reason, "a row longer than 64 KiB, the most one row may take (a quarter of --memory-budget)") {
				t.Fatalf("Decode = %v, want a refusal at line %d naming the limit", err, tc.line)
			}
		})
	}
	d, err := Decode(context.Background(), Source{Key: "gw/a.csv", R: strings.NewReader(good.String()), Size: int64(good.Len())},
		DecodeOptions{MaxRecordBytes: 64})
	if err != nil || d.Rows != 2000 {
		t.Fatalf("rows within the limit: %v", err)
	}
	d.Release()
}

// TestGzipBomb: gzip data expanding more than maxGzipExpansion-fold is
// refused once gzipGuardFloor bytes came out, by the decoder and by
// NewGzipReader (ingest's content hash), and its end is not taken for an
// open one; text that expands less is read to its end.
func TestGzipBomb(t *testing.T) {
	// 160 MiB of lines of one letter: about 1,000-fold, deflate's most.
	row := strings.Repeat("a", 8<<10) + "\n"
	bomb := gzipWrite(t, func(w io.Writer) error {
		if _, err := io.WriteString(w, "v\n"); err != nil {
			return err
		}
		return repeat(row, (160<<20)/len(row))(w)
	})
	if ratio := (160 << 20) / len(bomb); ratio < 2*maxGzipExpansion/3 {
		t.Fatalf("the test's bomb expands only %d-fold", ratio)
	}
	_, err := Decode(context.Background(), Source{Key: "gw/bomb.csv.gz", R: bytes.NewReader(bomb), Size: int64(len(bomb))}, DecodeOptions{})
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "the gzip data expands more than 500-fold") || !strings.Contains(fe.Reason, "a gzip bomb") {
		t.Fatalf("Decode = %v, want the bomb refused", err)
	}
	zr, err := NewGzipReader(bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err == nil || !strings.Contains(err.Error(), "a gzip bomb") || n > gzipGuardFloor+(1<<20) {
		t.Fatalf("NewGzipReader read %d bytes, %v; want the bomb refused past %d", n, err, gzipGuardFloor)
	}
	if open, err := OpenEnd("gw/bomb.csv.gz", bytes.NewReader(bomb), int64(len(bomb))); open != "" || err != nil {
		t.Fatalf("OpenEnd = %q, %v; want not open (the decoder refuses it)", open, err)
	}
	// Text that expands less than the limit is read to its end.
	var text bytes.Buffer
	for i := range 200_000 {
		text.WriteString("2026-01-05T10:00:00Z,d1,")
		text.WriteString(strings.Repeat("7", i%13))
		text.WriteString("\n")
	}
	zr, err = NewGzipReader(bytes.NewReader(gz(t, text.String())))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, zr); err != nil || n != int64(text.Len()) {
		t.Fatalf("NewGzipReader read %d bytes, %v; want %d", n, err, text.Len())
	}
}

// TestCheckSampleSetAside: of a large CSV file Check reads the values of
// the first rows only, and says so with the rows set aside among them.
func TestCheckSampleSetAside(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,v\n")
	for i := range 3000 {
		temp := "21.5"
		if i == 100 || i == 1500 || i == 2500 {
			temp = "warm"
		}
		fmt.Fprintf(&b, "2026-01-05T%02d:%02d:00Z,%s\n", i/60%24, i%60, temp)
	}
	text := b.String()
	res, err := Check(context.Background(), Source{Key: "big.csv", R: strings.NewReader(text), Size: int64(len(text))},
		DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time", OnError: OnErrorSkipRows}, CheckOptions{SampleRows: 1000})
	if err != nil || !res.Sampled || res.RowsChecked != 1000 || len(res.SetAside) != 1 || res.SetAside[0].Row != 101 {
		t.Fatalf("check of a sample: %+v, %v; want row 101 of the first 1000 set aside", res, err)
	}
}
