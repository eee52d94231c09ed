package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// deniedDirFS is a folder's file system in which one folder cannot be
// read, as a folder of another user with mode 0700 cannot (the tests run
// as root, whom permissions do not stop).
type deniedDirFS struct {
	fs.FS
	folder string
}

func (d deniedDirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == d.folder {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return fs.ReadDir(d.FS, name)
}

// TestListGoesOnPastAnUnreadableFolder: a folder below a local store that
// cannot be read does not stop its listing: every other file is listed,
// and the error, after them, names the folder and why.
func TestListGoesOnPastAnUnreadableFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, k := range []string{"gw-1/a.csv", "gw-2/locked/b.csv", "gw-2/c.csv", "gw-3/d.csv"} {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.dirFS = func(r *os.Root) fs.FS { return deniedDirFS{r.FS(), "gw-2/locked"} }
	var keys []string
	err = s.List(ctx, "", func(o ObjectInfo) error { keys = append(keys, o.Key); return nil })
	var ue *UnlistedError
	if !errors.As(err, &ue) || len(ue.Gaps) != 1 || ue.Gaps[0].Key != "gw-2/locked/" || !errors.Is(err, fs.ErrPermission) || ue.Root != dir {
		t.Fatalf("List: %v, want an *UnlistedError naming gw-2/locked/", err)
	}
	if want := []string{"gw-1/a.csv", "gw-2/c.csv", "gw-3/d.csv"}; !slices.Equal(keys, want) {
		t.Fatalf("listed %v, want %v", keys, want)
	}
	// A listing of another prefix never looks into the folder.
	if err := s.List(ctx, "gw-3/", func(ObjectInfo) error { return nil }); err != nil {
		t.Fatalf("List of gw-3/: %v", err)
	}
}

// TestListPastAFolderOfAnotherUser is the same with real permissions (not
// as root, whom they do not stop).
func TestListPastAFolderOfAnotherUser(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: folder permissions do not stop root (TestListGoesOnPastAnUnreadableFolder injects the refusal)")
	}
	dir := t.TempDir()
	locked := filepath.Join(dir, "gw-2", "locked")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(locked, "b.csv"), filepath.Join(dir, "gw-1", "a.csv")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	err = s.List(context.Background(), "", func(o ObjectInfo) error { keys = append(keys, o.Key); return nil })
	var ue *UnlistedError
	if !errors.As(err, &ue) || len(ue.Gaps) != 1 || ue.Gaps[0].Key != "gw-2/locked/" || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("List: %v, want an *UnlistedError naming gw-2/locked/", err)
	}
	if !slices.Equal(keys, []string{"gw-1/a.csv"}) {
		t.Fatalf("listed %v", keys)
	}
}
