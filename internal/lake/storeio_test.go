package lake

import (
	"bytes"
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestStoreIO: iceberg-go's file system of an S3 warehouse on a folder
// store and on the test S3 server: a small object is read whole, a large
// one with ranged reads that return its bytes; Create uploads on Close
// (multipart when large) and leaves no temporary file; a missing object
// is fs.ErrNotExist; a URI outside the warehouse is refused.
func TestStoreIO(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) storage.Store
	}{
		{"local", func(t *testing.T) storage.Store {
			s, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"s3", func(t *testing.T) storage.Store {
			srv := s3test.FromEnv(t)
			return storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "wh", storage.S3StoreOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store(t)
			fsys := newStoreIO(ctx, store, "lake", "wh")
			const base = "s3://lake/wh/iot/readings/"

			small := []byte("a small manifest")
			if err := fsys.WriteFile(base+"metadata/m.avro", small); err != nil {
				t.Fatal(err)
			}
			f, err := fsys.Open("s3a://lake/wh/iot/readings/metadata/m.avro")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := f.(*memFile); !ok {
				t.Errorf("small object opened as %T, want it read whole", f)
			}
			if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, small) {
				t.Errorf("small object: %q, %v", got, err)
			}
			f.Close()

			large := make([]byte, smallFileBytes+300_000)
			for i := range large {
				large[i] = byte(i % 251)
			}
			w, err := fsys.Create(base + "data/large.parquet")
			if err != nil {
				t.Fatal(err)
			}
			sw := w.(*storeWriter)
			sw.multipartThreshold = smallFileBytes // two parts of the default size would need 16 MiB
			tmp := sw.tmp.Name()
			if _, err := w.Write(large[:1000]); err != nil {
				t.Fatal(err)
			}
			if _, err := w.ReadFrom(bytes.NewReader(large[1000:])); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tmp); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("temporary file %s left: %v", tmp, err)
			}
			info, meta, err := storage.StatMetadata(ctx, store, "iot/readings/data/large.parquet")
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(len(large)) {
				t.Errorf("uploaded %d bytes, want %d", info.Size, len(large))
			}
			if tc.name == "s3" {
				if !strings.Contains(info.ETag, "-") {
					t.Errorf("ETag %s: not a multipart upload's", info.ETag)
				}
				if meta[storage.MetaSHA256] == "" {
					t.Errorf("no SHA-256 stored with the object: %v", meta)
				}
			}

			// A file the writer discards is not uploaded, and its
			// temporary file goes.
			w, err = fsys.Create(base + "data/dropped.parquet")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(large); err != nil {
				t.Fatal(err)
			}
			dropped := w.(*storeWriter).tmp.Name()
			if err := w.(*storeWriter).Abort(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dropped); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("temporary file %s left by Abort: %v", dropped, err)
			}
			if _, err := store.Stat(ctx, "iot/readings/data/dropped.parquet"); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("an aborted file was uploaded: %v", err)
			}

			f, err = fsys.Open(base + "data/large.parquet")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, ok := f.(*storeFile); !ok {
				t.Fatalf("large object opened as %T, want ranged reads", f)
			}
			if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(large)) || fi.Name() != "large.parquet" {
				t.Errorf("stat: %v, %v", fi, err)
			}
			for _, r := range []struct {
				off  int64
				n    int
				want int
				eof  bool
			}{{0, 4, 4, false}, {int64(len(large)) - 8, 8, 8, false}, {500_000, 100_000, 100_000, false}, {int64(len(large)) - 10, 100, 10, true}, {int64(len(large)), 10, 0, true}} {
				p := make([]byte, r.n)
				n, err := f.ReadAt(p, r.off)
				if n != r.want || (err == io.EOF) != r.eof || (err != nil && err != io.EOF) {
					t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d bytes, EOF %v", r.n, r.off, n, err, r.want, r.eof)
				}
				if !bytes.Equal(p[:n], large[r.off:r.off+int64(n)]) {
					t.Errorf("ReadAt(%d bytes at %d): other bytes", r.n, r.off)
				}
			}
			if _, err := f.Seek(-100_000, io.SeekEnd); err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, large[len(large)-100_000:]) {
				t.Errorf("read after seek: %d bytes, %v", len(got), err)
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, large) {
				t.Errorf("read whole: %d bytes, %v", len(got), err)
			}

			if fi, err := fsys.Stat(base + "data/large.parquet"); err != nil || fi.Size() != int64(len(large)) {
				t.Errorf("stat: %v, %v", fi, err)
			}
			if _, err := fsys.Open(base + "data/missing.parquet"); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("missing object: %v, want fs.ErrNotExist", err)
			}
			if _, err := fsys.Stat(base + "data/missing.parquet"); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("stat of a missing object: %v, want fs.ErrNotExist", err)
			}
			if err := fsys.Remove(base + "data/large.parquet"); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Stat(ctx, "iot/readings/data/large.parquet"); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("removed object: %v", err)
			}
			if err := fsys.Remove(base + "data/large.parquet"); err != nil {
				t.Errorf("removing a missing object: %v", err)
			}

			for _, uri := range []string{
				"s3://other/wh/iot/readings/data/a.parquet",
				"s3://lake/other/iot/readings/data/a.parquet",
				"s3://lake/wh2/iot/readings/data/a.parquet",
				"s3://lake/wh/iot/readings/../../x/a.parquet",
				"s3://lake/wh//a.parquet",
				"gs://lake/wh/iot/readings/data/a.parquet",
				"/lake/wh/iot/readings/data/a.parquet",
			} {
				_, oerr := fsys.Open(uri)
				_, cerr := fsys.Create(uri)
				werr := fsys.WriteFile(uri, small)
				rerr := fsys.Remove(uri)
				_, serr := fsys.Stat(uri)
				for _, err := range []error{oerr, cerr, werr, rerr, serr} {
					var pe *iofs.PathError
					if !errors.Is(err, errOutsideWarehouse) || !errors.As(err, &pe) || pe.Path != uri {
						t.Errorf("%s: %v, want it refused", uri, err)
					}
				}
			}
		})
	}
}
