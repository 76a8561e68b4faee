package journal

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The MESSAGE_IDs of kmaint's journal entries (128-bit ids, as journald
// catalogs want), so `journalctl MESSAGE_ID=...` finds them.
const (
	// RequestMessageID marks "reboot requested" entries.
	RequestMessageID = "8c4f2a6de1b04f55a0f4c9b1e7d3a215"
	// RebootingMessageID marks "rebooting now" entries, written right before
	// the daemon asks logind to reboot, naming the requests it satisfies.
	RebootingMessageID = "f1e2d3c4b5a697887766554433221100"
	// CancelMessageID marks "request cancelled" entries: root on the host
	// (kmaint-daemon cancel-reboot), or the daemon for a NodeMaintenance
	// deleted before its reboot was approved.
	CancelMessageID = "5d0c7e3a9b2f4e61a8c4d2b7f0e9a613"
)

// MessageIDs are the MESSAGE_IDs of every kind of kmaint entry.
func MessageIDs() []string { return []string{RequestMessageID, RebootingMessageID, CancelMessageID} }

// The journal fields kmaint writes, besides MESSAGE and MESSAGE_ID.
const (
	fieldRequestID = "KMAINT_REQUEST_ID"
	fieldSource    = "KMAINT_SOURCE"
	fieldReason    = "KMAINT_REASON"
	fieldConfig    = "KMAINT_CONFIG"
	fieldRequests  = "KMAINT_REQUESTS"
	fieldTime      = "KMAINT_TIME"
	fieldSentinel  = "KMAINT_SENTINEL"
)

// Kind is what an entry says.
type Kind string

// The kinds of kmaint entries.
const (
	// KindRequest asks for a reboot.
	KindRequest Kind = "request"
	// KindRebooting records that the daemon is rebooting for some requests.
	KindRebooting Kind = "rebooting"
	// KindCancel withdraws a request of the same boot, unless its reboot
	// was already approved.
	KindCancel Kind = "cancel"
)

// MaxWriterLag is how far before the journal received an entry its writer
// may date it (KMAINT_TIME). Writers stamp an entry just before sending it;
// a time later than its receipt, or older than this, is not the writer's
// clock but a forgery or a mistake (KMAINT_TIME=0 would sort first in the
// pool's queue), and the receive time is used instead.
const MaxWriterLag = time.Minute

// MaxIDLength is the longest request id an entry may carry, in bytes.
const MaxIDLength = 128

// MaxSentinelLength is the longest sentinel fingerprint an entry may carry,
// in bytes; kmaint writes 64 hex digits.
const MaxSentinelLength = 128

// Entry is one kmaint journal entry.
type Entry struct {
	Kind Kind
	// ID identifies a request (KindRequest), or the request withdrawn
	// (KindCancel).
	ID string
	// Source is where the request came from (KindRequest).
	Source v1alpha1.Source
	// Reason is why (KindRequest, KindCancel).
	Reason string
	// Config is the config identity a config request asks for.
	Config string
	// Sentinel is the fingerprint of what the host's reboot sentinel looked
	// like when it asked for this reboot (a sentinel request). Journaled
	// with the request, it outlives the reboot in a persistent journal, so
	// the next boot's daemon can tell a sentinel that the reboot did not
	// clear (a reboot loop) from a new one.
	Sentinel string
	// Requests are the ids a reboot satisfies (KindRebooting).
	Requests []string
	// Time is when the entry was written: the writer's KMAINT_TIME, bounded
	// by Received (see MaxWriterLag).
	Time time.Time

	// BootID is the boot the entry was written in, in the form of
	// /proc/sys/kernel/random/boot_id. Set by the journal, not the writer.
	BootID string
	// UID is the writer's user id. Set by the journal, not the writer.
	UID int
	// Received is when the journal received the entry
	// (__REALTIME_TIMESTAMP). Set by the journal, not the writer.
	Received time.Time
}

// boundTime is the time an entry is taken to be written at: the writer's,
// unless it is missing, later than the journal's receipt, or more than
// MaxWriterLag before it; then the receipt's.
func boundTime(written, received time.Time) time.Time {
	switch {
	case received.IsZero():
		return written
	case written.IsZero(), written.After(received), received.Sub(written) > MaxWriterLag:
		return received
	}
	return written
}

// Journal appends kmaint entries and reads them back.
type Journal interface {
	// Append writes an entry as the calling process.
	Append(e Entry) error
	// Follow calls fn with every kmaint entry written by root, of every boot,
	// oldest first, then caughtUp once, then fn with each new entry as it is
	// written, until ctx is done. Both run on Follow's goroutine.
	Follow(ctx context.Context, fn func(Entry), caughtUp func()) error
	// Boots returns the boot IDs the journal holds entries of, kmaint's or
	// not: one that holds only the current boot has lost the node's earlier
	// boots (volatile storage, or vacuumed).
	Boots() ([]string, error)
}

// fields renders an entry as journal fields.
func (e Entry) fields() (message string, vars map[string]string) {
	vars = map[string]string{fieldTime: strconv.FormatInt(e.Time.UnixMicro(), 10)}
	switch e.Kind {
	case KindRebooting:
		vars["MESSAGE_ID"] = RebootingMessageID
		vars[fieldRequests] = strings.Join(e.Requests, ",")
		message = fmt.Sprintf("kmaint: rebooting for requests %s", vars[fieldRequests])
	case KindCancel:
		vars["MESSAGE_ID"] = CancelMessageID
		vars[fieldRequestID] = e.ID
		vars[fieldReason] = e.Reason
		message = fmt.Sprintf("kmaint: reboot request %s cancelled: %s", e.ID, e.Reason)
	default:
		vars["MESSAGE_ID"] = RequestMessageID
		vars[fieldRequestID] = e.ID
		vars[fieldSource] = string(e.Source)
		vars[fieldReason] = e.Reason
		if e.Config != "" {
			vars[fieldConfig] = e.Config
		}
		if e.Sentinel != "" {
			vars[fieldSentinel] = e.Sentinel
		}
		message = fmt.Sprintf("kmaint: reboot requested (%s): %s", e.Source, e.Reason)
	}
	return message, vars
}

// parse reads an entry back from journal fields. It rejects entries whose
// fields are missing or malformed, whoever wrote them.
func parse(f map[string]string) (Entry, error) {
	e := Entry{BootID: FormatBootID(f["_BOOT_ID"])}
	uid, err := strconv.Atoi(f["_UID"])
	if err != nil {
		return e, fmt.Errorf("entry without a valid _UID %q", f["_UID"])
	}
	e.UID = uid
	if us, err := strconv.ParseInt(f["__REALTIME_TIMESTAMP"], 10, 64); err == nil {
		e.Received = time.UnixMicro(us)
	}
	var written time.Time
	if us, err := strconv.ParseInt(f[fieldTime], 10, 64); err == nil {
		written = time.UnixMicro(us)
	}
	e.Time = boundTime(written, e.Received)
	switch f["MESSAGE_ID"] {
	case RequestMessageID:
		e.Kind, e.ID, e.Reason, e.Config, e.Sentinel = KindRequest, f[fieldRequestID], f[fieldReason], f[fieldConfig], f[fieldSentinel]
		e.Source = v1alpha1.Source(f[fieldSource])
		if e.ID == "" || len(e.ID) > MaxIDLength {
			return e, fmt.Errorf("request entry with a missing or oversize %s", fieldRequestID)
		}
		if !slices.Contains(v1alpha1.Sources(), e.Source) {
			return e, fmt.Errorf("request %s has an unknown source %q", e.ID, e.Source)
		}
		if e.Reason == "" || len(e.Reason) > v1alpha1.MaxReasonLength {
			return e, fmt.Errorf("request %s has an empty or oversize reason", e.ID)
		}
		if len(e.Sentinel) > MaxSentinelLength || (e.Sentinel != "") != (e.Source == v1alpha1.SourceSentinel) {
			return e, fmt.Errorf("request %s of source %s has a missing, oversize or misplaced %s", e.ID, e.Source, fieldSentinel)
		}
	case RebootingMessageID:
		e.Kind = KindRebooting
		if r := f[fieldRequests]; r != "" {
			e.Requests = strings.Split(r, ",")
		}
	case CancelMessageID:
		e.Kind, e.ID, e.Reason = KindCancel, f[fieldRequestID], f[fieldReason]
		if e.ID == "" || len(e.ID) > MaxIDLength {
			return e, fmt.Errorf("cancel entry with a missing or oversize %s", fieldRequestID)
		}
		if e.Reason == "" || len(e.Reason) > v1alpha1.MaxReasonLength {
			return e, fmt.Errorf("cancel of %s has an empty or oversize reason", e.ID)
		}
	default:
		return e, fmt.Errorf("not a kmaint entry: MESSAGE_ID %q", f["MESSAGE_ID"])
	}
	if e.BootID == "" {
		return e, fmt.Errorf("entry without _BOOT_ID")
	}
	return e, nil
}

// FormatBootID writes a boot ID the way the kernel and the kubelet do
// (8-4-4-4-12 hex digits); the journal stores it without dashes.
func FormatBootID(id string) string {
	id = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(id), "-", ""))
	if len(id) != 32 {
		return id
	}
	return id[0:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]
}
