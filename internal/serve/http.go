package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/timelake/timelake/internal/storage"
)

// Handler is the server's HTTP API: POST /notify, GET /healthz, GET
// /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/notify", s.notify)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// NotifyResult is the body of a 200 answer to POST /notify: how many of
// its events were queued, and how many were not (ignored, or dropped
// because the queue was full).
type NotifyResult struct {
	Queued  int `json:"queued"`
	Ignored int `json:"ignored"`
}

// MaxEventsPerRequest bounds the events of one notification: Tigris batches
// a few events per request, MinIO and AWS send one, so a request with more
// is not a provider's; it is refused whole (413), and the sweep loads
// whatever files it named.
const MaxEventsPerRequest = 1000

// notify answers a notification: 200 once its keys are queued (also when
// every event is ignored, so that providers do not send it again), 401
// without valid authentication (nothing queued), 400 for a body that is not
// a notification, 413 for one over MaxBody or with more than
// MaxEventsPerRequest events (nothing queued). HEAD answers 200 without
// authentication: MinIO probes its webhook target so.
func (s *Server) notify(w http.ResponseWriter, r *http.Request) {
	code := s.serveNotify(w, r)
	s.metrics.requests.WithLabelValues(strconv.Itoa(code)).Inc()
}

func (s *Server) serveNotify(w http.ResponseWriter, r *http.Request) int {
	switch r.Method {
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, HEAD")
		http.Error(w, "POST a notification to /notify", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	if !s.authorized(r) {
		if s.cfg.Auth.Token != "" {
			w.Header().Add("WWW-Authenticate", `Bearer realm="timelake"`)
		}
		if s.cfg.Auth.User != "" {
			w.Header().Add("WWW-Authenticate", `Basic realm="timelake"`)
		}
		s.log.Warn("notification refused: no valid authentication", "remote", r.RemoteAddr)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return http.StatusUnauthorized
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.log.Warn("notification refused: body too large", "remote", r.RemoteAddr, "limit_bytes", s.cfg.MaxBody)
		http.Error(w, "body larger than "+strconv.FormatInt(s.cfg.MaxBody, 10)+" bytes", http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge
	case err != nil:
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	n, err := ParseNotification(body)
	if err != nil {
		s.log.Warn("notification refused", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	if n.SubscribeURL != "" {
		s.log.Warn("SNS asks to confirm a subscription: open this URL once to confirm it", "url", n.SubscribeURL)
	}
	if len(n.Events) > MaxEventsPerRequest {
		s.log.Warn("notification refused: too many events", "remote", r.RemoteAddr, "events", len(n.Events), "limit", MaxEventsPerRequest)
		http.Error(w, fmt.Sprintf("%d events in one request, more than %d: nothing queued (the sweep loads the files)",
			len(n.Events), MaxEventsPerRequest), http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge
	}
	now := time.Now()
	request := s.requests.Add(1)
	var res NotifyResult
	keys := map[string]waiting{}
	for _, ev := range n.Events {
		key, why := s.landingKey(ev)
		if why != "" {
			res.Ignored++
			s.metrics.events.WithLabelValues(string(ev.Provider), "ignored").Inc()
			s.log.Debug("event ignored", "provider", ev.Provider, "event", ev.Name, "bucket", ev.Bucket, "key", ev.Key, "why", why)
			continue
		}
		w := waiting{since: eventTime(ev.Time, now), announced: now, request: request}
		if old, ok := keys[key]; ok {
			w = old.older(w)
		}
		keys[key] = w
		res.Queued++
	}
	// The keys of one notification are queued at once, so that a load
	// takes them in one lookup (serve.go, loadQueued).
	dropped, unrouted := s.enqueue(keys)
	if unrouted > 0 {
		res.Queued -= unrouted
		res.Ignored += unrouted
		s.metrics.events.WithLabelValues(string(n.Provider), "unrouted").Add(float64(unrouted))
	}
	if dropped > 0 {
		res.Queued -= dropped
		res.Ignored += dropped
		s.metrics.events.WithLabelValues(string(n.Provider), "dropped").Add(float64(dropped))
		s.log.Warn("queue full: events dropped (the sweep loads their files)", "events", dropped)
	}
	s.metrics.events.WithLabelValues(string(n.Provider), "queued").Add(float64(res.Queued))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(res)
	return http.StatusOK
}

// eventTime is when a file landed according to its event, or now when the
// event does not say or says a time ahead of this clock.
func eventTime(t, now time.Time) time.Time {
	if t.IsZero() || t.After(now) {
		return now
	}
	return t
}

// authorized checks the Authorization header against Auth, in constant
// time (both sides are hashed first, so not even the length leaks): a
// bearer token (with or without the "Bearer" scheme) or basic
// authentication.
func (s *Server) authorized(r *http.Request) bool {
	a := s.cfg.Auth
	if !a.Enabled() {
		return true
	}
	h := r.Header.Get("Authorization")
	if a.Token != "" {
		// "Bearer <token>", or the token alone: MinIO sends its auth_token
		// as the header's value as it is.
		tok := h
		if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			tok = strings.TrimSpace(rest)
		}
		if equal(tok, a.Token) {
			return true
		}
	}
	if u, p, ok := r.BasicAuth(); a.User != "" && ok {
		// Both compared, whatever the first gives.
		uok, pok := equal(u, a.User), equal(p, a.Password)
		return uok && pok
	}
	return false
}

func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// landingKey maps an event to its landing key, or says why it is ignored:
// not a created object, another bucket, outside the landing location or
// --prefix, or a key the listing skips (timelake's own objects, the
// quarantine, hidden and partial files).
func (s *Server) landingKey(ev Event) (key, ignored string) {
	if !ev.Created {
		return "", "not an object created: " + ev.Name
	}
	key = ev.Key
	if s.landing.IsS3() {
		if ev.Bucket != s.landing.Bucket {
			return "", "another bucket"
		}
		if s.landing.Prefix != "" {
			var ok bool
			if key, ok = strings.CutPrefix(key, s.landing.Prefix+"/"); !ok {
				return "", "outside the landing prefix " + s.landing.Prefix
			}
		}
	}
	if storage.ValidateKey(key) != nil {
		return "", "not a valid key"
	}
	if s.bucket.Skipped(key) {
		return "", "timelake's own object, the quarantine, or a hidden or partial file"
	}
	if !strings.HasPrefix(key, s.cfg.Ingest.Prefix) {
		return "", "outside --prefix " + s.cfg.Ingest.Prefix
	}
	return key, ""
}

// enqueue queues the keys of one notification and returns how many were
// dropped because the queue was full, and how many no route takes.
func (s *Server) enqueue(ws map[string]waiting) (dropped, unrouted int) {
	if s.router != nil {
		return s.router.enqueue(ws)
	}
	return s.single.queue.addAll(ws), 0
}

// healthz answers 200 with the Health document while healthy, else 503
// with the reason. With routes, ?table=NAME answers for that table alone
// (404 for a table that has no lane).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	var h Health
	var ok bool
	switch table := r.URL.Query().Get("table"); {
	case s.router != nil && table != "":
		l := s.router.laneNamed(table)
		if l == nil {
			http.Error(w, "no table "+strconv.Quote(table)+" is served (yet): a table is served once a route names it or a key of it is found", http.StatusNotFound)
			return
		}
		h, ok = l.health.report(l.queue.len())
	case s.router != nil:
		h, ok = s.router.report()
	default:
		h, ok = s.single.health.report(s.single.queue.len())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(h)
}
