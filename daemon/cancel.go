package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
)

// ErrCancelNotRoot is returned to a cancel-reboot run by a user other than
// root: the daemon would ignore the entry, so it is not written.
var ErrCancelNotRoot = errors.New("cancel-reboot must run as root: the daemon ignores cancellations journaled by other users")

// HostCancelReason is the reason journaled with a cancellation made on the
// host.
const HostCancelReason = "cancelled on the node by root (kmaint-daemon cancel-reboot)"

// CancelOutcome is what CancelReboot did.
type CancelOutcome struct {
	// Request is the request cancelled, as journaled.
	Request journal.Entry
	// Already is true when a cancellation was journaled before: nothing was
	// written.
	Already bool
}

// CancelReboot journals the cancellation of one of this boot's requests,
// the host side of cancelling: like request-reboot it needs root and the
// journal, not the API server. It reads the boot's entries first, so that a
// request that does not exist, belongs to an earlier boot or is being
// rebooted for is refused with a message rather than journaled to no
// effect. Whether the reboot was already approved only the daemon can tell
// (the approval is on the Node): it refuses the cancellation then, with an
// event on the Node.
func CancelReboot(ctx context.Context, j journal.Journal, id, bootID string, uid int, now time.Time) (CancelOutcome, error) {
	if uid != 0 {
		return CancelOutcome{}, ErrCancelNotRoot
	}
	entries, err := readAll(ctx, j)
	if err != nil {
		return CancelOutcome{}, err
	}
	idx := indexJournal(entries, bootID)
	id = strings.TrimSpace(id)
	switch {
	case id == "":
		return CancelOutcome{}, fmt.Errorf("no request id given; %s", listOutstanding(idx))
	case len(id) > journal.MaxIDLength:
		return CancelOutcome{}, fmt.Errorf("the request id is %d bytes long; ids are at most %d", len(id), journal.MaxIDLength)
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return CancelOutcome{}, fmt.Errorf("the request id %q holds a space or control character; no request id does", id)
	}
	req, ok := idx.first[id]
	switch {
	case !ok:
		return CancelOutcome{}, fmt.Errorf("no request %s in this node's journal; %s", id, listOutstanding(idx))
	case req.BootID != bootID:
		return CancelOutcome{}, fmt.Errorf("request %s was made in boot %s, and the reboot that ended that boot satisfied it: nothing to cancel", id, req.BootID)
	case idx.rebootingFor(id):
		return CancelOutcome{}, fmt.Errorf("refused: the daemon is already rebooting this node for request %s (since %s)", id, idx.rebooting.Time.UTC().Format(time.RFC3339))
	}
	if _, done := idx.cancels[id]; done {
		return CancelOutcome{Request: req, Already: true}, nil
	}
	if err := j.Append(journal.Entry{Kind: journal.KindCancel, ID: id, Reason: HostCancelReason, Time: now}); err != nil {
		return CancelOutcome{}, err
	}
	return CancelOutcome{Request: req}, nil
}

// readAll reads every kmaint entry the journal holds, up to now.
func readAll(ctx context.Context, j journal.Journal) ([]journal.Entry, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var entries []journal.Entry
	if err := j.Follow(ctx, func(e journal.Entry) { entries = append(entries, e) }, stop); err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	return entries, nil
}

// listOutstanding says which requests of this boot can be cancelled.
func listOutstanding(idx journalIndex) string {
	var lines []string
	for _, e := range idx.thisBoot {
		if _, done := idx.cancels[e.ID]; done || idx.rebootingFor(e.ID) {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s  %s  %s", e.ID, e.Source, v1alpha1.FitReason(e.Reason)))
	}
	if len(lines) == 0 {
		return "this boot has no request that can be cancelled"
	}
	return "this boot's requests that can be cancelled:\n" + strings.Join(lines, "\n")
}
