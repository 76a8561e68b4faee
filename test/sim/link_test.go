package sim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestALinkDropsStallsAndRestoresADaemonsRequests: a dropped link refuses
// requests and ends a watch under way; a stalled one holds requests until
// it is up again.
func TestALinkDropsStallsAndRestoresADaemonsRequests(t *testing.T) {
	g := NewWithT(t)
	stream := make(chan string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/watch" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case s := <-stream:
					_, _ = io.WriteString(w, s)
					w.(http.Flusher).Flush()
				}
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	l := newLink()
	c := &http.Client{Transport: l.wrap(http.DefaultTransport)}
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		return c.Do(req)
	}

	// Up: a watch streams.
	watch, err := get(t.Context(), "/watch")
	g.Expect(err).NotTo(HaveOccurred())
	stream <- "event"
	buf := make([]byte, 5)
	_, err = io.ReadFull(watch.Body, buf)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(buf)).To(Equal("event"))

	// Dropped: the watch ends, new requests are refused.
	read := make(chan error, 1)
	go func() {
		_, err := watch.Body.Read(buf)
		read <- err
	}()
	l.set(LinkDropped)
	g.Eventually(read, 10*time.Second).Should(Receive(HaveOccurred()))
	_, err = get(t.Context(), "/")
	g.Expect(errors.Is(err, errLinkDropped)).To(BeTrue(), "%v", err)

	// Stalled: a watch's read waits, and ends when the watch is closed
	// (its daemon stopped while cut off).
	l.set(LinkUp)
	watch, err = get(t.Context(), "/watch")
	g.Expect(err).NotTo(HaveOccurred())
	l.set(LinkStalled)
	go func() {
		_, err := watch.Body.Read(buf)
		read <- err
	}()
	g.Consistently(read, 300*time.Millisecond).ShouldNot(Receive())
	watch.Body.Close()
	g.Eventually(read, 10*time.Second).Should(Receive(HaveOccurred()))

	// Stalled: a request waits, and goes through once the link is up.
	l.set(LinkStalled)
	done := make(chan error, 1)
	go func() {
		resp, err := get(t.Context(), "/")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	g.Consistently(done, 300*time.Millisecond).ShouldNot(Receive())
	l.set(LinkUp)
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
}
