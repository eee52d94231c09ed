// Package alert tells someone when loading needs a person: it posts a
// JSON alert to a webhook (--notify-url, TIMELAKE_NOTIFY_URL) on a
// quarantine, a failed run or load, a gateway gone silent past its
// cadence, and a file stuck in the landing bucket (docs/operations.md).
//
// The body carries a Slack-compatible "text" field, so a Slack (or
// Mattermost, Rocket.Chat, Teams workflow) incoming webhook shows it as it
// is, and typed fields for other receivers. A Notifier sends from a queue
// of its own: Notify never waits, so no load waits for a webhook; each
// alert is retried with exponential backoff and jitter
// (cenkalti/backoff) on network errors, 429 and 5xx answers, within a
// bounded time. The webhook URL usually holds its secret in its path or
// query (a Slack webhook's token): it is never printed, only its scheme
// and host (Redact), also in errors of the HTTP client, which name the URL.
//
// Conditions (a silent gateway, stuck files, a failing run) are alerted
// when they begin, again every RepeatAfter while they last, and once more
// when they end (Tracker); events (quarantines) each time.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Events (Alert.Event).
const (
	EventQuarantine = "quarantine"     // files were quarantined
	EventFailed     = "files-failed"   // files could be neither loaded nor quarantined: they stay in the landing bucket
	EventRunFailed  = "run-failed"     // an ingest run or a serve load stopped on an error
	EventSilent     = "gateway-silent" // a gateway landed nothing for twice its cadence
	EventStuck      = "stuck-files"    // files waited longer than the stuck threshold
)

// Severities (Alert.Severity).
const (
	SeverityWarning  = "warning"
	SeverityError    = "error"
	SeverityResolved = "resolved" // a condition alerted before has ended
)

// Alert is the JSON body posted to the webhook. Fields are only ever
// added.
type Alert struct {
	// Text is one or a few lines for people (Slack's "text").
	Text     string    `json:"text"`
	Event    string    `json:"event"`
	Severity string    `json:"severity"`
	Table    string    `json:"table"`
	Landing  string    `json:"landing,omitempty"`
	Host     string    `json:"host,omitempty"`
	Time     time.Time `json:"time"`
	Gateway  string    `json:"gateway,omitempty"`
	// Count is how many files the alert is about; Files lists up to
	// MaxFiles of them.
	Count int    `json:"count,omitempty"`
	Files []File `json:"files,omitempty"`
	// Error is the error of a failed run or load.
	Error string `json:"error,omitempty"`
}

// File is one file of an alert.
type File struct {
	Key    string `json:"key"`
	Reason string `json:"reason,omitempty"`
}

// MaxFiles bounds the files one alert lists.
const MaxFiles = 20

// Defaults of a Notifier.
const (
	// DefaultQueue bounds the alerts waiting to be sent; past it, new
	// ones are dropped (and counted).
	DefaultQueue = 100
	// DefaultMaxElapsed bounds the retries of one alert.
	DefaultMaxElapsed = 2 * time.Minute
	// DefaultTimeout bounds one request.
	DefaultTimeout = 10 * time.Second
)

// Options tune a Notifier; zero values mean the defaults.
type Options struct {
	Client     *http.Client
	Queue      int
	MaxElapsed time.Duration
	// InitialInterval is the first wait between attempts (backoff's
	// default, 500 ms, when 0; tests shorten it).
	InitialInterval time.Duration
	Logger          *slog.Logger
}

// Notifier posts alerts to one webhook from its own goroutine.
type Notifier struct {
	url   string
	shown string // Redact(url)
	opts  Options
	queue chan Alert
	done  chan struct{}
	host  string

	mu     sync.Mutex
	closed bool

	sent, failed, dropped atomic.Int64
}

// CheckURL checks a webhook URL: absolute http or https with a host.
// Its error never holds the URL's path or query.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("expected an http:// or https:// URL such as https://hooks.slack.com/services/..., got %s", Redact(raw))
	}
	return nil
}

// New starts a Notifier for the webhook at raw. Errors: CheckURL's.
func New(raw string, opts Options) (*Notifier, error) {
	if err := CheckURL(raw); err != nil {
		return nil, err
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: DefaultTimeout}
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.MaxElapsed <= 0 {
		opts.MaxElapsed = DefaultMaxElapsed
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	host, _ := os.Hostname()
	n := &Notifier{url: raw, shown: Redact(raw), opts: opts, queue: make(chan Alert, opts.Queue), done: make(chan struct{}), host: host}
	go n.loop()
	return n, nil
}

// Notify queues a and returns at once; false when the queue is full (the
// alert is dropped and counted) or the Notifier is closed. The time and
// host are filled in when unset, the files cut to MaxFiles.
func (n *Notifier) Notify(a Alert) bool {
	if a.Time.IsZero() {
		a.Time = time.Now().UTC().Truncate(time.Millisecond)
	}
	if a.Host == "" {
		a.Host = n.host
	}
	if len(a.Files) > MaxFiles {
		a.Files = a.Files[:MaxFiles]
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.dropped.Add(1)
		return false
	}
	select {
	case n.queue <- a:
		return true
	default:
		n.dropped.Add(1)
		n.opts.Logger.Warn("alert dropped: the queue of alerts to send is full", "event", a.Event, "webhook", n.shown)
		return false
	}
}

// Close stops taking alerts and waits until those queued are sent (or
// given up on), or until ctx is done. It returns how many could not be
// sent (given up on, dropped, or still queued when ctx ended).
func (n *Notifier) Close(ctx context.Context) int {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
	case <-ctx.Done():
		return int(n.failed.Load()+n.dropped.Load()) + len(n.queue)
	}
	return int(n.failed.Load() + n.dropped.Load())
}

// Counts are what a Notifier did so far.
func (n *Notifier) Counts() (sent, failed, dropped int64) {
	return n.sent.Load(), n.failed.Load(), n.dropped.Load()
}

func (n *Notifier) loop() {
	defer close(n.done)
	for a := range n.queue {
		if err := n.send(context.Background(), a); err != nil {
			n.failed.Add(1)
			n.opts.Logger.Warn("alert not sent", "event", a.Event, "webhook", n.shown, "err", err)
			continue
		}
		n.sent.Add(1)
	}
}

// send posts a, retrying passing failures with backoff.
func (n *Notifier) send(ctx context.Context, a Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b := backoff.NewExponentialBackOff()
	if n.opts.InitialInterval > 0 {
		b.InitialInterval = n.opts.InitialInterval
	}
	_, err = backoff.Retry(ctx, func() (struct{}, error) {
		return struct{}{}, n.post(ctx, body)
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(n.opts.MaxElapsed))
	return err
}

// post sends one request. A 4xx answer other than 408 and 429 is
// permanent: trying again would not help (a revoked webhook, a malformed
// URL). Errors never hold the URL but its scheme and host.
func (n *Notifier) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return backoff.Permanent(errors.New("cannot build the request to " + n.shown))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "timelake")
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %s: %w", ue.Op, n.shown, ue.Err)
		}
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("%s answered %s: %s", n.shown, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 && s <= 60 {
			return backoff.RetryAfter(s)
		}
		return err
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return err
	}
	return backoff.Permanent(err)
}

// Redact shows a webhook URL without what may be its secret: its scheme
// and host, and "/…" when it has a path or query ("https://hooks.slack.com/…").
// Anything that does not parse is shown as "(the notify URL)".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(the notify URL)"
	}
	s := u.Scheme + "://" + u.Host
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		s += "/…"
	}
	return s
}
