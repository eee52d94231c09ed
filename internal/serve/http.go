package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
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

// NotifyResult is the body of a 200 answer to POST /notify.
type NotifyResult struct {
	Queued  int `json:"queued"`
	Ignored int `json:"ignored"`
}

// notify answers a notification: 200 once its keys are queued (also when
// every event is ignored, so that providers do not send it again), 401
// without valid authentication (nothing queued), 400 for a body that is not
// a notification, 413 for one over MaxBody. HEAD answers 200 without
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
	now := time.Now()
	var res NotifyResult
	for _, ev := range n.Events {
		key, why := s.landingKey(ev)
		outcome := "queued"
		switch {
		case why != "":
			outcome = "ignored"
			s.log.Debug("event ignored", "provider", ev.Provider, "event", ev.Name, "bucket", ev.Bucket, "key", ev.Key, "why", why)
		case !s.queue.add(key, waiting{since: eventTime(ev.Time, now), announced: now}):
			outcome = "dropped"
			s.log.Warn("queue full: event dropped (the sweep loads the file)", "key", key)
		}
		if outcome == "queued" {
			res.Queued++
		} else {
			res.Ignored++
		}
		s.metrics.events.WithLabelValues(string(ev.Provider), outcome).Inc()
	}
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

// healthz answers 200 with the Health document while healthy, else 503
// with the reason.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	h, ok := s.health.report(s.queue.len())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(h)
}
