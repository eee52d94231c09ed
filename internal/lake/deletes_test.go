package lake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// expiryBacklog makes a table on l of n appends whose files a cold
// compaction replaced: expiring every snapshot but the newest deletes the
// appends' data files, manifest lists and manifests.
func expiryBacklog(t *testing.T, l *Lake, n int) (*Table, []string) {
	t.Helper()
	ctx := context.Background()
	tbl := createTestTable(t, l)
	day := time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)
	for i := range n {
		appendRows(t, tbl, fmt.Sprintf("gw-%d/file.csv", i), day.Add(time.Duration(i)*time.Minute), 3)
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropCompactColdAfter: "1ms"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if res, err := tbl.Compact(ctx, CompactOptions{}); err != nil || len(res.Groups) == 0 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	time.Sleep(5 * time.Millisecond) // every snapshot is older than OlderThan
	return tbl, scanRows(t, tbl, 0)
}

// TestExpiryDeletesInBatches: on a store that answers every request
// late, the expiry of a backlog of snapshots deletes the files they alone
// referenced in a few DeleteObjects requests, not one request per file;
// on a server that refuses DeleteObjects (501 NotImplemented) it falls
// back to single deletes, with the same result. Either way the count of
// files deleted is exact and nothing is left for orphan removal.
func TestExpiryDeletesInBatches(t *testing.T) {
	srv := s3test.FromEnv(t)
	const appends = 30
	for _, refused := range []bool{false, true} {
		t.Run(map[bool]string{false: "batches", true: "refused"}[refused], func(t *testing.T) {
			p := s3fault.StartT(t, srv.Endpoint, 1)
			l := proxiedLake(t, srv, p)
			tbl, rows := expiryBacklog(t, l, appends)
			if refused {
				p.Add(s3fault.Rule{Name: "no DeleteObjects", Method: http.MethodPost, Query: "delete",
					Action: s3fault.Fail, Status: http.StatusNotImplemented, Code: "NotImplemented"})
			}
			p.Add(s3fault.Rule{Name: "latency", Delay: 5 * time.Millisecond})
			deletes, posts := p.Requests(http.MethodDelete), p.Requests(http.MethodPost)
			res, err := tbl.Expire(context.Background(), ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1})
			if err != nil {
				t.Fatal(err)
			}
			p.Clear()
			deletes, posts = p.Requests(http.MethodDelete)-deletes, p.Requests(http.MethodPost)-posts
			t.Logf("expired %d snapshots, %d files deleted: %d DELETE, %d POST requests", len(res.Expired), res.FilesDeleted, deletes, posts)
			if len(res.Expired) < appends || res.Left != 0 {
				t.Fatalf("expired %d, left %d; want at least %d, 0", len(res.Expired), res.Left, appends)
			}
			// The appends' data files (replaced by the compaction) and a
			// manifest list per expired snapshot at least.
			if res.FilesDeleted < appends+len(res.Expired) {
				t.Fatalf("%d files deleted, want at least %d", res.FilesDeleted, appends+len(res.Expired))
			}
			if refused {
				// One refused DeleteObjects, then single deletes of the
				// files (and the commit's own chores).
				if posts != 1 || deletes < res.FilesDeleted {
					t.Errorf("refused: %d POST, %d DELETE requests; want 1 and at least %d", posts, deletes, res.FilesDeleted)
				}
			} else if posts+deletes > 4 {
				t.Errorf("%d POST and %d DELETE requests for %d files; want 4 at most", posts, deletes, res.FilesDeleted)
			}
			if o := dataOrphans(t, tbl); len(o) != 0 {
				t.Errorf("data files left for orphan removal: %v", o)
			}
			if got := scanRows(t, tbl, 0); !slices.Equal(got, rows) {
				t.Fatalf("rows changed by expiry: %d rows, were %d", len(got), len(rows))
			}
		})
	}
}

// TestOrphansDeletedInBatches: orphan removal deletes its finds in one
// DeleteObjects request; cut short (single deletes, ctx cancelled midway),
// it reports as removed only files that are gone and counts the rest in
// Left, which the next look removes.
func TestOrphansDeletedInBatches(t *testing.T) {
	srv := s3test.FromEnv(t)
	const strays = 40
	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "cut"}[cut], func(t *testing.T) {
			p := s3fault.StartT(t, srv.Endpoint, 1)
			l := proxiedLake(t, srv, p)
			tbl := createTestTable(t, l)
			appendRows(t, tbl, "gw-0/file.csv", time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC), 3)
			ctx := context.Background()
			for i := range strays {
				if _, err := l.store.Put(ctx, fmt.Sprintf("%sdata/stray-%02d.parquet", catalog.TablePrefix(tbl.name), i), strings.NewReader("x"), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * time.Millisecond)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if cut {
				p.Add(s3fault.Rule{Name: "no DeleteObjects", Method: http.MethodPost, Query: "delete",
					Action: s3fault.Fail, Status: http.StatusNotImplemented, Code: "NotImplemented"})
				p.Add(s3fault.Rule{Name: "stop", Method: http.MethodDelete, Skip: 10, Times: 1, Then: cancel, Delay: time.Minute})
			}
			p.Add(s3fault.Rule{Name: "latency", Delay: 5 * time.Millisecond})
			deletes, posts := p.Requests(http.MethodDelete), p.Requests(http.MethodPost)
			res, err := tbl.RemoveOrphans(rctx, OrphanOptions{MinAge: time.Nanosecond})
			p.Clear()
			deletes, posts = p.Requests(http.MethodDelete)-deletes, p.Requests(http.MethodPost)-posts
			var left []string
			if err := l.store.List(ctx, catalog.TablePrefix(tbl.name)+"data/stray-", func(o storage.ObjectInfo) error {
				left = append(left, strings.TrimPrefix(o.Key, catalog.TablePrefix(tbl.name)))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Files {
				if slices.Contains(left, f) {
					t.Errorf("%s reported removed and still there", f)
				}
			}
			if !cut {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Files) != strays || res.Left != 0 || len(left) != 0 || posts != 1 || deletes != 0 {
					t.Fatalf("removed %d, left %d (%d there), %d POST, %d DELETE; want %d, 0, 0, 1, 0", len(res.Files), res.Left, len(left), posts, deletes, strays)
				}
				return
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want the cancellation", err)
			}
			if res.Left == 0 || len(res.Files)+res.Left != strays || len(left) > res.Left || res.Bytes != int64(len(res.Files)) {
				t.Fatalf("removed %d (%d bytes), left %d (%d there); want some left, %d in all", len(res.Files), res.Bytes, res.Left, len(left), strays)
			}
			// A delete cancelled in flight may still have been done by the
			// server: the next look removes what is still there.
			again, err := tbl.RemoveOrphans(ctx, OrphanOptions{MinAge: time.Nanosecond})
			if err != nil || len(again.Files) > res.Left {
				t.Fatalf("the next look: removed %d, %v; want at most %d", len(again.Files), err, res.Left)
			}
			if err := l.store.List(ctx, catalog.TablePrefix(tbl.name)+"data/stray-", func(o storage.ObjectInfo) error {
				return fmt.Errorf("%s left after the next look", o.Key)
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
