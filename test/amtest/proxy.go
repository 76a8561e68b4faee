package amtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Fault is what the proxy does to a request instead of passing it on.
type Fault int

const (
	// Pass passes every request on.
	Pass Fault = iota
	// Down closes each connection without an answer, as an Alertmanager
	// that is not there (a refused connection reads the same to kmaint).
	Down
	// Slow answers after the proxy's Delay, past a client's timeout.
	Slow
	// Error answers 500.
	Error
)

// Proxy stands in front of a Server: it checks a bearer token when one is
// set, injects a fault, and can hold one request at the moment the test
// wants to kill its caller (Hold).
type Proxy struct {
	server *Server
	srv    *httptest.Server

	mu    sync.Mutex
	fault Fault
	delay time.Duration
	token string
	hold  *held
	calls map[string]int
}

type held struct {
	method  string
	forward bool
	reached chan struct{}
	release chan struct{}
}

// NewProxy starts a proxy of s for the test.
func NewProxy(t testing.TB, s *Server) *Proxy {
	p := &Proxy{server: s, delay: time.Minute, calls: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.mu.Lock()
		if h := p.hold; h != nil {
			close(h.release)
			p.hold = nil
		}
		p.mu.Unlock()
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return p.srv.URL }

// SetFault sets what the proxy does to the requests to come.
func (p *Proxy) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// SetDelay sets how long Slow waits.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// RequireToken answers 401 to requests without this bearer token; ""
// requires none.
func (p *Proxy) RequireToken(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token = token
}

// Calls counts the requests that reached the proxy, by method.
func (p *Proxy) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// Hold holds the next request of method: after passing it on to
// Alertmanager (forward) or before. reached is closed once it is held; the
// request goes on (answered, or passed on and answered) when release is
// closed or the test ends.
func (p *Proxy) Hold(method string, forward bool) (reached <-chan struct{}, release chan<- struct{}) {
	h := &held{method: method, forward: forward, reached: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = h
	return h.reached, h.release
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault, delay, token := p.fault, p.delay, p.token
	p.calls[r.Method]++
	var h *held
	if p.hold != nil && p.hold.method == r.Method {
		h, p.hold = p.hold, nil
	}
	p.mu.Unlock()
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	switch fault {
	case Down:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return
	case Slow:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	case Error:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if h != nil && !h.forward {
		// Never passed on: its caller dies before Alertmanager hears it.
		close(h.reached)
		<-h.release
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	}
	target, err := url.Parse(p.server.URL())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if h == nil {
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
		return
	}
	// Passed on, its answer held: Alertmanager did it, its caller never
	// hears so.
	rec := httptest.NewRecorder()
	httputil.NewSingleHostReverseProxy(target).ServeHTTP(rec, r)
	close(h.reached)
	<-h.release
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, rec.Body)
}
