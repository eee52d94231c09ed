package landing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// lostResponseStore makes the Put calls that lose select fail after
// writing (when land is set) or without writing: a write whose outcome the
// caller cannot know. answer412 makes a landed write answer 412, as the
// SDK's retry of a conditional write whose first response was lost does.
type lostResponseStore struct {
	storage.Store
	mu        sync.Mutex
	lose      func(opts storage.PutOptions) bool
	land      bool
	answer412 bool
	onLost    func() // called after a lost write landed
	lost      int
}

var errLost = errors.New("connection reset")

func (s *lostResponseStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	s.mu.Lock()
	lose := s.lose(opts)
	if lose {
		s.lost++
	}
	s.mu.Unlock()
	if !lose {
		return s.Store.Put(ctx, key, body, opts)
	}
	if s.land {
		if _, err := s.Store.Put(ctx, key, body, opts); err != nil {
			return storage.ObjectInfo{}, err
		}
		if s.onLost != nil {
			s.onLost()
		}
		if s.answer412 {
			return storage.ObjectInfo{}, storage.ErrPreconditionFailed
		}
	}
	return storage.ObjectInfo{}, errLost
}

func always(storage.PutOptions) bool { return true }

func localStore(t *testing.T) *storage.LocalStore {
	t.Helper()
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// holder is a holder on another host, so that liveness never depends on
// this machine's processes.
func holder(token string) Holder { return Holder{Token: token, Host: "elsewhere", PID: 1} }

func opts(token, prefix string) LeaseOptions {
	return LeaseOptions{Table: "iot.readings", Prefix: prefix, Holder: holder(token), TTL: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestLeaseLostResponses(t *testing.T) {
	ctx := context.Background()
	key := LeaseKey("iot.readings", "")

	t.Run("create landed, response lost", func(t *testing.T) {
		for _, answer412 := range []bool{false, true} {
			local := localStore(t)
			store := &lostResponseStore{Store: local, lose: func(o storage.PutOptions) bool { return o.IfAbsent }, land: true, answer412: answer412}
			l, err := AcquireLease(ctx, store, opts("run-a", ""))
			if err != nil {
				t.Fatalf("412 %v: %v, want the lease (our own write)", answer412, err)
			}
			if err := l.Renew(ctx); err != nil {
				t.Fatalf("renew after adopting: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := local.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
				t.Fatalf("lease left after release: %v", err)
			}
		}
	})

	t.Run("create never landed", func(t *testing.T) {
		local := localStore(t)
		store := &lostResponseStore{Store: local, lose: always}
		if _, err := AcquireLease(ctx, store, opts("run-a", "")); !errors.Is(err, errLost) {
			t.Fatalf("error %v, want the write's", err)
		}
		if _, err := local.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("a lease appeared: %v", err)
		}
	})

	t.Run("create landed while the run was cancelled", func(t *testing.T) {
		local := localStore(t)
		cctx, cancel := context.WithCancel(ctx)
		store := &lostResponseStore{Store: local, land: true, lose: always, onLost: cancel}
		if _, err := AcquireLease(cctx, store, opts("run-a", "")); !errors.Is(err, errLost) {
			t.Fatalf("error %v, want the write's", err)
		}
		if _, err := local.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("the cancelled run's lease was left behind: %v", err)
		}
	})

	t.Run("renewal landed, response lost", func(t *testing.T) {
		local := localStore(t)
		store := &lostResponseStore{Store: local, lose: func(o storage.PutOptions) bool { return o.IfMatch != "" }, land: true, answer412: true}
		l, err := AcquireLease(ctx, store, opts("run-a", ""))
		if err != nil {
			t.Fatal(err)
		}
		before := l.Expires()
		time.Sleep(2 * time.Millisecond) // a new expiry, a new file time
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("a renewal that meets its own lease: %v", err)
		}
		if !l.Expires().After(before) {
			t.Fatalf("expiry %s not after %s", l.Expires(), before)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := local.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("lease left after release: %v", err)
		}
	})

	t.Run("renewal not landed", func(t *testing.T) {
		local := localStore(t)
		store := &lostResponseStore{Store: local, lose: func(o storage.PutOptions) bool { return o.IfMatch != "" }}
		l, err := AcquireLease(ctx, store, opts("run-a", ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Renew(ctx); !errors.Is(err, errLost) || errors.Is(err, ErrLeaseTaken) {
			t.Fatalf("error %v, want the write's (the lease is still ours)", err)
		}
	})
}

func TestLeaseHeldTakenOverAndReleased(t *testing.T) {
	ctx := context.Background()
	store := localStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	a := opts("run-a", "")
	a.Now = clock
	first, err := AcquireLease(ctx, store, a)
	if err != nil {
		t.Fatal(err)
	}
	b := opts("run-b", "")
	b.Now = clock
	var held *LeaseHeldError
	if _, err := AcquireLease(ctx, store, b); !errors.As(err, &held) || held.Holder != "run-a" {
		t.Fatalf("second run: %v, want held by run-a", err)
	}
	if !strings.Contains(held.Error(), "since") || !strings.Contains(held.Error(), "expires by itself at") || strings.Contains(held.Error(), "--break-lease") {
		t.Errorf("message %q does not say since when and until when, or invites breaking a live lease", held.Error())
	}

	now = now.Add(2 * time.Minute) // run-a's lease expired
	second, err := AcquireLease(ctx, store, b)
	if err != nil {
		t.Fatalf("take-over of an expired lease: %v", err)
	}
	if err := first.Renew(ctx); !errors.Is(err, ErrLeaseTaken) {
		t.Fatalf("renewal of a lease taken over: %v", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _, err := storage.ReadAll(ctx, store, first.Key()); err != nil || !bytes.Contains(b, []byte(`"run-b"`)) {
		t.Fatalf("run-a's release removed run-b's lease: %q %v", b, err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseOfADeadProcess: a lease whose holder is a process that no longer
// runs on this host is taken over at once, and the log says so; a live
// process's lease, or one from another host, blocks.
func TestLeaseOfADeadProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process liveness is read from /proc")
	}
	ctx := context.Background()
	self := NewHolder()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	dead := self
	dead.Token, dead.PID, dead.Start = "dead-run", cmd.Process.Pid, 0
	alive := self
	alive.Token = "live-run-of-this-process"
	other := dead
	other.Token, other.Host = "run-on-another-host", "another-host"

	for _, tc := range []struct {
		name     string
		holder   Holder
		takeOver bool
	}{
		{"dead process on this host", dead, true},
		{"live process on this host", alive, false},
		{"same pid on another host", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := localStore(t)
			if _, err := AcquireLease(ctx, store, LeaseOptions{Table: "iot.readings", Holder: tc.holder, TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			_, err := AcquireLease(ctx, store, LeaseOptions{Table: "iot.readings", TTL: time.Hour,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if tc.takeOver {
				if err != nil {
					t.Fatalf("lease of a dead process not taken over: %v", err)
				}
				if !strings.Contains(logs.String(), "died on this host") || !strings.Contains(logs.String(), "dead-run") {
					t.Fatalf("the log does not say so: %q", logs.String())
				}
			} else if !errors.Is(err, ErrLeaseHeld) {
				t.Fatalf("error %v, want held", err)
			}
		})
	}
}

// fastBackoff shortens the back-off of runs that met an overlapping lease.
func fastBackoff(t *testing.T) {
	d := overlapBackoff
	overlapBackoff = time.Millisecond
	t.Cleanup(func() { overlapBackoff = d })
}

func TestLeasePrefixes(t *testing.T) {
	fastBackoff(t)
	ctx := context.Background()
	store := localStore(t)
	pa, err := AcquireLease(ctx, store, opts("run-a", "pa/"))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := AcquireLease(ctx, store, opts("run-b", "pb/"))
	if err != nil {
		t.Fatalf("a disjoint prefix: %v", err)
	}
	for _, prefix := range []string{"", "p", "pa/", "pa/x/"} {
		var held *LeaseHeldError
		if _, err := AcquireLease(ctx, store, opts("run-c", prefix)); !errors.As(err, &held) {
			t.Fatalf("prefix %q: %v, want held", prefix, err)
		}
		if prefix != "pa/" && !strings.Contains(held.Error(), "overlaps") {
			t.Errorf("prefix %q: message %q does not say the prefixes overlap", prefix, held.Error())
		}
	}
	for _, l := range []*Lease{pa, pb} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	_ = store.List(ctx, "", func(o storage.ObjectInfo) error { keys = append(keys, o.Key); return nil })
	if len(keys) != 0 {
		t.Fatalf("left behind by backed-off runs: %v", keys)
	}

	// A lease of an earlier timelake (no prefix: the whole bucket) blocks
	// every prefix.
	old, _ := json.Marshal(map[string]any{"holder": "old:1", "acquired": time.Now(), "expires": time.Now().Add(time.Minute)})
	if _, err := store.Put(ctx, LeaseKey("iot.readings", ""), bytes.NewReader(old), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLease(ctx, store, opts("run-d", "pa/")); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("an earlier version's lease: %v, want held", err)
	}
	// Another table's lease never blocks.
	if _, err := AcquireLease(ctx, store, LeaseOptions{Table: "iot.readings2", Holder: holder("run-e"), TTL: time.Minute}); err != nil {
		t.Fatalf("another table: %v", err)
	}
}

// TestLeaseRacingOverlaps: runs on overlapping prefixes that start at the
// same time never both hold a lease.
func TestLeaseRacingOverlaps(t *testing.T) {
	fastBackoff(t)
	ctx := context.Background()
	for range 10 {
		store := localStore(t)
		var mu sync.Mutex
		holding := 0
		var wg sync.WaitGroup
		for i, prefix := range []string{"", "pa/", "pa/x", "p"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := AcquireLease(ctx, store, opts("run-"+prefix, prefix))
				if errors.Is(err, ErrLeaseHeld) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holding++
				n := holding
				mu.Unlock()
				if n > 1 {
					t.Errorf("run %d: %d runs hold overlapping leases", i, n)
				}
				time.Sleep(10 * time.Millisecond)
				mu.Lock()
				holding--
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}

func TestBreakLeases(t *testing.T) {
	ctx := context.Background()
	store := localStore(t)
	if _, err := AcquireLease(ctx, store, opts("stuck-run", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLease(ctx, store, LeaseOptions{Table: "other.table", Holder: holder("other-table"), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	broken, err := BreakLeases(ctx, store, opts("operator", "pa/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) != 1 || broken[0].Holder != "stuck-run" || broken[0].State != "live" || broken[0].Acquired.IsZero() {
		t.Fatalf("broken %+v", broken)
	}
	if _, err := AcquireLease(ctx, store, opts("next", "pa/")); err != nil {
		t.Fatalf("after breaking: %v", err)
	}
	if _, err := store.Stat(ctx, LeaseKey("other.table", "")); err != nil {
		t.Fatalf("another table's lease was broken: %v", err)
	}
}

// TestLeaseHeldNamesItsHolder checks what a refused run is told: the
// holder's kind, host and PID, since and until when; the previous ingest
// of the same prefix is a backlog (Busy), a serve is named as such, and
// --break-lease is suggested only for a holder known to be gone.
func TestLeaseHeldNamesItsHolder(t *testing.T) {
	ctx := context.Background()
	store := localStore(t)
	held := func(holder, refused Holder) *LeaseHeldError {
		t.Helper()
		first := opts("", "")
		first.Holder = holder
		l, err := AcquireLease(ctx, store, first)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		second := opts("", "")
		second.Holder = refused
		var he *LeaseHeldError
		if _, err := AcquireLease(ctx, store, second); !errors.As(err, &he) {
			t.Fatalf("%v, want held", err)
		}
		return he
	}
	other := func(kind string) Holder {
		return Holder{Token: "poller-1:4242:0a1b2c", Kind: kind, Host: "poller-1", PID: 4242}
	}
	self := func(kind string) Holder { h := NewHolder(); h.Kind = kind; return h }

	e := held(other(HolderIngest), self(HolderIngest))
	if !e.Busy() || !strings.HasPrefix(e.Error(), "the previous run is still working: ingest poller-1:4242:0a1b2c (host poller-1, pid 4242) holds the lease _timelake/lease/iot.readings.json since ") ||
		!strings.Contains(e.Error(), "; this run did nothing (if that run died, its lease expires by itself at ") {
		t.Errorf("previous ingest: busy %v, %q", e.Busy(), e.Error())
	}
	e = held(other(HolderServe), self(HolderIngest))
	if e.Busy() || !strings.HasPrefix(e.Error(), "serve poller-1:4242:0a1b2c (host poller-1, pid 4242) holds the lease") ||
		!strings.Contains(e.Error(), "a serve loads this table, so ingest does not") || strings.Contains(e.Error(), "--break-lease") {
		t.Errorf("serve: busy %v, %q", e.Busy(), e.Error())
	}
	if e = held(other(HolderServe), self(HolderServe)); e.Busy() || strings.Contains(e.Error(), "so ingest does not") {
		t.Errorf("serve waiting for serve: %q", e.Error())
	}
	if e = held(other(""), self(HolderIngest)); e.Busy() || !strings.HasPrefix(e.Error(), "poller-1:4242:0a1b2c (host poller-1, pid 4242) holds") {
		t.Errorf("a lease of an earlier version: busy %v, %q", e.Busy(), e.Error())
	}
	if runtime.GOOS == "linux" { // where a holder's process can be told alive
		// A holder on this host whose process runs (this test's).
		mine := self(HolderIngest)
		mine.Token += "-first"
		if e = held(mine, self(HolderIngest)); !e.OnThisHost || !strings.Contains(e.Error(), fmt.Sprintf("(its process %d is running on this host)", os.Getpid())) {
			t.Errorf("on this host: %+v %q", e, e.Error())
		}
	}
	for _, state := range []string{"expired", "dead"} {
		e := &LeaseHeldError{Key: "k", Holder: "h", Kind: HolderIngest, MineKind: HolderIngest, State: state, Expires: time.Now()}
		if e.Busy() || !strings.Contains(e.Error(), "timelake ingest --break-lease removes it now") {
			t.Errorf("%s: busy %v, %q", state, e.Busy(), e.Error())
		}
	}
}
