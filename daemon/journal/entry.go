package journal

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The MESSAGE_IDs of kmaint's journal entries (128-bit ids, as journald
// catalogs want), so `journalctl MESSAGE_ID=...` finds them.
const (
	// RequestMessageID marks "reboot requested" entries.
	RequestMessageID = "8c4f2a6de1b04f55a0f4c9b1e7d3a215"
	// RebootingMessageID marks "rebooting now" entries, written right before
	// the daemon asks logind to reboot, naming the requests it satisfies.
	RebootingMessageID = "f1e2d3c4b5a697887766554433221100"
)

// The journal fields kmaint writes, besides MESSAGE and MESSAGE_ID.
const (
	fieldRequestID = "KMAINT_REQUEST_ID"
	fieldSource    = "KMAINT_SOURCE"
	fieldReason    = "KMAINT_REASON"
	fieldConfig    = "KMAINT_CONFIG"
	fieldRequests  = "KMAINT_REQUESTS"
	fieldTime      = "KMAINT_TIME"
)

// Kind is what an entry says.
type Kind string

// The kinds of kmaint entries.
const (
	// KindRequest asks for a reboot.
	KindRequest Kind = "request"
	// KindRebooting records that the daemon is rebooting for some requests.
	KindRebooting Kind = "rebooting"
)

// Entry is one kmaint journal entry.
type Entry struct {
	Kind Kind
	// ID identifies a request (KindRequest).
	ID string
	// Source is where the request came from (KindRequest).
	Source v1alpha1.Source
	// Reason is why (KindRequest).
	Reason string
	// Config is the config identity a config request asks for.
	Config string
	// Requests are the ids a reboot satisfies (KindRebooting).
	Requests []string
	// Time is when the entry was written.
	Time time.Time

	// BootID is the boot the entry was written in, in the form of
	// /proc/sys/kernel/random/boot_id. Set by the journal, not the writer.
	BootID string
	// UID is the writer's user id. Set by the journal, not the writer.
	UID int
}

// Journal appends kmaint entries and reads them back.
type Journal interface {
	// Append writes an entry as the calling process.
	Append(e Entry) error
	// Follow calls fn with every kmaint entry written by root, of every boot,
	// oldest first, then caughtUp once, then fn with each new entry as it is
	// written, until ctx is done. Both run on Follow's goroutine.
	Follow(ctx context.Context, fn func(Entry), caughtUp func()) error
}

// fields renders an entry as journal fields.
func (e Entry) fields() (message string, vars map[string]string) {
	vars = map[string]string{fieldTime: strconv.FormatInt(e.Time.UnixMicro(), 10)}
	switch e.Kind {
	case KindRebooting:
		vars["MESSAGE_ID"] = RebootingMessageID
		vars[fieldRequests] = strings.Join(e.Requests, ",")
		message = fmt.Sprintf("kmaint: rebooting for requests %s", vars[fieldRequests])
	default:
		vars["MESSAGE_ID"] = RequestMessageID
		vars[fieldRequestID] = e.ID
		vars[fieldSource] = string(e.Source)
		vars[fieldReason] = e.Reason
		if e.Config != "" {
			vars[fieldConfig] = e.Config
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
	if us, err := strconv.ParseInt(f[fieldTime], 10, 64); err == nil {
		e.Time = time.UnixMicro(us)
	} else if us, err := strconv.ParseInt(f["__REALTIME_TIMESTAMP"], 10, 64); err == nil {
		e.Time = time.UnixMicro(us)
	}
	switch f["MESSAGE_ID"] {
	case RequestMessageID:
		e.Kind, e.ID, e.Reason, e.Config = KindRequest, f[fieldRequestID], f[fieldReason], f[fieldConfig]
		e.Source = v1alpha1.Source(f[fieldSource])
		if e.ID == "" || len(e.ID) > 128 {
			return e, fmt.Errorf("request entry with a missing or oversize %s", fieldRequestID)
		}
		switch e.Source {
		case v1alpha1.SourceAPI, v1alpha1.SourceHost, v1alpha1.SourceConfig, v1alpha1.SourceMetric, v1alpha1.SourceSchedule, v1alpha1.SourceAlert:
		default:
			return e, fmt.Errorf("request %s has an unknown source %q", e.ID, e.Source)
		}
		if e.Reason == "" || len(e.Reason) > v1alpha1.MaxReasonLength {
			return e, fmt.Errorf("request %s has an empty or oversize reason", e.ID)
		}
	case RebootingMessageID:
		e.Kind = KindRebooting
		if r := f[fieldRequests]; r != "" {
			e.Requests = strings.Split(r, ",")
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
