package realcluster

import "sync"

// BootHold keeps a node down after its next reboot, as a machine that does
// not come back from a reboot (a hung firmware, a kernel that does not
// boot): its nspawn exits for the reboot and is not started again until
// Release. Meanwhile the node runs nothing, its kubelet is gone, and the
// API server goes on showing the Node as its kubelet last reported it until
// the controller-manager marks it NotReady. Stop cleans up a held node like
// any other.
type BootHold struct {
	down    chan struct{}
	release chan struct{}
	once    sync.Once
}

// HoldNextBoot holds the node down after its next reboot, whoever asks for
// it, until the returned hold is released. A hold replaces an earlier one
// that has not taken effect yet, which then never does.
func (n *Node) HoldNextBoot() *BootHold {
	h := &BootHold{down: make(chan struct{}), release: make(chan struct{})}
	n.mu.Lock()
	n.hold = h
	n.mu.Unlock()
	return h
}

// Down is closed once the node has rebooted and is held down.
func (h *BootHold) Down() <-chan struct{} { return h.down }

// Release boots a held node again; a hold that has not taken effect is
// cancelled, so the next reboot is an ordinary one. Releasing twice does
// nothing more.
func (h *BootHold) Release() { h.once.Do(func() { close(h.release) }) }

// waitIfHeld is the supervisor's pause between two boots: when a hold is
// pending it takes it, reports the node down and waits for its release. It
// returns false when the node is stopping instead.
func (n *Node) waitIfHeld() bool {
	n.mu.Lock()
	h := n.hold
	n.hold = nil
	n.mu.Unlock()
	if h == nil {
		return true
	}
	select {
	case <-h.release:
		return true // released before the reboot: boot as usual
	default:
	}
	n.c.cfg.Log.Info("Node held down after its reboot", "node", n.name)
	close(h.down)
	select {
	case <-h.release:
		n.c.cfg.Log.Info("Node released", "node", n.name)
		return true
	case <-n.stopping:
		return false
	}
}
