package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// TestSessionLoads drives a session as serve does: loads of a few keys at a
// time on one open table under one lease, which a run cannot take meanwhile
// and can once the session is closed.
func TestSessionLoads(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	a, b, c := readings(1, 0, 5), readings(2, 1, 6), readings(3, 2, 7)
	e.put(t, "gw/a.csv", csvFile(a, false, false))
	e.put(t, "gw/b.csv", csvFile(b, false, false))
	var commits [][]string
	cfg := e.config()
	cfg.ContentDedupe = true
	cfg.OnCommit = func(keys []string, _ time.Duration, err error) {
		if err == nil {
			commits = append(commits, slices.Sorted(slices.Values(keys)))
		}
	}
	s, err := ingest.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Table() != nil {
		t.Fatal("a table before the first file")
	}
	if _, err := ingest.Run(ctx, e.config()); !errors.Is(err, ingest.ErrLeaseHeld) {
		t.Fatalf("a run during the session: %v, want ErrLeaseHeld", err)
	}

	// The first load creates the table from its first file.
	files, err := s.List(ctx)
	if err != nil || len(files) != 2 {
		t.Fatalf("list: %v %v", files, err)
	}
	rep, err := s.Load(ctx, files[:1])
	if err != nil || rep.Loaded != 1 || rep.Created == nil || rep.Rows != 5 {
		t.Fatalf("first load: %+v %v", rep, err)
	}

	// The next one: a key just loaded (and deleted), a new file, a key
	// that does not exist, and the content of a file loaded under another
	// key. The two files that are not there are left out: a file never
	// fetched is never reported already loaded.
	e.put(t, "gw/c.csv", csvFile(c, false, false))
	e.put(t, "gw/copy-of-a.csv", csvFile(a, false, false))
	rep, err = s.Load(ctx, []storage.ObjectInfo{{Key: "gw/a.csv"}, {Key: "gw/b.csv"}, {Key: "gw/c.csv"}, {Key: "gw/copy-of-a.csv"}, {Key: "gw/never.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 2 || rep.Rows != 13 || rep.AlreadyLoaded != 1 || rep.Created != nil || len(rep.Files) != 3 {
		t.Fatalf("second load: %+v", rep)
	}
	if f := rep.Files[slices.IndexFunc(rep.Files, func(f ingest.FileResult) bool { return f.Key == "gw/copy-of-a.csv" })]; f.SameAs != "gw/a.csv" {
		t.Errorf("copy of a: %+v", f)
	}
	if s.Table() == nil || rep.SnapshotID == 0 || rep.MetadataVersion != s.Table().Version() {
		t.Errorf("report of the table: snapshot %d version %d", rep.SnapshotID, rep.MetadataVersion)
	}
	if fmt.Sprint(commits) != "[[gw/a.csv] [gw/b.csv gw/c.csv]]" {
		t.Errorf("commits of %v, want [[gw/a.csv] [gw/b.csv gw/c.csv]]", commits)
	}
	if left := e.keys(t, "gw/"); len(left) != 0 {
		t.Fatalf("landing not empty: %v", left)
	}
	var want []string
	for _, r := range slices.Concat(a, b, c) {
		want = append(want, r.String())
	}
	slices.Sort(want)
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("rows: %d, want %d", len(got), len(want))
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}

	s.Close()
	if _, err := e.landing.Stat(ctx, landing.LeaseKey("iot.readings", "")); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("lease after Close: %v", err)
	}
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatalf("a run after the session: %v", err)
	}
}

// TestSessionLeaseLost: a session whose lease another run took over ends
// (Done, Err wraps ErrLeaseLost) and its next load fails with that reason.
func TestSessionLeaseLost(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	cfg := e.config()
	cfg.LeaseTTL = 300 * time.Millisecond
	s, err := ingest.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := e.landing.Put(ctx, landing.LeaseKey("iot.readings", ""), strings.NewReader(`{"holder":"other"}`), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end")
	}
	if !errors.Is(s.Err(), ingest.ErrLeaseLost) {
		t.Fatalf("Err %v, want ErrLeaseLost", s.Err())
	}
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	if _, err := s.Load(ctx, []storage.ObjectInfo{{Key: "gw/a.csv"}}); !errors.Is(err, ingest.ErrLeaseLost) {
		t.Fatalf("load after the lease was lost: %v", err)
	}
	if left := e.keys(t, "gw/"); !slices.Equal(left, []string{"gw/a.csv"}) {
		t.Fatalf("landing: %v", left)
	}
}
