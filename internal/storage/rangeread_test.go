package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// plainStore hides a store's optional capabilities, as the stores tests
// wrap do.
type plainStore struct{ storage.Store }

// TestGetRange: a range of an object is its bytes there, fewer where the
// object ends first, on both stores and through a store without
// RangeReader; a missing object is ErrNotExist.
func TestGetRange(t *testing.T) {
	ctx := context.Background()
	body := make([]byte, 3000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			if _, ok := s.(storage.RangeReader); !ok {
				t.Fatalf("%T has no GetRange", s)
			}
			if _, err := s.Put(ctx, "data/f.parquet", bytes.NewReader(body), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, st := range []storage.Store{s, plainStore{s}} {
				for _, r := range []struct{ off, n int64 }{{0, 1}, {0, 3000}, {100, 900}, {2990, 10}, {2990, 100}, {2999, 1}} {
					rc, err := storage.GetRange(ctx, st, "data/f.parquet", r.off, r.n)
					if err != nil {
						t.Fatalf("%T: range %d+%d: %v", st, r.off, r.n, err)
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					want := body[r.off:min(r.off+r.n, int64(len(body)))]
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("%T: range %d+%d: %d bytes (%v), want %d", st, r.off, r.n, len(got), err, len(want))
					}
				}
				if _, err := storage.GetRange(ctx, st, "data/missing.parquet", 0, 10); !errors.Is(err, storage.ErrNotExist) {
					t.Errorf("%T: missing object: %v, want ErrNotExist", st, err)
				}
				if _, err := storage.GetRange(ctx, st, "data/f.parquet", 0, 0); err == nil {
					t.Errorf("%T: an empty range is read", st)
				}
			}
		})
	}
}
