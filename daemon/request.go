package daemon

import (
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
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
	if err := v1alpha1.CheckReason(reason); err != nil {
		return "", err
	}
	return strings.TrimSpace(reason), nil
}
