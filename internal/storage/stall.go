package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// bodyStallTimeout bounds the wait for the next bytes of an object's body
// once its GET was answered: a connection that stops sending in the middle
// of a body (a dropped route, a hung proxy) ends the read with an error
// instead of holding the run forever. responseHeaderTimeout bounds the
// wait before the headers; the body can take as long as it takes while its
// bytes keep coming.
var bodyStallTimeout = 60 * time.Second

// errBodyStalled is the error of a read that bodyStallTimeout ended.
var errBodyStalled = errors.New("the connection stopped sending the object's bytes")

// stallGuard is an object's body whose reads end with errBodyStalled when
// one waits bodyStallTimeout for a byte: it cancels the request's context,
// which aborts the read under it. Only a read in progress is timed: a
// reader that pauses between reads (a Parquet reader between column
// chunks) is not cut.
type stallGuard struct {
	body   io.ReadCloser
	key    string
	cancel context.CancelFunc
	timer  *time.Timer

	mu      sync.Mutex
	reading bool
	stalled bool
}

// guardBody returns body guarded by cancel, the cancel function of the
// context its request was made with.
func guardBody(body io.ReadCloser, key string, cancel context.CancelFunc) *stallGuard {
	g := &stallGuard{body: body, key: key, cancel: cancel}
	g.timer = time.AfterFunc(time.Hour, g.expire)
	g.timer.Stop()
	return g
}

// expire ends the read in progress, if any.
func (g *stallGuard) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reading {
		g.stalled = true
		g.cancel()
	}
}

func (g *stallGuard) Read(p []byte) (int, error) {
	g.mu.Lock()
	g.reading = true
	g.mu.Unlock()
	g.timer.Reset(bodyStallTimeout)
	n, err := g.body.Read(p)
	g.timer.Stop()
	g.mu.Lock()
	g.reading = false
	stalled := g.stalled
	g.mu.Unlock()
	if err != nil && err != io.EOF && stalled {
		err = fmt.Errorf("get %s: no byte for %s: %w", g.key, bodyStallTimeout, errBodyStalled)
	}
	return n, err
}

func (g *stallGuard) Close() error {
	g.timer.Stop()
	err := g.body.Close()
	g.cancel()
	return err
}
