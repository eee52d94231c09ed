package lake

import (
	"bytes"
	"context"
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
	mine, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	goodTable(t, mine, nil)
	listed := func() int {
		t.Helper()
		fresh, err := Open(ctx, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := fresh.latestVersion(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(what string, wantProbe bool) {
		t.Helper()
		before := 0
		if p := mine.probes[confName]; p != nil {
			before = p.probes
		}
		got, err := mine.latestVersion(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		if want := listed(); got != want {
			t.Fatalf("%s: newest version %d, a listing finds %d", what, got, want)
		}
		probed := mine.probes[confName] != nil && mine.probes[confName].probes > before
		if probed != wantProbe {
			t.Errorf("%s: probed %v, want %v", what, probed, wantProbe)
		}
	}
	check("after my commits", true)

	// Another writer commits three versions.
	tbl, err := other.LoadTable(ctx, confName)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		confAppend(t, tbl, "other/"+string(rune('a'+i)), confDay, 5, 0, AppendOptions{})
	}
	check("after another writer's commits", true)

	put := func(v int) {
		t.Helper()
		if _, err := mine.store.Put(ctx, metadataKey(confName, v), bytes.NewReader([]byte("{}")), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The version found before deleted (another writer went far ahead):
	// listed again.
	newest := listed()
	if err := mine.store.Delete(ctx, metadataKey(confName, newest)); err != nil {
		t.Fatal(err)
	}
	put(newest + 1)
	check("the version found before deleted", false)
	// A gap above the version found: listed again.
	put(newest + 3)
	check("a gap", false)
	check("after the listing", true)
}
