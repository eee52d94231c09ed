package lake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// TestPutFile checks a data file's object in an S3 warehouse: stored with
// one PutObject when it stays small, streamed through the file system's writer
// (the bytes held first, then the rest) once it outgrows its buffer, and
// not stored when the file is aborted.
func TestPutFile(t *testing.T) {
	l := newS3Lake(t)
	tbl := createTestTable(t, l)
	ctx := context.Background()
	fs, err := l.fsF(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := func(name string) string { return catalog.TablePrefix(tbl.name) + "data/" + name }
	open := func(name string, limit int) *putFile {
		uri := tbl.Location() + "/data/" + name
		f := newPutFile(ctx, l.store, key(name), func() (io.WriteCloser, error) {
			return fs.(icebergio.WriteFileIO).Create(uri)
		})
		f.limit = limit
		return f
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB
	for _, tc := range []struct {
		name  string
		limit int
	}{{"small.parquet", putFileBuffer}, {"spilled.parquet", 100}} {
		f := open(tc.name, tc.limit)
		for p := body; len(p) > 0; p = p[min(len(p), 48):] {
			if n, err := f.Write(p[:min(len(p), 48)]); err != nil || n != min(len(p), 48) {
				t.Fatalf("%s: write: %d, %v", tc.name, n, err)
			}
		}
		if spilled := f.out != nil; spilled != (tc.limit < len(body)) {
			t.Errorf("%s: spilled %v", tc.name, spilled)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("%s: close: %v", tc.name, err)
		}
		rc, info, err := l.store.Get(ctx, key(tc.name))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, body) || info.Size != int64(len(body)) {
			t.Errorf("%s: stored %d bytes (size %d, %v), want the %d written", tc.name, len(got), info.Size, err, len(body))
		}
	}
	// Aborted in memory, and after it spilled: nothing is stored.
	for name, limit := range map[string]int{"aborted.parquet": putFileBuffer, "aborted-spilled.parquet": 100} {
		f := open(name, limit)
		if _, err := f.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := f.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.store.Stat(ctx, key(name)); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("%s: stat says %v, want it absent", name, err)
		}
	}
}
