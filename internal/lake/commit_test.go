package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// restCommitStateUnknown is what iceberg-go's REST client returns for a
// commit answered with a 5xx.
var restCommitStateUnknown = rest.ErrCommitStateUnknown

// faultyCatalog injects faults into the commits of versions: before runs
// once before the next commit (another writer commits first: a lost
// race), and lose makes the next commit land and then fail with its error
// (a lost response: the SDK's retry reads 412, the connection breaks after
// the write, a REST catalog's 5xx), and after, when set, runs once after
// such a commit landed, before its error is returned (other writers commit
// before the writer looks again). commits counts the commits of the
// operation under test (not those made inside before or after).
type faultyCatalog struct {
	catalog.Catalog
	mu       sync.Mutex
	before   func()
	lose     error
	after    func()
	commits  int
	inBefore bool
}

func (c *faultyCatalog) Commit(ctx context.Context, n TableName, w *catalog.Write) (committedVersion, string, error) {
	c.mu.Lock()
	before, nested := c.before, c.inBefore
	c.before = nil
	c.mu.Unlock()
	if nested {
		return c.Catalog.Commit(ctx, n, w)
	}
	if before != nil {
		c.mu.Lock()
		c.inBefore = true
		c.mu.Unlock()
		before()
		c.mu.Lock()
		c.inBefore = false
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.commits++
	lose := c.lose
	c.lose = nil
	c.mu.Unlock()
	cv, applied, err := c.Catalog.Commit(ctx, n, w)
	if err == nil && lose != nil {
		c.mu.Lock()
		after := c.after
		c.after, c.inBefore = nil, after != nil
		c.mu.Unlock()
		if after != nil {
			after()
			c.mu.Lock()
			c.inBefore = false
			c.mu.Unlock()
		}
		return committedVersion{}, "", lose
	}
	return cv, applied, err
}

// TestEveryMutationRetriesThroughTheCommitProtocol drives append, expire,
// rollback and a property change through an injected lost race and through
// lost responses (a 412 for our own write, a broken connection, a REST
// catalog's 500 after it committed), on both catalogs: each is retried by
// Table.commit and lands exactly once.
func TestEveryMutationRetriesThroughTheCommitProtocol(t *testing.T) {
	forEachCatalog(t, everyMutationRetries)
}

func everyMutationRetries(t *testing.T, _ *Lake) {
	rest := strings.HasSuffix(t.Name(), "/rest")
	ops := map[string]func(t *testing.T, tbl *Table, snaps []int64) error{
		"append": func(t *testing.T, tbl *Table, _ []int64) error {
			rec := rows(t, tbl.ArrowSchema(), day0, 5, false)
			defer rec.Release()
			p, err := tbl.Prepare(context.Background(), "new.csv", []arrow.RecordBatch{rec}, nil, 0)
			if err != nil {
				return err
			}
			res, err := tbl.Commit(context.Background(), []*Prepared{p}, CommitOptions{})
			if err == nil && (res[0].Duplicate || res[0].Rows != 5) {
				err = fmt.Errorf("append result %+v", res[0])
			}
			return err
		},
		"expire": func(t *testing.T, tbl *Table, _ []int64) error {
			res, err := tbl.Expire(context.Background(), ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1})
			if err == nil && len(res.Expired) != 2 {
				err = fmt.Errorf("expired %d snapshots, want 2", len(res.Expired))
			}
			return err
		},
		"rollback": func(t *testing.T, tbl *Table, snaps []int64) error {
			return tbl.RollbackTo(context.Background(), snaps[0])
		},
		"properties": func(t *testing.T, tbl *Table, _ []int64) error {
			return tbl.SetProperties(context.Background(), map[string]string{"x.under-test": "1"}, nil)
		},
		"delete": func(t *testing.T, tbl *Table, _ []int64) error {
			where, _ := ParseWhere([]string{"device=d1"})
			res, err := tbl.Delete(context.Background(), DeleteOptions{Predicate: DeletePredicate{Where: where}})
			if err == nil && (res.Rows != 3 || res.SnapshotID == 0) {
				err = fmt.Errorf("delete result %+v", res)
			}
			return err
		},
	}
	faults := map[string]func(fc *faultyCatalog, other *Table){
		"lost race": func(fc *faultyCatalog, other *Table) {
			fc.before = func() {
				if err := other.SetProperties(context.Background(), map[string]string{"x.other-writer": "1"}, nil); err != nil {
					panic(err)
				}
			}
		},
		"lost race to an append": func(fc *faultyCatalog, other *Table) {
			fc.before = func() {
				rec := rows(t, other.ArrowSchema(), day0, 2, false)
				defer rec.Release()
				if _, err := other.Append(context.Background(), "other.csv", []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
					panic(err)
				}
			}
		},
		"lost response 412": func(fc *faultyCatalog, _ *Table) {
			fc.lose = fmt.Errorf("put: %w", catalog.ErrVersionTaken)
		},
		"lost response": func(fc *faultyCatalog, _ *Table) {
			fc.lose = errors.New("read tcp: connection reset by peer")
		},
		"catalog 500": func(fc *faultyCatalog, _ *Table) {
			fc.lose = fmt.Errorf("InternalServerError: %w", restCommitStateUnknown)
		},
	}
	for opName, op := range ops {
		for faultName, fault := range faults {
			if (faultName == "lost response 412" && rest) || (faultName == "catalog 500" && !rest) {
				continue // a fault of the other catalog
			}
			if faultName == "lost race to an append" && opName == "rollback" {
				continue // refused: TestRollbackRefusesAMovedBranch
			}
			t.Run(opName+"/"+faultName, func(t *testing.T) {
				ctx := context.Background()
				l := newLocalLake(t)
				if rest {
					l = newRESTLake(t)
				}
				tbl := createTestTable(t, l)
				var snaps []int64
				for i := range 3 {
					snaps = append(snaps, appendRows(t, tbl, fmt.Sprintf("b%d.csv", i), day0, 3).SnapshotID)
				}
				other, err := l.LoadTable(ctx, testName)
				if err != nil {
					t.Fatal(err)
				}
				before := tbl.Version()
				fc := &faultyCatalog{Catalog: l.cat}
				l.cat = fc
				fault(fc, other)
				if err := op(t, tbl, snaps); err != nil {
					t.Fatalf("%s: %v", opName, err)
				}
				l.cat = fc.Catalog
				// A lost race is retried with a second commit; a lost response
				// is recognised by the second attempt, which reads the version.
				// A REST catalog applies a change on top of another writer's
				// property change, which moved no branch and no schema (the
				// requirements hold): no race is lost.
				wantCommits := 1
				if faultName == "lost race to an append" || (faultName == "lost race" && !rest) {
					wantCommits = 2
				}
				if fc.commits != wantCommits {
					t.Errorf("%d commits, want %d", fc.commits, wantCommits)
				}
				fresh, err := l.LoadTable(ctx, testName)
				if err != nil {
					t.Fatal(err)
				}
				want := before + 1
				switch faultName {
				case "lost race":
					want++ // the other writer's version
					if fresh.Properties()["x.other-writer"] != "1" {
						t.Error("the other writer's change was undone")
					}
				case "lost race to an append":
					want++
					if _, ok := fresh.FindBatch("other.csv"); !ok {
						t.Error("the other writer's append was undone")
					}
				}
				if fresh.Version() != want || tbl.Version() != want {
					t.Errorf("versions: table %d, fresh load %d, want %d (the change landed once)", tbl.Version(), fresh.Version(), want)
				}
				switch opName {
				case "append":
					if b, ok := fresh.FindBatch("new.csv"); !ok || b.Rows != 5 {
						t.Errorf("batch new.csv: %+v, %v", b, ok)
					}
				case "rollback":
					if id, _ := fresh.CurrentSnapshotID(); id != snaps[0] {
						t.Errorf("current snapshot %d, want %d", id, snaps[0])
					}
				case "expire":
					want := 1
					if faultName == "lost race to an append" {
						want = 2 // the other writer's snapshot too
					}
					if n := len(fresh.Metadata().Snapshots()); n != want {
						t.Errorf("%d snapshots left, want %d", n, want)
					}
				case "properties":
					if fresh.Properties()["x.under-test"] != "1" {
						t.Error("property not set")
					}
				case "delete":
					// 9 rows, 3 of d1 deleted; the other writer's 2 rows (1
					// of d1) appended before the delete's commit are kept.
					wantRows, wantD1 := 6, int64(0)
					if faultName == "lost race to an append" {
						wantRows, wantD1 = 8, 1
					}
					rows := scanTestRows(t, fresh)
					if d1 := countRows(rows, func(r testRow) bool { return r.device == "d1" }); len(rows) != wantRows || d1 != wantD1 {
						t.Errorf("%d rows, %d of d1; want %d, %d", len(rows), d1, wantRows, wantD1)
					}
				}
				switch opName {
				case "rollback": // a rollback leaves files of the newer snapshots, which stay in the metadata
				case "delete": // the files it replaced stay for the snapshots before
					assertOnlyCurrentFiles(t, l, fresh)
				default:
					assertNoOrphans(t, l, fresh)
				}
			})
		}
	}
}

// TestRollbackRefusesAMovedBranch: a rollback that loses the race to an
// append does not undo that append.
func TestRollbackRefusesAMovedBranch(t *testing.T) {
	forEachCatalog(t, rollbackRefusesAMovedBranch)
}

func rollbackRefusesAMovedBranch(t *testing.T, l *Lake) {
	ctx := context.Background()
	tbl := createTestTable(t, l)
	a := appendRows(t, tbl, "a.csv", day0, 3)
	appendRows(t, tbl, "b.csv", day0, 3)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultyCatalog{Catalog: l.cat, before: func() { appendRows(t, other, "c.csv", day0, 3) }}
	l.cat = fc
	err = tbl.RollbackTo(ctx, a.SnapshotID)
	l.cat = fc.Catalog
	if !errors.Is(err, ErrBranchMoved) {
		t.Fatalf("rollback after a concurrent append: %v, want ErrBranchMoved", err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.FindBatch("c.csv"); !ok {
		t.Fatal("the concurrent append was undone")
	}
}

// TestGivesUpAfterMaxAttempts: a commit that loses every race returns an
// error wrapping ErrCommitFailed and leaves no file of its own.
func TestGivesUpAfterMaxAttempts(t *testing.T) {
	forEachCatalog(t, givesUpAfterMaxAttempts)
}

func givesUpAfterMaxAttempts(t *testing.T, l *Lake) {
	ctx := context.Background()
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "a.csv", day0, 3)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultyCatalog{Catalog: l.cat}
	fc.before = func() { alwaysBefore(t, fc, other) }
	l.cat = fc
	rec := rows(t, tbl.ArrowSchema(), day0, 5, false)
	defer rec.Release()
	_, err = tbl.Append(ctx, "b.csv", []arrow.RecordBatch{rec}, AppendOptions{CommitOptions: CommitOptions{MaxAttempts: 3}})
	l.cat = fc.Catalog
	if err == nil || fc.commits != 3 {
		t.Fatalf("append against a table that always loses: %v after %d commits, want an error after 3", err, fc.commits)
	}
	if !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("error %v does not wrap table.ErrCommitFailed", err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	assertNoOrphans(t, l, fresh)
}

// alwaysBefore makes another writer append before every commit of fc.
func alwaysBefore(t *testing.T, fc *faultyCatalog, other *Table) {
	rec := rows(t, other.ArrowSchema(), day0, 1, false)
	defer rec.Release()
	if _, err := other.Append(context.Background(), fmt.Sprint("other-", time.Now().UnixNano()), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
		t.Error(err)
	}
	fc.mu.Lock()
	fc.before = func() { alwaysBefore(t, fc, other) }
	fc.mu.Unlock()
}

// TestStalledWriterDoesNotCommitIntoADeletedSlot: a writer that stalls
// between reading version N and creating N+1 while others commit enough
// versions for N+1 to be deleted as old must not take its create of N+1 for
// a commit (readers take the highest version): it is recognised as not in
// the history, removed, and the change is committed on the newest version.
func TestStalledWriterDoesNotCommitIntoADeletedSlot(t *testing.T) {
	for _, op := range []string{"append", "properties"} {
		t.Run(op, func(t *testing.T) {
			ctx := context.Background()
			l := newLocalLake(t)
			tbl := createTestTable(t, l)
			appendRows(t, tbl, "first.csv", day0, 3)
			other, err := l.LoadTable(ctx, testName)
			if err != nil {
				t.Fatal(err)
			}
			stalled := tbl.Version() + 1
			// Between its check that its base is the newest and its
			// create, other writers commit one more version than
			// write.metadata.previous-versions-max (5) plus one: the slot it
			// aims at is deleted as old, the one after it is kept.
			others := DefaultMetadataVersions + 2
			fc := &faultyCatalog{Catalog: l.cat, before: func() {
				for i := range others {
					appendRows(t, other, fmt.Sprintf("other-%d.csv", i), day0, 2)
				}
			}}
			l.cat = fc
			switch op {
			case "append":
				appendRows(t, tbl, "stalled.csv", day0, 5)
			case "properties":
				if err := tbl.SetProperties(ctx, map[string]string{"x.stalled": "1"}, nil); err != nil {
					t.Fatal(err)
				}
			}
			l.cat = fc.Catalog
			fresh, err := l.LoadTable(ctx, testName)
			if err != nil {
				t.Fatal(err)
			}
			switch op {
			case "append":
				if _, ok := fresh.FindBatch("stalled.csv"); !ok {
					t.Fatal("the stalled append is not in the newest version's history")
				}
				if n := scanCount(t, fresh); n != 3+5+2*int64(others) {
					t.Fatalf("%d rows", n)
				}
			case "properties":
				if fresh.Properties()["x.stalled"] != "1" {
					t.Fatal("the stalled property change is not in the newest version")
				}
			}
			if fresh.Version() <= stalled || tbl.Version() != fresh.Version() {
				t.Fatalf("versions: stalled slot %d, table %d, newest %d", stalled, tbl.Version(), fresh.Version())
			}
			if _, _, err := storage.ReadAll(ctx, l.store, catalog.MetadataKey(testName, stalled)); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("the version written into the deleted slot v%d is still there (%v)", stalled, err)
			}
		})
	}
}

// outlive installs in l a catalog that loses the response of the next
// commit (which lands) and, before its writer looks again, has other
// commit versions appends of 3 rows at at (enough that the commit's
// version is deleted as an old one) and then, with expire, expire every
// snapshot but the newest (the commit's too). *landed is then the
// commit's snapshot id (the first append's parent); restore puts l's
// catalog back.
func outlive(t *testing.T, l *Lake, other *Table, at time.Time, versions int, expire bool) (landed *int64, restore func()) {
	t.Helper()
	landed = new(int64)
	fc := &faultyCatalog{Catalog: l.cat, lose: fmt.Errorf("put: %w", catalog.ErrVersionTaken), after: func() {
		for i := range versions {
			appendRows(t, other, fmt.Sprintf("late-%d.csv", i), at, 3)
			if p := other.Metadata().CurrentSnapshot().ParentSnapshotID; i == 0 && p != nil {
				*landed = *p
			}
		}
		if !expire {
			return
		}
		if _, err := other.Expire(context.Background(), ExpireOptions{RetainLast: 1, RetainAtMost: 1}); err != nil {
			t.Fatal(err)
		}
	}}
	l.cat = fc
	return landed, func() { l.cat = fc.Catalog }
}

// expiredSnapshot loads l's test table afresh and fails the test unless
// the snapshot id of the what (an append, a compaction...) that outlive
// raced was expired: else the race did not take place.
func expiredSnapshot(t *testing.T, l *Lake, what string, id int64) *Table {
	t.Helper()
	fresh, err := l.LoadTable(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 || fresh.Metadata().SnapshotByID(id) != nil {
		t.Fatalf("the %s's snapshot %d was not expired: the race did not take place", what, id)
	}
	return fresh
}

// TestAppendExpiredBeforeItLearntItLanded: an append's commit lands but
// its response is lost, and before the writer looks again other writers
// commit enough versions that its version is deleted as an old one, and
// an expiry removes its snapshot (timelake.max-snapshots expires young
// snapshots too), leaving its batch to the load history. The batch is the
// writer's own, remembered under the snapshot id it staged: committed, not
// a duplicate; its data files, which the table still references, stay,
// and every row is read once.
func TestAppendExpiredBeforeItLearntItLanded(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
		ctx := context.Background()
		tbl := createTestTable(t, l)
		appendRows(t, tbl, "first.csv", day0.Add(-2*time.Hour), 5)
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		versions := DefaultMetadataVersions + 1
		_, restore := outlive(t, l, other, day0, versions, true)
		res := appendRows(t, tbl, "lost.csv", day0.Add(-time.Hour), 7)
		restore()
		if res.Duplicate || res.Rows != 7 || res.SnapshotID == 0 {
			t.Fatalf("append whose snapshot expired before it learnt its outcome: %+v", res)
		}
		fresh := expiredSnapshot(t, l, "append", res.SnapshotID)
		if n := scanCount(t, fresh); n != 5+7+3*int64(versions) {
			t.Fatalf("%d rows, want %d", n, 5+7+3*versions)
		}
	})
}
