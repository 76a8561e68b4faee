package drain

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Versions shares reads of the pods' resource version (PodsVersion) among
// those who may use the same one: the drains, each of which needs a read
// that began after its node's cordon, and the gate's pod checks. Each read
// is a consistent List, which a loaded API server serves only once its
// watch cache caught up; at 500 nodes the gate and the drains made two of
// them per reboot.
//
// A read that began at or after a time t returns a version that holds
// every write made before t: whoever needs that is given the last read
// that began late enough, or waits for one under way, before reading
// anew.
type Versions struct {
	read func(context.Context) (string, error)
	// now is real time: a read is compared with when its users began to
	// need it, within this process.
	now func() time.Time

	mu sync.Mutex
	// last is the read that began last of those that succeeded.
	last *versionRead
	// reading is the read under way that began last, nil if none.
	reading *versionRead
}

// versionRead is one read of the pods' resource version.
type versionRead struct {
	began   time.Time
	done    chan struct{}
	version string
	err     error
}

// NewVersions returns Versions that read the pods' resource version
// through c.
func NewVersions(c kubernetes.Interface) *Versions {
	return NewVersionsReading(func(ctx context.Context) (string, error) { return PodsVersion(ctx, c) })
}

// NewVersionsReading returns Versions that read the pods' resource
// version with read.
func NewVersionsReading(read func(context.Context) (string, error)) *Versions {
	return &Versions{read: read, now: time.Now}
}

// Now is the time by Versions' clock, the one After's t is compared on.
func (v *Versions) Now() time.Time { return v.now() }

// After returns the pods' resource version as read by a List that began at
// or after t. A read that fails is not shared: each of those waiting on it
// reads again.
func (v *Versions) After(ctx context.Context, t time.Time) (string, error) {
	for {
		v.mu.Lock()
		if r := v.last; r != nil && !r.began.Before(t) {
			v.mu.Unlock()
			return r.version, nil
		}
		if r := v.reading; r != nil && !r.began.Before(t) {
			v.mu.Unlock()
			select {
			case <-r.done:
				if r.err == nil {
					return r.version, nil
				}
				continue // its reader's failure, perhaps its own context's
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		r := &versionRead{began: v.now(), done: make(chan struct{})}
		v.reading = r
		v.mu.Unlock()

		r.version, r.err = v.read(ctx)
		v.mu.Lock()
		if v.reading == r {
			v.reading = nil
		}
		if r.err == nil && (v.last == nil || r.began.After(v.last.began)) {
			v.last = r
		}
		v.mu.Unlock()
		close(r.done)
		return r.version, r.err
	}
}
