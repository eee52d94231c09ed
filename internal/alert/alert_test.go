package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// hook is a webhook that answers with codes in turn (then 200) and keeps
// what it got.
type hook struct {
	mu     sync.Mutex
	codes  []int
	bodies []map[string]any
	block  chan struct{} // when set, requests wait for it
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.block != nil {
		<-h.block
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bodies = append(h.bodies, body)
	code := http.StatusOK
	if len(h.codes) > 0 {
		code, h.codes = h.codes[0], h.codes[1:]
	}
	w.WriteHeader(code)
}

func (h *hook) got() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.bodies...)
}

const secretPath = "/services/T0SECRET/B0SECRET/zXq9PwLm2Rt7Vy4K"

// TestNotifierRetriesAndKeepsTheSecret: a 503 and a lost connection are
// retried with backoff, a 400 is not; the body has Slack's text field;
// neither errors nor logs name the URL's path.
func TestNotifierRetriesAndKeepsTheSecret(t *testing.T) {
	h := &hook{codes: []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	n, err := New(srv.URL+secretPath+"?token=QuerySecret", Options{InitialInterval: time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Notify(Alert{Text: "timelake iot.readings: 1 file quarantined", Event: EventQuarantine, Severity: SeverityWarning, Table: "iot.readings"}) {
		t.Fatal("not queued")
	}
	if left := n.Close(context.Background()); left != 0 {
		t.Fatalf("%d alerts not sent", left)
	}
	got := h.got()
	if len(got) != 3 || got[2]["text"] != "timelake iot.readings: 1 file quarantined" || got[2]["event"] != EventQuarantine {
		t.Fatalf("the webhook got %v, want the alert three times (two refusals retried)", got)
	}
	if sent, failed, _ := n.Counts(); sent != 1 || failed != 0 {
		t.Errorf("sent %d failed %d", sent, failed)
	}

	// Refused for good, and a webhook that cannot be reached: given up,
	// the secret in no line.
	h.codes = []int{http.StatusBadRequest}
	n, _ = New(srv.URL+secretPath, Options{InitialInterval: time.Millisecond, Logger: log})
	n.Notify(Alert{Text: "x"})
	if left := n.Close(context.Background()); left != 1 || len(h.got()) != 4 {
		t.Errorf("a 400: %d not sent, %d requests; want it given up at once", left, len(h.got()))
	}
	srv.Close()
	n, _ = New(srv.URL+secretPath, Options{InitialInterval: time.Millisecond, MaxElapsed: 50 * time.Millisecond, Logger: log})
	n.Notify(Alert{Text: "x"})
	if left := n.Close(context.Background()); left != 1 {
		t.Errorf("an unreachable webhook: %d not sent", left)
	}
	if out := logs.String(); strings.Contains(out, "SECRET") || strings.Contains(out, "QuerySecret") || !strings.Contains(out, "webhook=http://127.0.0.1:") {
		t.Errorf("logs:\n%s", out)
	}
	if err := CheckURL("ftp://x" + secretPath); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("CheckURL: %v", err)
	}
}

// TestNotifyNeverWaits: a webhook that does not answer holds the
// notifier's goroutine, not the caller: past the queue, alerts are dropped.
func TestNotifyNeverWaits(t *testing.T) {
	h := &hook{block: make(chan struct{})}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(h.block)
	n, err := New(srv.URL, Options{Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	queued := 0
	for range 10 {
		if n.Notify(Alert{Text: "x"}) {
			queued++
		}
	}
	// One in flight, two queued: the others dropped, none waited for.
	if queued > 3 {
		t.Errorf("%d queued, want at most 3", queued)
	}
	if _, _, dropped := n.Counts(); dropped < 7 {
		t.Errorf("%d dropped", dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if left := n.Close(ctx); left < 7 {
		t.Errorf("close: %d not sent", left)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/X": "https://hooks.slack.com/…",
		"https://example.com":                    "https://example.com",
		"https://example.com/":                   "https://example.com",
		"https://user:pw@example.com":            "https://example.com/…",
		"https://example.com?k=v":                "https://example.com/…",
		"not a url":                              "(the notify URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTracker, with its state in a local folder and on S3: a condition is
// sent when it begins, not again before RepeatAfter (also by a new
// Tracker, as the next cron run), again after it, and once as resolved;
// conditions of events not updated stay open.
func TestTracker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) storage.Store
	}{
		{"local", func(t *testing.T) storage.Store {
			st, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"s3", func(t *testing.T) storage.Store {
			srv := s3test.FromEnv(t)
			return storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "", storage.S3StoreOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := &hook{}
			srv := httptest.NewServer(h)
			defer srv.Close()
			st := tc.store(t)
			const key = "_timelake/alerts/poller/iot.readings.json"
			now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
			silent := Condition{Key: "gateway-silent/gw-3", Alert: Alert{Text: "gw-3 is silent", Event: EventSilent}, Resolved: "gw-3 lands files again"}
			failed := Condition{Key: "run-failed/ingest", Alert: Alert{Text: "ingest failed", Event: EventRunFailed}, Resolved: "ingest loads again"}
			step := func(at time.Duration, events []string, holding ...Condition) []string {
				t.Helper()
				n, err := New(srv.URL, Options{})
				if err != nil {
					t.Fatal(err)
				}
				before := len(h.got())
				if err := NewTracker(n, st, key, time.Hour).Update(ctx, now.Add(at), events, holding); err != nil {
					t.Fatal(err)
				}
				n.Close(ctx)
				var texts []string
				for _, b := range h.got()[before:] {
					texts = append(texts, b["severity"].(string)+": "+b["text"].(string))
				}
				return texts
			}
			all := []string{EventSilent, EventRunFailed}
			for _, s := range []struct {
				at      time.Duration
				events  []string
				holding []Condition
				want    string
			}{
				{0, all, []Condition{silent, failed}, ": gw-3 is silent|: ingest failed"},
				{time.Minute, all, []Condition{silent, failed}, ""},
				{2 * time.Minute, []string{EventRunFailed}, []Condition{failed}, ""}, // silence not looked at: stays open
				{3 * time.Minute, all, []Condition{silent}, "resolved: ingest loads again"},
				{62 * time.Minute, all, []Condition{silent}, ": gw-3 is silent"},
				{63 * time.Minute, all, nil, "resolved: gw-3 lands files again"},
				{64 * time.Minute, all, nil, ""},
			} {
				got := strings.Join(step(s.at, s.events, s.holding...), "|")
				if got != s.want {
					t.Errorf("at +%s: sent %q, want %q", s.at, got, s.want)
				}
			}
			body, _, err := storage.ReadAll(ctx, st, key)
			if err != nil || strings.TrimSpace(string(body)) != "{}" {
				t.Errorf("state %q, %v; want no open condition", body, err)
			}
		})
	}
}
