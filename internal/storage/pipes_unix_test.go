//go:build unix

package storage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// TestLocalRefusesPipes: a named pipe under a key is not an object: Stat
// and Get answer ErrNotExist at once instead of waiting for a writer.
func TestLocalRefusesPipes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "gw", "pipe.csv"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	s, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "gw/pipe.csv"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of a named pipe: %v, want ErrNotExist", err)
	}
	rc, _, err := s.Get(ctx, "gw/pipe.csv")
	if rc != nil {
		rc.Close()
	}
	if !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Get of a named pipe: %v, want ErrNotExist", err)
	}
}
