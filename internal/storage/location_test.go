package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOverlaps: a warehouse inside the landing location (or the reverse,
// or the same) overlaps, also through a symbolic link and when the inner
// folder does not exist yet; siblings and other buckets do not.
func TestOverlaps(t *testing.T) {
	root := t.TempDir()
	landing := filepath.Join(root, "landing")
	other := filepath.Join(root, "other")
	for _, d := range []string{landing, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(landing, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	dir := func(p string) Location { return Location{Dir: p} }
	s3 := func(bucket, prefix string) Location { return Location{Bucket: bucket, Prefix: prefix} }
	tests := []struct {
		name string
		a, b Location
		want bool
	}{
		{"same folder", dir(landing), dir(landing), true},
		{"warehouse inside landing", dir(landing), dir(filepath.Join(landing, "lake")), true},
		{"landing inside warehouse", dir(filepath.Join(landing, "in")), dir(landing), true},
		{"through a link, not created yet", dir(landing), dir(filepath.Join(link, "wh", "lake")), true},
		{"the link itself", dir(link), dir(landing), true},
		{"siblings", dir(landing), dir(other), false},
		{"a name that only starts the same", dir(landing), dir(landing + "2"), false},
		{"same bucket, prefix below", s3("b", "landing"), s3("b", "landing/lake"), true},
		{"same bucket, whole bucket", s3("b", ""), s3("b", "lake"), true},
		{"same bucket, sibling prefixes", s3("b", "landing"), s3("b", "lake"), false},
		{"other buckets", s3("a", ""), s3("b", ""), false},
		{"folder and bucket", dir(landing), s3("b", ""), false},
	}
	for _, tc := range tests {
		if got := Overlaps(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
}
