package storage

import (
	"context"
	"net"
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
