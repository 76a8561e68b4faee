// Package proclog keeps what a program a test runs (Prometheus,
// Alertmanager) writes, for the test to read while the program runs.
package proclog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a program's output and the test can use at
// once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
