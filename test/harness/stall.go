package harness

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// StalledWatches holds back what a client's watches of one resource deliver
// while stalled: their events wait in the connection until Release, as they
// wait for an informer's watch that is not there yet (after the API server
// was away, client-go's reflector comes back on a backoff of up to 30s).
// Lists and reads pass. Wrap goes into a rest.Config (Config.Wrap).
type StalledWatches struct {
	// Resource is the end of the watched path, e.g. "/nodes".
	Resource string

	mu      sync.Mutex
	stalled chan struct{} // closed by Release; nil while not stalled
}

// Stall holds the watches' events from now on.
func (s *StalledWatches) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled == nil {
		s.stalled = make(chan struct{})
	}
}

// Release delivers what was held, and what comes after.
func (s *StalledWatches) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
}

func (s *StalledWatches) wait() {
	s.mu.Lock()
	ch := s.stalled
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Wrap is a rest.Config's transport wrapper.
func (s *StalledWatches) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !strings.HasSuffix(req.URL.Path, s.Resource) || req.URL.Query().Get("watch") != "true" {
			return resp, err
		}
		resp.Body = stallingBody{ReadCloser: resp.Body, watches: s}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// stallingBody hands over what it read only when its watches are not
// stalled: a read under way when the stall begins holds its event too.
type stallingBody struct {
	io.ReadCloser
	watches *StalledWatches
}

func (b stallingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.watches.wait()
	return n, err
}
