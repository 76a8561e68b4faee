package sentinel

import (
	"fmt"

	"github.com/kmaint/kmaint/api/protocol"
)

// Request is a sentinel request as the journal (or, for an earlier boot of
// a node with a volatile journal, the daemon's state on the Node) knows it.
type Request struct {
	ID     string
	BootID string
	// Fingerprint is what the sentinel looked like when it asked.
	Fingerprint string
	// Latest is what it looked like at the daemon's last look while the
	// request stood, when that differs: package tools write the file, then
	// add to its .pkgs, package by package, so a look in between asks with
	// an early fingerprint. Empty when unknown or the same.
	Latest string
	// Cancelled is true when root withdrew it in its boot.
	Cancelled bool
}

// Input is everything Decide decides from.
type Input struct {
	// BootID is the current boot.
	BootID string
	// Observation is the last look at the sentinel; nil before the first.
	Observation *Observation
	// ThisBoot are the current boot's sentinel requests, oldest first.
	ThisBoot []Request
	// Previous is the newest sentinel request of an earlier boot, if one is
	// known (from the journal, or from the Node when the journal is
	// volatile).
	Previous *Request
}

// Decision is what to do about the sentinel.
type Decision struct {
	// State and Message are what the daemon reports; an empty State means
	// the sentinel has not been looked at yet.
	State   protocol.SentinelState
	Message string
	// Request is true when a new sentinel request is to be journaled, with
	// the observation's fingerprint and reason.
	Request bool
}

// Decide says what the sentinel's observation means, in this order:
//   - a sentinel that cannot be read asks for nothing (error);
//   - a clear sentinel asks for nothing (clear);
//   - a request of this boot that stands already asks for the reboot: one
//     per boot, however often the sentinel is looked at (requested);
//   - a request of this boot that root withdrew for this same sentinel is
//     not made again (cancelled);
//   - a sentinel unchanged since the request of an earlier boot survived
//     the reboot that request asked for: another reboot would not clear it
//     either, so it is held until it changes (rebootLoop);
//   - anything else is a new sentinel, and is asked for (requested).
func Decide(in Input) Decision {
	o := in.Observation
	switch {
	case o == nil:
		return Decision{}
	case o.Problem != "":
		return Decision{State: protocol.SentinelError, Message: o.Problem}
	case !o.Needed:
		return Decision{State: protocol.SentinelClear, Message: "the host says it needs no reboot"}
	}
	for _, r := range in.ThisBoot {
		if !r.Cancelled {
			return Decision{State: protocol.SentinelRequested, Message: fmt.Sprintf("the host needs a reboot; request %s of this boot asks for it", r.ID)}
		}
	}
	for _, r := range in.ThisBoot {
		if r.Fingerprint == o.Fingerprint {
			return Decision{State: protocol.SentinelCancelled, Message: fmt.Sprintf(
				"the host needs a reboot, and its request %s was cancelled in this boot; not asking again until the sentinel changes", r.ID)}
		}
	}
	if p := in.Previous; p != nil && p.BootID != in.BootID && (p.Fingerprint == o.Fingerprint || p.Latest != "" && p.Latest == o.Fingerprint) {
		return Decision{State: protocol.SentinelRebootLoop, Message: fmt.Sprintf(
			"the reboot sentinel is unchanged since it asked for a reboot in boot %s (request %s), and that boot has ended: the reboot did not clear it, "+
				"so another would not either. Not asking again until the sentinel changes (new packages); look at what recreates it at boot",
			p.BootID, p.ID)}
	}
	return Decision{State: protocol.SentinelRequested, Message: "the host needs a reboot; asking for it", Request: true}
}
