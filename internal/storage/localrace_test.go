package storage_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// TestLocalPutBesideDeleteOfFolder: puts into a folder while another
// writer deletes its own last file there (which removes the emptied folder)
// all succeed: the folder removed while a put creates it is created again.
func TestLocalPutBesideDeleteOfFolder(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key := "deep/folder/" + name
				if _, err := s.Put(ctx, key, bytes.NewReader([]byte("x")), storage.PutOptions{}); err != nil {
					t.Errorf("put %s (round %d): %v", key, i, err)
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					t.Errorf("delete %s (round %d): %v", key, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
