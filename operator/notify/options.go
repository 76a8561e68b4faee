package notify

import (
	"fmt"
	"regexp"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// DefaultReasons returns the Event reasons notified when none are given:
// what a person wants to hear about without asking.
func DefaultReasons() []string {
	return []string{
		v1alpha1.RolloutStartedReason, v1alpha1.RolloutFinishedReason, // a pool's rollout (gate)
		v1alpha1.DrainFailedEventReason, v1alpha1.DrainForcedReason, // a drain given up at its deadline, or forced past it (gate)
		v1alpha1.NodeNotBackReason, v1alpha1.DaemonMissingReason, // a node not back from its reboot, or back without its daemon (aftercare)
		v1alpha1.RebootNotObservedReason, "RebootFailed", // the approved reboot did not happen (daemon)
		v1alpha1.HealthCheckFailedReason, v1alpha1.PoolHaltedReason, // a node failed its health checks after its reboot, and its pool halted (aftercare)
		"RebootLoop",              // the node asks again for the reboot it just had (daemon)
		v1alpha1.HookFailedReason, // a hook around a node's reboot failed (gate)
	}
}

// Defaults and bounds of the options.
const (
	DefaultInterval    = time.Minute
	DefaultSendTimeout = 10 * time.Second
	DefaultMaxLines    = 10
	DefaultTitle       = "kmaint"
	// MaxReasons bounds the reasons one can list, and so the summary's
	// counters.
	MaxReasons = 64
	// MaxURLs bounds the receivers, and so the goroutines a send can leave
	// behind.
	MaxURLs = 16
	// maxMaxLines keeps a message within what the chat services take
	// (Telegram: 4096 characters) with lines of maxLineLength.
	maxMaxLines = 20
)

// Options configure the notifier.
type Options struct {
	// URLsFile holds the receivers' shoutrrr URLs, one a line; empty lines
	// and lines starting with # are ignored. Empty turns notifications off.
	URLsFile string
	// Reasons are the Event reasons notified; empty means DefaultReasons.
	Reasons []string
	// Interval is the least time between two messages; events in between
	// go out together. 0 means DefaultInterval.
	Interval time.Duration
	// SendTimeout bounds the wait for a receiver; 0 means
	// DefaultSendTimeout.
	SendTimeout time.Duration
	// MaxLines is how many events a message lists; the rest are counted by
	// reason. 0 means DefaultMaxLines.
	MaxLines int
	// Title heads every message (the title of services that have one), e.g.
	// the cluster's name. Empty means DefaultTitle.
	Title string
}

// Enabled reports whether notifications are asked for.
func (o Options) Enabled() bool { return o.URLsFile != "" }

// reasonPattern is what an Event reason looks like (UpperCamelCase, as
// the API's validation of events.k8s.io wants it).
var reasonPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,127}$`)

// Validate refuses options that cannot mean anything, naming the flag.
func (o Options) Validate() error {
	if len(o.Reasons) > MaxReasons {
		return fmt.Errorf("--notify-reasons: %d reasons, at most %d", len(o.Reasons), MaxReasons)
	}
	for _, r := range o.Reasons {
		if !reasonPattern.MatchString(r) {
			return fmt.Errorf("--notify-reasons: %q is not an Event reason (UpperCamelCase, e.g. %s)", r, v1alpha1.RolloutStartedReason)
		}
	}
	if o.Interval < 0 || o.Interval > 24*time.Hour {
		return fmt.Errorf("--notify-interval=%s: must be between 0 (the default, %s) and 24h", o.Interval, DefaultInterval)
	}
	if o.SendTimeout < 0 || o.SendTimeout > 5*time.Minute {
		return fmt.Errorf("--notify-send-timeout=%s: must be between 0 (the default, %s) and 5m", o.SendTimeout, DefaultSendTimeout)
	}
	if o.MaxLines < 0 || o.MaxLines > maxMaxLines {
		return fmt.Errorf("--notify-max-lines=%d: must be between 0 (the default, %d) and %d", o.MaxLines, DefaultMaxLines, maxMaxLines)
	}
	if len(o.Title) > 128 {
		return fmt.Errorf("--notify-title: %d characters, at most 128", len(o.Title))
	}
	return nil
}

// withDefaults fills in what is zero.
func (o Options) withDefaults() Options {
	if len(o.Reasons) == 0 {
		o.Reasons = DefaultReasons()
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.MaxLines == 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.Title == "" {
		o.Title = DefaultTitle
	}
	return o
}
