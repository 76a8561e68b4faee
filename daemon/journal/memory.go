package journal

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Memory is an in-memory journal with the systemd journal's rules: entries
// are stamped with the boot they are written in and with their writer, and
// only root's are read back. The simulated cluster uses it to run thousands
// of nodes in one process; one Memory is one node's journal disk, kept
// across the node's simulated reboots: a persistent journal.
type Memory struct {
	// BootID returns the node's current boot ID, as journald stamps it.
	BootID func() string

	mu      sync.Mutex
	entries []Entry
	// boots are the boots the journal has seen, oldest first: the one it
	// was created in, and each one an entry was appended in.
	boots []string
	// changed is closed and replaced on every append, waking followers.
	changed chan struct{}
}

var _ Journal = (*Memory)(nil)

// NewMemory returns an empty journal for a node whose boot ID bootID reports.
func NewMemory(bootID func() string) *Memory {
	return &Memory{BootID: bootID, changed: make(chan struct{}), boots: []string{bootID()}}
}

// Append writes the entry as root.
func (m *Memory) Append(e Entry) error { return m.AppendAs(0, e) }

// AppendAs writes the entry as the user uid, received now.
func (m *Memory) AppendAs(uid int, e Entry) error {
	e.BootID, e.UID, e.Received = m.BootID(), uid, time.Now()
	e.Time = boundTime(e.Time, e.Received)
	m.mu.Lock()
	m.entries = append(m.entries, e)
	if !slices.Contains(m.boots, e.BootID) {
		m.boots = append(m.boots, e.BootID)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	return nil
}

// Boot records that the node booted: journald writes its own start
// messages first in every boot, so a journal has seen a boot before any
// daemon of that boot reads it. None of them is a kmaint entry.
func (m *Memory) Boot() {
	boot := m.BootID()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.boots, boot) {
		m.boots = append(m.boots, boot)
	}
}

// Boots lists the boots the journal has seen.
func (m *Memory) Boots() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.boots), nil
}

// Follow replays root's entries, reports caughtUp, then waits for more.
func (m *Memory) Follow(ctx context.Context, fn func(Entry), caughtUp func()) error {
	next := 0
	replayed := false
	for {
		m.mu.Lock()
		batch := m.entries[next:]
		next = len(m.entries)
		changed := m.changed
		m.mu.Unlock()
		for _, e := range batch {
			if e.UID == 0 {
				fn(e)
			}
		}
		if !replayed {
			replayed = true
			caughtUp()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
