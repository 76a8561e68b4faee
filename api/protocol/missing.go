package protocol

import (
	"fmt"
	"time"
)

// RebootUnconfirmed (operator): the node came back from its approved
// reboot, Ready with a new boot ID, and its daemon has not confirmed it:
// reboot-requested still names the approved boot, which only a daemon
// running in the new boot clears. An UnconfirmedReboot. Aftercare writes it
// when the node has been so for a minute (the daemon's usual start comes
// well within it), naming when the operator first saw it so, so that its wait
// for the daemon is bounded whatever restarts in between; an operator that finds
// the node so when it starts writes it at once. Past the bound it completes
// the reboot without the daemon and keeps the annotation, so that the node,
// its pool and its NodeMaintenance say the daemon is missing, until the
// daemon comes back.
const RebootUnconfirmed = Prefix + "reboot-unconfirmed"

// UnconfirmedReboot is the value of RebootUnconfirmed.
type UnconfirmedReboot struct {
	// ApprovedBoot is the boot whose reboot was approved.
	ApprovedBoot string `json:"approvedBoot"`
	// BootID is the boot the node came back with.
	BootID string `json:"bootID"`
	// Since is when the operator first saw the node back without its daemon's
	// confirmation.
	Since time.Time `json:"since"`
}

// Message says, for a person, what a missing daemon means.
func (u UnconfirmedReboot) Message() string {
	return fmt.Sprintf("daemon missing: the node came back from the reboot of boot %s with boot %s (seen %s) and its daemon never confirmed it; "+
		"kmaint completed the reboot without it, and nothing is journaled or rebooted on the node until kmaint-daemon runs there again",
		u.ApprovedBoot, u.BootID, u.Since.UTC().Format(time.RFC3339))
}

// AwaitingDaemon reports whether the approved reboot happened as far as
// the kubelet can tell (Ready, with a boot ID other than the approved one)
// and only the daemon's confirmation is missing: reboot-requested still
// names the approved boot.
func (s NodeState) AwaitingDaemon() bool {
	if s.Approved == "" || !s.Ready || s.BootID == "" || s.BootID == s.Approved || s.Unreadable != nil {
		return false
	}
	return s.Requested != nil && s.Requested.BootID == s.Approved
}

// UnconfirmedFor returns the UnconfirmedReboot that times the wait for the
// daemon after the approved reboot; nil when none was written for it yet.
func (s NodeState) UnconfirmedFor() *UnconfirmedReboot {
	if s.Unconfirmed == nil || s.Unconfirmed.ApprovedBoot != s.Approved {
		return nil
	}
	return s.Unconfirmed
}

// DaemonMissing reports whether aftercare completed a reboot without the
// daemon's confirmation and the daemon has still not come back: its
// reboot-requested still names the boot the reboot was approved for. Such a
// node is degraded: without its daemon nothing is journaled or rebooted.
func (s NodeState) DaemonMissing() bool {
	u := s.Unconfirmed
	return u != nil && s.Approved != u.ApprovedBoot && s.BootID != u.ApprovedBoot &&
		s.Requested != nil && s.Requested.BootID == u.ApprovedBoot
}

// UnconfirmedStale reports whether RebootUnconfirmed is on the node and no
// longer stands for anything: the daemon came back and rewrote or cleared
// reboot-requested, so it names the approved boot no more.
func (s NodeState) UnconfirmedStale() bool {
	u := s.Unconfirmed
	return u != nil && s.Unreadable == nil && (s.Requested == nil || s.Requested.BootID != u.ApprovedBoot)
}
