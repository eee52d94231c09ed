package landing

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// lostResponseStore fails every Put with errLost, after writing it when
// land is set: a cancelled or interrupted write whose outcome the caller
// cannot know.
type lostResponseStore struct {
	storage.Store
	land bool
}

var errLost = errors.New("connection reset")

func (s *lostResponseStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if s.land {
		if _, err := s.Store.Put(ctx, key, body, opts); err != nil {
			return storage.ObjectInfo{}, err
		}
	}
	return storage.ObjectInfo{}, errLost
}

// TestLeaseWriteWithUnknownOutcome: when the lease write fails but may have
// landed, AcquireLease returns the write's error and leaves no lease behind
// (it would block every run for its TTL); another holder's lease is kept.
func TestLeaseWriteWithUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	const key = "_timelake/lease/iot.readings.json"
	for _, land := range []bool{true, false} {
		local, err := storage.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		store := &lostResponseStore{Store: local, land: land}
		if _, err := AcquireLease(ctx, store, key, "host:1", time.Minute, nil); !errors.Is(err, errLost) {
			t.Fatalf("landed %v: error %v, want the write's", land, err)
		}
		if _, err := local.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("landed %v: a lease was left behind (%v)", land, err)
		}
	}

	// An expired lease of another run, taken over by a write that fails
	// without landing: the other run's lease stays.
	local, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if _, err := AcquireLease(ctx, local, key, "other:2", time.Minute, func() time.Time { return old }); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLease(ctx, &lostResponseStore{Store: local}, key, "host:1", time.Minute, nil); !errors.Is(err, errLost) {
		t.Fatalf("take-over: error %v, want the write's", err)
	}
	if b, _, err := storage.ReadAll(ctx, local, key); err != nil || !strings.Contains(string(b), `"other:2"`) {
		t.Errorf("the other run's lease: %q, %v", b, err)
	}
}
