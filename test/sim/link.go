package sim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// LinkState is the state of a node's network path to the API server.
type LinkState int

const (
	// LinkUp passes every request.
	LinkUp LinkState = iota
	// LinkDropped refuses new requests and ends those under way (a watch
	// ends at once), as a proxy that drops connections would.
	LinkDropped
	// LinkStalled holds new requests, and the reads of those under way,
	// until the link changes or the request's context ends, as a proxy
	// that stops forwarding would.
	LinkStalled
)

func (s LinkState) String() string {
	switch s {
	case LinkUp:
		return "up"
	case LinkDropped:
		return "dropped"
	case LinkStalled:
		return "stalled"
	}
	return "unknown"
}

// errLinkDropped is what a dropped link's requests fail with.
var errLinkDropped = errors.New("connection refused: the node's link to the API server is dropped")

// link is one memory node's path to the API server: the round tripper its
// daemon's client goes through.
type link struct {
	mu    sync.Mutex
	state LinkState
	// changed is closed, and replaced, at every change of state.
	changed chan struct{}
	// bodies are the responses being read, which a drop ends.
	bodies map[*linkBody]struct{}
}

func newLink() *link {
	return &link{changed: make(chan struct{}), bodies: map[*linkBody]struct{}{}}
}

func (l *link) now() (LinkState, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.changed
}

func (l *link) set(s LinkState) {
	l.mu.Lock()
	if l.state == s {
		l.mu.Unlock()
		return
	}
	l.state = s
	close(l.changed)
	l.changed = make(chan struct{})
	var cut []*linkBody
	if s == LinkDropped {
		for b := range l.bodies {
			cut = append(cut, b)
		}
	}
	l.mu.Unlock()
	for _, b := range cut {
		_ = b.ReadCloser.Close()
	}
}

// wrap returns rt behind the link.
func (l *link) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		for {
			state, changed := l.now()
			switch state {
			case LinkDropped:
				return nil, errLinkDropped
			case LinkStalled:
				select {
				case <-r.Context().Done():
					return nil, r.Context().Err()
				case <-changed:
					continue
				}
			}
			resp, err := rt.RoundTrip(r)
			if err != nil {
				return nil, err
			}
			b := &linkBody{ReadCloser: resp.Body, l: l, ctx: r.Context(), closed: make(chan struct{})}
			l.mu.Lock()
			l.bodies[b] = struct{}{}
			l.mu.Unlock()
			resp.Body = b
			return resp, nil
		}
	})
}

// linkBody is a response read through a link. A read held by a stalled
// link ends when the body is closed or its request's context ends, as a
// read of a stalled connection does: a daemon stopped while cut off is
// not left waiting on it.
type linkBody struct {
	io.ReadCloser
	l      *link
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (b *linkBody) Read(p []byte) (int, error) {
	for {
		state, changed := b.l.now()
		switch state {
		case LinkDropped:
			return 0, errLinkDropped
		case LinkStalled:
			select {
			case <-changed:
				continue
			case <-b.closed:
				return 0, io.ErrClosedPipe
			case <-b.ctx.Done():
				return 0, b.ctx.Err()
			}
		}
		return b.ReadCloser.Read(p)
	}
}

func (b *linkBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	b.l.mu.Lock()
	delete(b.l.bodies, b)
	b.l.mu.Unlock()
	return b.ReadCloser.Close()
}
