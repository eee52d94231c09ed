package serve

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/storage"
)

// TestTakeServesNotificationsInTurn: a load takes one key of each
// notification in turn, so the one key of a later notification is in the
// first load however many keys an earlier one announced.
func TestTakeServesNotificationsInTurn(t *testing.T) {
	q := newQueue(100_000)
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	flood := map[string]waiting{}
	for i := range 5000 {
		flood[fmt.Sprintf("gw/bogus-%05d.csv", i)] = waiting{announced: t0, request: 1}
	}
	q.addAll(flood)
	q.add("gw/real.csv", waiting{announced: t0.Add(time.Second), request: 2})
	q.add("gw/also-real.csv", waiting{announced: t0.Add(2 * time.Second), request: 3})
	got := q.take(200, time.Now())
	if len(got) != 200 {
		t.Fatalf("took %d keys, want 200", len(got))
	}
	for _, k := range []string{"gw/real.csv", "gw/also-real.csv", "gw/bogus-00000.csv"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not in the first load", k)
		}
	}
	if q.len() != 5002-200 {
		t.Fatalf("%d keys left, want %d", q.len(), 5002-200)
	}
}

// TestNotifyCapsEvents: a notification of more than MaxEventsPerRequest
// events is refused whole with 413 (nothing queued); one of exactly that
// many is queued at once, each key once.
func TestNotifyCapsEvents(t *testing.T) {
	s, err := New(Config{Logger: slog.New(slog.DiscardHandler), Ingest: ingest.Config{
		Landing: storage.NewS3Store(nil, "landing", "", storage.S3StoreOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	body := func(n int) string {
		evs := make([]string, n)
		for i := range evs {
			evs[i] = fmt.Sprintf(`{"eventName":"OBJECT_CREATED_PUT","bucket":"landing","object":{"key":"gw/%05d.csv"}}`, i%(MaxEventsPerRequest-1))
		}
		return `{"events":[` + strings.Join(evs, ",") + `]}`
	}
	code, msg := post(t, s.Handler(), body(MaxEventsPerRequest+1))
	if code != 413 || !strings.Contains(msg, fmt.Sprint(MaxEventsPerRequest)) || s.single.queue.len() != 0 {
		t.Fatalf("%d events: %d %q, %d keys queued; want 413 and none", MaxEventsPerRequest+1, code, msg, s.single.queue.len())
	}
	code, msg = post(t, s.Handler(), body(MaxEventsPerRequest))
	var res NotifyResult
	if code != 200 || json.Unmarshal([]byte(msg), &res) != nil || res.Queued != MaxEventsPerRequest {
		t.Fatalf("%d events: %d %s", MaxEventsPerRequest, code, msg)
	}
	if s.single.queue.len() != MaxEventsPerRequest-1 {
		t.Fatalf("%d keys queued, want %d (one key twice)", s.single.queue.len(), MaxEventsPerRequest-1)
	}
}
