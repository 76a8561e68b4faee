package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// ErrNotRoot is returned to a request-reboot run by a user other than root:
// the daemon would ignore the entry, so it is not written.
var ErrNotRoot = errors.New("request-reboot must run as root: the daemon ignores requests journaled by other users")

// RequestReboot journals a host request, the whole of the host-side API: it
// never talks to the API server. uid is the caller's effective user id.
func RequestReboot(j journal.Journal, reason string, uid int, now time.Time) (string, error) {
	if uid != 0 {
		return "", ErrNotRoot
	}
	reason, err := trimReason(reason)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	if err := j.Append(journal.Entry{Kind: journal.KindRequest, ID: id, Source: v1alpha1.SourceHost, Reason: reason, Time: now}); err != nil {
		return "", err
	}
	return id, nil
}

// trimReason validates a request's reason as request-reboot and the API do.
func trimReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", errors.New("the reason is empty: say why the node should reboot")
	case len(reason) > v1alpha1.MaxReasonLength:
		return "", fmt.Errorf("the reason is %d bytes long; at most %d are allowed", len(reason), v1alpha1.MaxReasonLength)
	}
	return reason, nil
}
