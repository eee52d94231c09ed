package loadhistory

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestCacheKeepsAndPrunesSegments(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir, "iot.readings", "s3://bucket/iot/readings")
	if got, want := c.Folder(), filepath.Join(dir, "load-history", "iot.readings-"); len(got) != len(want)+16 || got[:len(want)] != want {
		t.Fatalf("folder %q, want %s<16 hex digits>", got, want)
	}
	if other := NewCache(dir, "iot.readings", "s3://bucket/elsewhere"); other.Folder() == c.Folder() {
		t.Error("two locations of one table name share a cache folder")
	}
	at := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	kept, gone := SegmentName(HistoryPrefix, at, 2), SegmentName(OutcomePrefix, at, 1)
	for _, name := range []string{kept, kept + IndexSuffix, gone, gone + IndexSuffix} {
		if err := c.Write(name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := c.Read(kept); err != nil || string(b) != kept {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := os.WriteFile(c.Path("notes.txt"), []byte("not a segment"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, ok := ParseSegmentName(kept)
	if !ok || info.Records != 2 || !info.Newest.Equal(at) {
		t.Fatalf("parse %q: %+v, %v", kept, info, ok)
	}
	c.Prune([]SegmentInfo{info})
	if got := cachedNames(t, c); !slices.Equal(got, []string{kept, kept + IndexSuffix, "notes.txt"}) {
		t.Errorf("after prune: %v; want the kept segment, its index and the file that is not a segment", got)
	}
	c.Remove(kept)
	if got := cachedNames(t, c); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("after remove: %v", got)
	}
}

func TestZeroCacheKeepsNothing(t *testing.T) {
	c := NewCache("", "iot.readings", "s3://bucket/iot/readings")
	if c.Folder() != "" || c.Path("x") != "" {
		t.Fatalf("zero cache has a folder: %q", c.Folder())
	}
	if err := c.Write("x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read("x"); err == nil {
		t.Fatal("the zero cache read a file")
	}
	c.Remove("x")
	c.Prune(nil)
}

func TestCacheRefusesNamesOutsideItsFolder(t *testing.T) {
	c := NewCache(t.TempDir(), "iot.readings", "/tables/iot/readings")
	if err := c.Write("../escape.parquet", []byte("x")); err == nil {
		t.Fatal("wrote outside the cache folder")
	}
}

func cachedNames(t *testing.T, c Cache) []string {
	t.Helper()
	entries, err := os.ReadDir(c.Folder())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}
