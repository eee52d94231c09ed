package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// TestLocalNeverFollowsLinks: a symbolic link inside a local folder, to a
// folder or a file, outside the folder or inside it, is never followed:
// not listed (a warning names it), and every operation on a key through it
// is ErrSymlink naming the link, with nothing read, written, copied or
// deleted outside the folder (or under a second key inside it).
func TestLocalNeverFollowsLinks(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, outside := filepath.Join(base, "landing"), filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "gw"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "important.csv"), "outside\n")
	write(filepath.Join(outside, "secret"), "secret\n")
	write(filepath.Join(root, "gw", "a.csv"), "inside\n")
	for link, target := range map[string]string{
		"gw/v":          outside,                                  // a folder outside
		"gw/passwd.csv": filepath.Join(outside, "secret"),         // a file outside
		"gw/b.csv":      "a.csv",                                  // a file inside
		"gw/w":          "..",                                     // a folder inside
		"gw/dangling":   filepath.Join(outside, "does-not-exist"), // nothing
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	s, err := storage.NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	s.WarnLinks(slog.New(slog.NewTextHandler(&logged, nil)))

	var listed []string
	if err := s.List(ctx, "", func(o storage.ObjectInfo) error { listed = append(listed, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(listed, " ") != "gw/a.csv" {
		t.Errorf("listed %v, want only gw/a.csv", listed)
	}
	for _, link := range []string{"gw/v", "gw/passwd.csv", "gw/b.csv", "gw/w", "gw/dangling"} {
		if !strings.Contains(logged.String(), "key="+link+" ") {
			t.Errorf("no warning names %s:\n%s", link, logged.String())
		}
	}

	for key, link := range map[string]string{
		"gw/v/important.csv": "gw/v", "gw/passwd.csv": "gw/passwd.csv", "gw/b.csv": "gw/b.csv",
		"gw/w/gw/a.csv": "gw/w", "gw/dangling": "gw/dangling",
	} {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, storage.ErrSymlink) || !strings.Contains(err.Error(), link) {
				t.Errorf("%s %s: %v, want ErrSymlink naming %s", op, key, err, link)
			}
		}
		_, err := s.Stat(ctx, key)
		check("Stat", err)
		rc, _, err := s.Get(ctx, key)
		if rc != nil {
			rc.Close()
		}
		check("Get", err)
		check("Copy", s.Copy(ctx, key, "_rejected/"+key))
		check("Delete", s.Delete(ctx, key))
		check("DeleteIfMatch", s.DeleteIfMatch(ctx, key, "x"))
		_, err = s.Put(ctx, key, strings.NewReader("overwritten\n"), storage.PutOptions{})
		check("Put", err)
		check("Copy to", s.Copy(ctx, "gw/a.csv", key))
	}
	for p, want := range map[string]string{
		filepath.Join(outside, "important.csv"): "outside\n",
		filepath.Join(outside, "secret"):        "secret\n",
		filepath.Join(root, "gw", "a.csv"):      "inside\n",
	} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want it untouched", p, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "does-not-exist")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created through the dangling link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "_rejected")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was copied into _rejected/: %v", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 2 {
		t.Errorf("the folder outside holds %d files, want its 2", len(entries))
	}
}

// TestLocalRootMayBeALink: the store's folder itself may be a symbolic
// link (a landing folder on another disk): only links below it are refused.
func TestLocalRootMayBeALink(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	real, link := filepath.Join(base, "disk", "landing"), filepath.Join(base, "landing")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err := storage.NewLocalStore(link)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "gw/a.csv", strings.NewReader("x\n"), storage.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "gw/a.csv"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gw/a.csv"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(real, "gw", "a.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("not deleted: %v", err)
	}
}
