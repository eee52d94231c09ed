package catalog

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// TestProbeLatestVersion: on a local folder the newest version is found by
// probing from the one found before, and is the one a listing finds:
// after another writer's commits, after old versions were deleted under
// the version found before, and across a gap, where it lists again.
func TestProbeLatestVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	loc, err := storage.ParseLocation(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(loc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	wh := Warehouse{Store: st, Loc: loc, Log: slog.Default()}
	n := Name{Namespace: "ns", Name: "probed"}
	put := func(v int) {
		t.Helper()
		if _, err := st.Put(ctx, MetadataKey(n, v), bytes.NewReader([]byte("{}")), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine := NewFiles(wh)
	listed := func() int {
		t.Helper()
		v, err := NewFiles(wh).latestVersion(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(what string, wantProbe bool) {
		t.Helper()
		before := 0
		if p := mine.probes[n]; p != nil {
			before = p.probes
		}
		got, err := mine.latestVersion(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := listed(); got != want {
			t.Fatalf("%s: newest version %d, a listing finds %d", what, got, want)
		}
		probed := mine.probes[n] != nil && mine.probes[n].probes > before
		if probed != wantProbe {
			t.Errorf("%s: probed %v, want %v", what, probed, wantProbe)
		}
	}
	// My commits: the first look lists, the next ones probe.
	for v := 1; v <= 3; v++ {
		put(v)
	}
	check("the first look", false)
	check("after my commits", true)

	// Another writer commits three versions.
	for v := 4; v <= 6; v++ {
		put(v)
	}
	check("after another writer's commits", true)

	// The version found before deleted (another writer went far ahead):
	// listed again.
	newest := listed()
	if err := st.Delete(ctx, MetadataKey(n, newest)); err != nil {
		t.Fatal(err)
	}
	put(newest + 1)
	check("the version found before deleted", false)
	// A gap above the version found: listed again.
	put(newest + 3)
	check("a gap", false)
	check("after the listing", true)
}
