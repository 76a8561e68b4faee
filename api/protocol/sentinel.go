package protocol

import (
	"fmt"
	"time"
)

// SentinelState is what the host's reboot sentinel says, as the daemon last
// read it.
type SentinelState string

// The sentinel's states.
const (
	// SentinelUnknown: the daemon has not looked at the sentinel yet in
	// this boot.
	SentinelUnknown SentinelState = "unknown"
	// SentinelClear: the host says it needs no reboot (no sentinel file,
	// or the sentinel command exited 0).
	SentinelClear SentinelState = "clear"
	// SentinelRequested: the host needs a reboot and a sentinel request of
	// this boot stands for it.
	SentinelRequested SentinelState = "requested"
	// SentinelCancelled: root withdrew this boot's sentinel request
	// (kmaint-daemon cancel-reboot); the daemon asks again only when the
	// sentinel changes.
	SentinelCancelled SentinelState = "cancelled"
	// SentinelRebootLoop: the sentinel is unchanged since it asked for the
	// reboot that ended an earlier boot: that reboot did not clear it, so
	// another would not either. The daemon asks again only when it changes.
	SentinelRebootLoop SentinelState = "rebootLoop"
	// SentinelError: the sentinel could not be read (unreadable or
	// malformed file, a command that failed or exited with another code
	// than 0 or 1). Nothing is asked for.
	SentinelError SentinelState = "error"
)

// SentinelStates are every state, for metrics.
func SentinelStates() []SentinelState {
	return []SentinelState{SentinelUnknown, SentinelClear, SentinelRequested, SentinelCancelled, SentinelRebootLoop, SentinelError}
}

// SentinelStatus is the sentinel's part of the daemon's state (DaemonState).
type SentinelStatus struct {
	// State is what the sentinel says.
	State SentinelState `json:"state"`
	// Message says why, for a person.
	Message string `json:"message,omitempty"`
	// Fingerprint identifies what the sentinel says now (a hash of the
	// file and its .pkgs, or of the command's exit code and output), when
	// it asks for a reboot.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Since is when the sentinel entered State.
	Since time.Time `json:"since"`
	// LastRequest is the newest sentinel request the daemon knows of, in
	// this boot or an earlier one. Kept on the Node as well as in the
	// journal, so that a node whose journal does not outlive a reboot
	// (volatile) still knows what its sentinel looked like when it asked
	// for the reboot that ended its last boot.
	LastRequest *SentinelRequest `json:"lastRequest,omitempty"`
}

// SentinelRequest is a sentinel request: its boot, id and the sentinel's
// fingerprint when it asked.
type SentinelRequest struct {
	BootID      string `json:"bootID"`
	ID          string `json:"id"`
	Fingerprint string `json:"fingerprint"`
	// Latest is the sentinel's fingerprint at the daemon's last look while
	// the request stood, when it changed after the request (the package
	// tools add to the .pkgs after writing the file): a sentinel still
	// looking like that after the reboot is a reboot loop too.
	Latest string `json:"latest,omitempty"`
}

// SentinelHeld says, for a person, why the node's reboot sentinel asks for
// nothing although it may want a reboot: a reboot loop held back, or a
// sentinel that cannot be read; empty otherwise, and for a state of
// another boot.
func (s NodeState) SentinelHeld() string {
	if s.Daemon == nil || s.Daemon.Sentinel == nil || s.Daemon.BootID != s.BootID {
		return ""
	}
	switch st := s.Daemon.Sentinel; st.State {
	case SentinelRebootLoop:
		return fmt.Sprintf("reboot loop held: %s", st.Message)
	case SentinelError:
		return fmt.Sprintf("reboot sentinel unreadable: %s", st.Message)
	}
	return ""
}
