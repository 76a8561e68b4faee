package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The request model: what every reboot request carries, whichever side
// writes it (the daemon's journal entry and annotation, the operator's
// NodeMaintenances, the plugin's requests), defined once.

// MaxReasonLength is the longest reason a request carries, in bytes: in a
// NodeMaintenance's spec.reason, in the node's journal and in its
// reboot-requested annotation.
const MaxReasonLength = 512

// MaxRequestIDLength is the longest request id kmaint records (status.
// requestID). kmaint's own ids are UUIDs and config-<16 hex digits>.
const MaxRequestIDLength = 128

// MaxRecordedPerBoot is the most requests raised on one node (host and
// config requests) that the operator records as NodeMaintenances in one
// boot. A person runs request-reboot a few times at most; a daemon's
// stolen token could otherwise make the operator create an object per id
// it invents. One reboot satisfies every request of a boot, so the ones
// not recorded ask for nothing more.
const MaxRecordedPerBoot = 16

// MaxClockSkew is how far in the future, by the operator's clock, a time
// written by another party (a node's daemon, a person) may lie and still be
// believed; a later one is not used.
const MaxClockSkew = 5 * time.Minute

// MaxRequestLead is how long before kmaint recorded a request started on
// the node (host, config, sentinel) the request may say it was made, for
// its place in its pool's queue. A daemon cut off from the API server
// raises its requests late, with the times they were journaled; a daemon
// whose token was stolen could date its request 1970 and go first at every
// turn. Believed up to this lead, an honest late request keeps most of its
// place and a forged one gains at most the lead.
const MaxRequestLead = 10 * time.Minute

// CheckRequestID says what is wrong with a request id read off a node: empty,
// too long, or holding control characters or spaces. nil when kmaint can
// record it.
func CheckRequestID(id string) error {
	switch {
	case id == "":
		return errors.New("the request id is empty")
	case len(id) > MaxRequestIDLength:
		return fmt.Errorf("the request id is %d bytes long; at most %d are allowed", len(id), MaxRequestIDLength)
	case !utf8.ValidString(id):
		return errors.New("the request id is not valid UTF-8")
	case strings.IndexFunc(id, func(r rune) bool { return isControl(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("the request id %q holds a space or a control character", id)
	}
	return nil
}

// Labels kmaint puts on NodeMaintenances.
const (
	// RequestIDLabel carries the request id on NodeMaintenances that record
	// requests raised on the node (status.requestID carries every id; the
	// label only those that are valid label values).
	RequestIDLabel = "kmaint.io/request-id"
	// PolicyLabel names the RebootPolicy that raised a NodeMaintenance.
	PolicyLabel = "kmaint.io/policy"
	// BootIDLabel carries, on NodeMaintenances that record requests raised
	// on the node, the boot they were raised in (as LabelValue), so that
	// the records of a node's boot can be counted (MaxRecordedPerBoot).
	BootIDLabel = "kmaint.io/boot-id"
)

// CheckReason says what is wrong with a reason a person gives: empty, too
// long, or holding control characters (a newline or a terminal escape would
// forge lines in the journal, the plugin's tables and the events). nil when
// it is fine. The API's schema refuses the same.
func CheckReason(s string) error {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return errors.New("the reason is empty: say why the node should reboot")
	case len(s) > MaxReasonLength:
		return fmt.Errorf("the reason is %d bytes long; at most %d are allowed", len(s), MaxReasonLength)
	case !utf8.ValidString(s):
		return errors.New("the reason is not valid UTF-8")
	case strings.IndexFunc(s, isControl) >= 0:
		return fmt.Errorf("the reason holds a control character (%q); say it in plain text", string(s[strings.IndexFunc(s, isControl)]))
	}
	return nil
}

// isControl is true for the characters CheckReason refuses: every C0
// control but tab, and DEL.
func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// FitReason makes s a request's reason whatever its source: trimmed, never
// empty, valid UTF-8, control characters shown escaped, and at most
// MaxReasonLength bytes, with "…" marking a cut.
func FitReason(s string) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	if strings.IndexFunc(s, isControl) >= 0 {
		var b strings.Builder
		for _, r := range s {
			if isControl(r) {
				fmt.Fprintf(&b, "\\x%02x", r)
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	if s == "" {
		return "no reason given"
	}
	if len(s) <= MaxReasonLength {
		return s
	}
	const ellipsis = "…"
	return CutAt(s, MaxReasonLength-len(ellipsis)) + ellipsis
}

// ObjectName joins parts with "-" into a name for a kmaint object, the same
// for the same parts, so that a restarted operator finds the object it made
// instead of making a second one. Characters a name cannot hold become "-";
// a name that would be too long or invalid is cut and ends in a hash of the
// whole, so that distinct parts keep distinct names.
func ObjectName(parts ...string) string {
	joined := strings.Join(parts, "-")
	name := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, joined), "-.")
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(joined))
	suffix := "-" + hex.EncodeToString(sum[:8])
	name = strings.ReplaceAll(name, ".", "-")
	if max := validation.DNS1123SubdomainMaxLength - len(suffix); len(name) > max {
		name = name[:max]
	}
	return strings.Trim(name, "-") + suffix
}

// LabelValue returns s when it is a valid label value; otherwise a value
// that is, cut and ending in a hash of s, so that it still tells values
// apart (but cannot be turned back into s).
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:8])
	v := ObjectName(s)
	if max := validation.LabelValueMaxLength - len(suffix); len(v) > max {
		v = v[:max]
	}
	v = strings.Trim(strings.ReplaceAll(v, ".", "-"), "-")
	if v == "" {
		return suffix[1:]
	}
	return v + suffix
}

// ConfigRequestID is the id of the config request for a config in a boot;
// derived from both, it lets the daemon journal it exactly once, restarts
// or not.
func ConfigRequestID(bootID, config string) string {
	sum := sha256.Sum256([]byte(bootID + "\x00" + config))
	return "config-" + hex.EncodeToString(sum[:8])
}
