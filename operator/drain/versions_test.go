package drain_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/operator/drain"
)

// versionServer answers reads of the pods' version, each with the next
// number, holding each read until the test lets it through.
type versionServer struct {
	reads   atomic.Int64
	release chan struct{}
	fail    atomic.Bool
}

func (s *versionServer) read(ctx context.Context) (string, error) {
	n := s.reads.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if s.fail.Load() {
		return "", errors.New("connection refused")
	}
	return strconv.FormatInt(n, 10), nil
}

// Drains that start together share one read of the pods' version, and a
// read that began before a drain's cordon is never given to it.
func TestVersionsShareOnlyAReadThatBeganLateEnough(t *testing.T) {
	g := NewWithT(t)
	srv := &versionServer{release: make(chan struct{})}
	v := drain.NewVersionsReading(srv.read)
	ctx := context.Background()

	cordoned := v.Now()
	var wg sync.WaitGroup
	got := make([]string, 5)
	for i := range got {
		wg.Go(func() {
			var err error
			got[i], err = v.After(ctx, cordoned)
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
	g.Eventually(srv.reads.Load).Should(BeEquivalentTo(1))
	// A drain cordoned after that read began needs a read of its own.
	later := v.Now()
	var own string
	wg.Go(func() {
		var err error
		own, err = v.After(ctx, later)
		g.Expect(err).NotTo(HaveOccurred())
	})
	g.Eventually(srv.reads.Load).Should(BeEquivalentTo(2))
	close(srv.release)
	wg.Wait()
	// A drain that came after the second read began may share it: it
	// too began after the cordon.
	g.Expect(got).To(HaveEach(BeElementOf("1", "2")))
	g.Expect(srv.reads.Load()).To(BeEquivalentTo(2), "six drains, two reads")
	g.Expect(own).To(Equal("2"))

	// A read that ended serves whoever needs one that began before it.
	again, err := v.After(ctx, cordoned)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal("2"), "the last read, the newest")
	g.Expect(srv.reads.Load()).To(BeEquivalentTo(2))
	// And not one who needs a read begun after it.
	fresh, err := v.After(ctx, v.Now().Add(time.Nanosecond))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fresh).To(Equal("3"))
}

// A read that fails is not shared as a failure: one whose own context
// ended fails that caller only, and the others read again.
func TestVersionsReadAgainAfterAFailedRead(t *testing.T) {
	g := NewWithT(t)
	srv := &versionServer{release: make(chan struct{})}
	v := drain.NewVersionsReading(srv.read)
	t0 := v.Now()

	cancelled, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := v.After(cancelled, t0)
		first <- err
	}()
	g.Eventually(srv.reads.Load).Should(BeEquivalentTo(1))
	second := make(chan string, 1)
	go func() {
		version, err := v.After(context.Background(), t0)
		g.Expect(err).NotTo(HaveOccurred())
		second <- version
	}()
	cancel()
	g.Eventually(first).Should(Receive(MatchError(context.Canceled)))
	g.Eventually(srv.reads.Load).Should(BeEquivalentTo(2), "the waiter reads again")
	close(srv.release)
	g.Eventually(second).Should(Receive(Equal("2")))

	// An API server that refuses: each caller is told, none is given an
	// old version.
	srv.fail.Store(true)
	_, err := v.After(context.Background(), v.Now().Add(time.Nanosecond))
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
}
