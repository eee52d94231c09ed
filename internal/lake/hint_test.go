package lake

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// heldHintStore holds back the writes of the version hint until release
// is closed: a writer that stalls between its commit and its hint.
type heldHintStore struct {
	storage.Store
	held    chan struct{} // closed once a hint write is held
	release chan struct{}
	once    sync.Once
}

func (s *heldHintStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if strings.HasSuffix(key, "/"+versionHintName) {
		s.once.Do(func() { close(s.held) })
		<-s.release
	}
	return s.Store.Put(ctx, key, body, opts)
}

func readHint(t testing.TB, l *Lake) int {
	t.Helper()
	b, _, err := storage.ReadAll(context.Background(), l.store, catalog.MetadataPrefix(testName)+versionHintName)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("version hint %q: %v", b, err)
	}
	return v
}

// TestVersionHintOnlyMovesForward: a writer whose hint write stalls until
// another writer committed a newer version and wrote its hint does not
// take the hint back to its older version.
func TestVersionHintOnlyMovesForward(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		createTestTable(t, l)
		// Writer a is a process of its own on the same warehouse, whose
		// hint writes stall.
		held := &heldHintStore{Store: l.store, held: make(chan struct{}), release: make(chan struct{})}
		a := &Lake{loc: l.loc, store: held, fsF: l.fsF, log: l.log, now: l.now}
		a.cat = catalog.NewFiles(a.warehouse())
		ta, err := a.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan AppendResult)
		go func() { done <- appendRows(t, ta, "a.csv", day0, 2) }()
		<-held.held // a committed v2 and is about to write its hint
		tb, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		b := appendRows(t, tb, "b.csv", day0, 2)
		if got := readHint(t, l); got != b.Version {
			t.Fatalf("hint %d after the newer writer's v%d", got, b.Version)
		}
		close(held.release)
		ra := <-done
		if ra.Version >= b.Version {
			t.Fatalf("a committed v%d, b v%d: the race did not happen", ra.Version, b.Version)
		}
		if got := readHint(t, l); got != b.Version {
			t.Fatalf("version hint %d after the stalled writer of v%d finished, want %d (the newest): it moved backwards", got, ra.Version, b.Version)
		}
	})
}

// TestVersionHintRacingWriters: writers committing at once never leave a
// hint that names an older version than one already named, as a poller
// reading it meanwhile sees, and end on the newest version.
func TestVersionHintRacingWriters(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	createTestTable(t, l)
	stop := make(chan struct{})
	var seen []int
	var pollErr error
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, _, err := storage.ReadAll(ctx, l.store, catalog.MetadataPrefix(testName)+versionHintName)
			if err != nil {
				pollErr = err
				return
			}
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				seen = append(seen, v)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wl, err := Open(ctx, l.loc.Dir, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			tbl, err := wl.LoadTable(ctx, testName)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 5 {
				appendRows(t, tbl, fmt.Sprintf("w%d/%d.csv", w, i), day0, 1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-polled
	if pollErr != nil {
		t.Fatal(pollErr)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("the hint went from %d back to %d", seen[i-1], seen[i])
		}
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if got := readHint(t, l); got != fresh.Version() {
		t.Fatalf("hint %d, newest version %d", got, fresh.Version())
	}
}
