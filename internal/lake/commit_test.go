package lake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/storage"
)

// faultyCatalog injects faults into the conditional create of versions:
// before runs once before the next create (another writer commits first: a
// lost race), and lose makes the next create land and then fail with its
// error (a lost response: the SDK's retry reads 412, or the connection
// breaks after the write). creates counts the creates of the operation
// under test (not those made inside before).
type faultyCatalog struct {
	catalog
	mu       sync.Mutex
	before   func()
	lose     error
	creates  int
	inBefore bool
}

func (c *faultyCatalog) create(ctx context.Context, n TableName, v int, body []byte) error {
	c.mu.Lock()
	before, nested := c.before, c.inBefore
	c.before = nil
	c.mu.Unlock()
	if nested {
		return c.catalog.create(ctx, n, v, body)
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
	c.creates++
	lose := c.lose
	c.lose = nil
	c.mu.Unlock()
	err := c.catalog.create(ctx, n, v, body)
	if err == nil && lose != nil {
		return lose
	}
	return err
}

// TestEveryMutationRetriesThroughTheCommitProtocol drives append, expire,
// rollback and a property change through an injected lost race and through
// lost responses (a 412 for our own write, and a broken connection): each
// is retried by Table.commit and lands exactly once.
func TestEveryMutationRetriesThroughTheCommitProtocol(t *testing.T) {
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
	}
	faults := map[string]func(fc *faultyCatalog, other *Table){
		"lost race": func(fc *faultyCatalog, other *Table) {
			fc.before = func() {
				if err := other.SetProperties(context.Background(), map[string]string{"x.other-writer": "1"}, nil); err != nil {
					panic(err)
				}
			}
		},
		"lost response 412": func(fc *faultyCatalog, _ *Table) {
			fc.lose = fmt.Errorf("put: %w", errVersionTaken)
		},
		"lost response": func(fc *faultyCatalog, _ *Table) {
			fc.lose = errors.New("read tcp: connection reset by peer")
		},
	}
	for opName, op := range ops {
		for faultName, fault := range faults {
			t.Run(opName+"/"+faultName, func(t *testing.T) {
				ctx := context.Background()
				l := newLocalLake(t)
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
				fc := &faultyCatalog{catalog: l.cat}
				l.cat = fc
				fault(fc, other)
				if err := op(t, tbl, snaps); err != nil {
					t.Fatalf("%s: %v", opName, err)
				}
				l.cat = fc.catalog
				// A lost race is retried with a second create; a lost response
				// is recognised by the second attempt, which reads the version.
				wantCreates := 1
				if faultName == "lost race" {
					wantCreates = 2
				}
				if fc.creates != wantCreates {
					t.Errorf("%d conditional creates, want %d", fc.creates, wantCreates)
				}
				fresh, err := l.LoadTable(ctx, testName)
				if err != nil {
					t.Fatal(err)
				}
				want := before + 1
				if faultName == "lost race" {
					want++ // the other writer's version
					if fresh.Properties()["x.other-writer"] != "1" {
						t.Error("the other writer's change was undone")
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
					if n := len(fresh.Metadata().Snapshots()); n != 1 {
						t.Errorf("%d snapshots left, want 1", n)
					}
				case "properties":
					if fresh.Properties()["x.under-test"] != "1" {
						t.Error("property not set")
					}
				}
				if opName != "rollback" { // a rollback leaves files of the newer snapshots, which stay in the metadata
					assertNoOrphans(t, l, fresh)
				}
			})
		}
	}
}

// TestRollbackRefusesAMovedBranch: a rollback that loses the race to an
// append does not undo that append.
func TestRollbackRefusesAMovedBranch(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	a := appendRows(t, tbl, "a.csv", day0, 3)
	appendRows(t, tbl, "b.csv", day0, 3)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultyCatalog{catalog: l.cat, before: func() { appendRows(t, other, "c.csv", day0, 3) }}
	l.cat = fc
	err = tbl.RollbackTo(ctx, a.SnapshotID)
	l.cat = fc.catalog
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
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "a.csv", day0, 3)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultyCatalog{catalog: l.cat}
	fc.before = func() { alwaysBefore(t, fc, other) }
	l.cat = fc
	rec := rows(t, tbl.ArrowSchema(), day0, 5, false)
	defer rec.Release()
	_, err = tbl.Append(ctx, "b.csv", []arrow.RecordBatch{rec}, AppendOptions{CommitOptions: CommitOptions{MaxAttempts: 3}})
	l.cat = fc.catalog
	if err == nil || fc.creates != 3 {
		t.Fatalf("append against a table that always loses: %v after %d creates, want an error after 3", err, fc.creates)
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

// alwaysBefore makes another writer commit before every create of fc.
func alwaysBefore(t *testing.T, fc *faultyCatalog, other *Table) {
	if err := other.SetProperties(context.Background(), map[string]string{"x.n": fmt.Sprint(time.Now().UnixNano())}, nil); err != nil {
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
			fc := &faultyCatalog{catalog: l.cat, before: func() {
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
			l.cat = fc.catalog
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
			if _, _, err := storage.ReadAll(ctx, l.store, metadataKey(testName, stalled)); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("the version written into the deleted slot v%d is still there (%v)", stalled, err)
			}
		})
	}
}
