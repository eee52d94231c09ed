package storage

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSilentServerFails: a server that accepts connections and never
// answers fails a request after the response header timeout (the retryer
// may try again), instead of holding the run forever, and the failure is
// explained with a fix.
func TestSilentServerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	defer func(d time.Duration) { responseHeaderTimeout = d }(responseHeaderTimeout)
	responseHeaderTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := NewS3Client(ctx, S3Config{Endpoint: "http://" + ln.Addr().String(), AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	store := NewS3Store(client, "landing", "", S3StoreOptions{})
	_, err = store.Stat(ctx, "gw/a.csv")
	if err == nil || ctx.Err() != nil {
		t.Fatalf("stat on a silent server: %v (ctx %v), want a timeout before the test's minute", err, ctx.Err())
	}
	p := Diagnose(err, Where{}, Names{})
	if p == nil || p.Fix == "" {
		t.Fatalf("the timeout is not explained: %v, problem %+v", err, p)
	}
	t.Logf("%v\n%s\nFix: %s", err, p.Error(), p.Fix)
}

// TestStalledBodyFails: a GET whose body stops coming after its first
// bytes ends with errBodyStalled once no byte came for bodyStallTimeout,
// instead of a read that waits forever; a body that keeps coming, however
// slowly, is read whole.
func TestStalledBodyFails(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		slow := strings.HasSuffix(r.URL.Path, "/slow")
		for i := range 10 {
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			if !slow && i == 0 {
				<-release // stall after the first ten bytes
				return
			}
			if slow {
				time.Sleep(100 * time.Millisecond) // under the stall timeout each time
			}
		}
	}))
	defer srv.Close()
	defer close(release) // before the server's Close, which waits for its handlers
	defer func(d time.Duration) { bodyStallTimeout = d }(bodyStallTimeout)
	bodyStallTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := NewS3Client(ctx, S3Config{Endpoint: srv.URL, AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	store := NewS3Store(client, "landing", "", S3StoreOptions{})
	rc, _, err := store.Get(ctx, "gw/stalls")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, errBodyStalled) || len(got) != 10 || ctx.Err() != nil {
		t.Fatalf("a stalled body: %d bytes, %v", len(got), err)
	}
	rc, _, err = store.Get(ctx, "gw/slow")
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(rc)
	rc.Close()
	if err != nil || len(got) != 100 {
		t.Fatalf("a slow body: %d bytes, %v", len(got), err)
	}
	// A reader that pauses between its reads longer than the timeout is
	// not cut: only a read waiting for bytes is timed.
	rc, _, err = store.Get(ctx, "gw/slow")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 10)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * bodyStallTimeout)
	rest, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(rest) != 90 {
		t.Fatalf("a body read after a pause: %d more bytes, %v", len(rest), err)
	}
}
