package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// DefaultRepeatAfter is how often a condition that lasts is alerted again
// (Alertmanager's default repeat interval).
const DefaultRepeatAfter = 4 * time.Hour

// Condition is something that holds until it is fixed: a silent gateway,
// stuck files, a failing run.
type Condition struct {
	// Key names it among the conditions of its event ("gateway-silent/gw-3").
	Key   string
	Alert Alert
	// Resolved is the text of the alert sent when it ends.
	Resolved string
}

// Tracker alerts conditions through a Notifier: once when one begins,
// again every RepeatAfter while it lasts, and once when it ends. What is
// open is kept in the state object (a small JSON object in the landing
// bucket, below _timelake/), so that a cron poller run every minute
// alerts a silent gateway once, not every minute, and a restart of serve
// does not alert again. Safe for concurrent use.
type Tracker struct {
	n           *Notifier
	store       storage.Store // nil: memory only
	key         string
	repeatAfter time.Duration

	mu     sync.Mutex
	loaded bool
	open   map[string]openCondition
}

// openCondition is an open condition in the state object.
type openCondition struct {
	Event    string    `json:"event"`
	Since    time.Time `json:"since"`
	LastSent time.Time `json:"last_sent"`
	Resolved string    `json:"resolved"`
	// Alert is the last alert sent, the template of the resolved one.
	Alert Alert `json:"alert"`
}

// NewTracker tracks conditions alerted through n, keeping them in store
// at key (nil store: in memory). repeatAfter 0 means DefaultRepeatAfter.
func NewTracker(n *Notifier, store storage.Store, key string, repeatAfter time.Duration) *Tracker {
	if repeatAfter <= 0 {
		repeatAfter = DefaultRepeatAfter
	}
	return &Tracker{n: n, store: store, key: key, repeatAfter: repeatAfter, open: map[string]openCondition{}}
}

// Update says which conditions of the given events hold at now: each one
// that began or is due for a reminder is sent; each one of those events
// that was open and holds no longer is sent as resolved. The state object
// is written when it changed. Errors: reading or writing it (the alerts
// are sent whatever it says).
func (t *Tracker) Update(ctx context.Context, now time.Time, events []string, holding []Condition) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if !t.loaded {
		if err := t.load(ctx); err != nil {
			errs = append(errs, err)
		}
		t.loaded = true
	}
	changed := false
	seen := map[string]bool{}
	for _, c := range holding {
		seen[c.Key] = true
		o, ok := t.open[c.Key]
		if ok && now.Sub(o.LastSent) < t.repeatAfter {
			continue
		}
		if !ok {
			o = openCondition{Event: c.Alert.Event, Since: now.UTC()}
		}
		o.LastSent, o.Resolved, o.Alert = now.UTC(), c.Resolved, c.Alert
		t.open[c.Key] = o
		t.n.Notify(c.Alert)
		changed = true
	}
	for _, k := range slices.Sorted(maps.Keys(t.open)) {
		o := t.open[k]
		if seen[k] || !slices.Contains(events, o.Event) {
			continue
		}
		a := o.Alert
		a.Severity, a.Text, a.Time, a.Files, a.Count, a.Error = SeverityResolved, o.Resolved, now.UTC().Truncate(time.Millisecond), nil, 0, ""
		t.n.Notify(a)
		delete(t.open, k)
		changed = true
	}
	if changed {
		if err := t.save(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Tracker) load(ctx context.Context) error {
	if t.store == nil {
		return nil
	}
	body, _, err := storage.ReadAll(ctx, t.store, t.key)
	if errors.Is(err, storage.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the alert state %s: %w", t.key, err)
	}
	var open map[string]openCondition
	if err := json.Unmarshal(body, &open); err != nil {
		return fmt.Errorf("read the alert state %s: %w (it is written again)", t.key, err)
	}
	maps.Copy(t.open, open)
	return nil
}

func (t *Tracker) save(ctx context.Context) error {
	if t.store == nil {
		return nil
	}
	body, err := json.MarshalIndent(t.open, "", "  ")
	if err != nil {
		return err
	}
	if _, err := t.store.Put(ctx, t.key, bytes.NewReader(append(body, '\n')), storage.PutOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write the alert state %s: %w", t.key, err)
	}
	return nil
}
