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
// no byte came for bodyStallTimeout: it cancels the request's context,
// which aborts the read under it.
type stallGuard struct {
	body   io.ReadCloser
	key    string
	cancel context.CancelFunc
	timer  *time.Timer

	mu      sync.Mutex
	stalled bool
}

// guardBody returns body guarded by cancel, the cancel function of the
// context its request was made with.
func guardBody(body io.ReadCloser, key string, cancel context.CancelFunc) *stallGuard {
	g := &stallGuard{body: body, key: key, cancel: cancel}
	g.timer = time.AfterFunc(bodyStallTimeout, func() {
		g.mu.Lock()
		g.stalled = true
		g.mu.Unlock()
		cancel()
	})
	return g
}

func (g *stallGuard) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	if n > 0 {
		g.timer.Reset(bodyStallTimeout)
	}
	if err != nil && err != io.EOF {
		g.mu.Lock()
		stalled := g.stalled
		g.mu.Unlock()
		if stalled {
			err = fmt.Errorf("get %s: no byte for %s: %w", g.key, bodyStallTimeout, errBodyStalled)
		}
	}
	return n, err
}

func (g *stallGuard) Close() error {
	g.timer.Stop()
	err := g.body.Close()
	g.cancel()
	return err
}
