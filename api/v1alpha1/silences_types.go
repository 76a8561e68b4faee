package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Silences are the Alertmanager silences a pool's nodes in flight get: one
// silence per set and Alertmanager, for each node, templated with its name.
type Silences struct {
	// Sets are the silences each node in flight gets, one per set.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Sets []SilenceSet `json:"sets"`

	// OnUnreachable is what the pool does when a node's silences cannot be
	// made (Alertmanager down, slow, refusing the operator's credentials,
	// or none configured): Hold (the default) keeps the admitted node
	// uncordoned until they are made, and admits nothing new meanwhile;
	// Proceed cordons and drains it all the same, warns, and goes on trying
	// to make them while the node is in flight.
	// +kubebuilder:default=Hold
	// +optional
	OnUnreachable SilencesUnreachable `json:"onUnreachable,omitempty"`

	// MaxDuration bounds how long a node's silences last from its
	// admission, whatever stage it is stuck in: past it they are no longer
	// extended and end within the operator's margin. From 10m to 24h
	// (default 4h).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m') && duration(self) <= duration('24h')",message="maxDuration must be a Go duration from 10m to 24h"
	// +optional
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
}

// SilenceSet is one silence made for each node in flight.
type SilenceSet struct {
	// Name identifies the set in the silence's comment, the node's record
	// and events.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// Matchers select the alerts the silence mutes, in PromQL's syntax:
	// name="value", name!="value", name=~"regex" or name!~"regex", the
	// value a double-quoted string in which {{ .Node }} stands for the
	// node's name (quoted for a regex). At least one = or =~ matcher must
	// use {{ .Node }}, so that a set silences one node and not the
	// cluster, e.g. ['instance=~"{{ .Node }}(:[0-9]+)?"'] or
	// ['alertname="KubeNodeNotReady"', 'node="{{ .Node }}"'].
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	Matchers []string `json:"matchers"`
}

// SilencesUnreachable is what a pool does when silences cannot be made.
// +kubebuilder:validation:Enum=Hold;Proceed
type SilencesUnreachable string

// What a pool does when silences cannot be made.
const (
	SilencesHold    SilencesUnreachable = "Hold"
	SilencesProceed SilencesUnreachable = "Proceed"
)

// DefaultSilenceMaxDuration is spec.silences.maxDuration's default.
const DefaultSilenceMaxDuration = 4 * time.Hour

// Proceeds reports whether the pool goes on without its silences.
func (s *Silences) Proceeds() bool { return s != nil && s.OnUnreachable == SilencesProceed }

// Lifetime is how long a node's silences may last from its admission.
func (s *Silences) Lifetime() time.Duration {
	if s == nil || s.MaxDuration == nil || s.MaxDuration.Duration <= 0 {
		return DefaultSilenceMaxDuration
	}
	return min(max(s.MaxDuration.Duration, 10*time.Minute), 24*time.Hour)
}

// SilenceMatcher is one matcher of a silence, rendered for a node.
type SilenceMatcher struct {
	Name, Value string
	// Regex: the value is a regular expression (=~, !~); Equal: the
	// matcher selects what matches (=, =~), not what does not.
	Regex, Equal bool
}

// nodePlaceholder is the one template the matchers know; anything else in
// double braces is refused rather than sent to Alertmanager as it is.
var nodePlaceholder = regexp.MustCompile(`\{\{\s*\.Node\s*\}\}`)

var matcherSyntax = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(".*")\s*$`)

// maxMatcherValue bounds a rendered value: node names are at most 253
// bytes, and a silence's matchers are shown to people.
const maxMatcherValue = 1024

// probeNode is the name Validate renders the templates with: the longest
// a node may have, with the characters that mean something in a regex.
var probeNode = strings.Repeat("a.b-", 63) + "z"

// Validate reports every reason the sets cannot make silences: a matcher
// that does not parse, a template other than {{ .Node }}, a regex that
// does not compile, or a set that does not select by the node.
func (s *Silences) Validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, set := range s.Sets {
		if _, err := set.Render(probeNode); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Render returns the set's matchers for node: {{ .Node }} replaced by its
// name, quoted as a regex in =~ and !~ matchers.
func (set SilenceSet) Render(node string) ([]SilenceMatcher, error) {
	out := make([]SilenceMatcher, 0, len(set.Matchers))
	byNode := false
	for _, text := range set.Matchers {
		m, re, usesNode, err := renderMatcher(text, node)
		if err != nil {
			return nil, fmt.Errorf("silence set %q: matcher %q: %w", set.Name, text, err)
		}
		if usesNode && m.Equal {
			if re != nil && re.MatchString("") {
				return nil, fmt.Errorf("silence set %q: matcher %q matches an empty value: it would not select by the node", set.Name, text)
			}
			byNode = true
		}
		out = append(out, m)
	}
	if !byNode {
		return nil, fmt.Errorf("silence set %q: no = or =~ matcher uses {{ .Node }}: a set must silence one node, not every node", set.Name)
	}
	return out, nil
}

// renderMatcher parses one matcher and renders it for node; re is its
// regex, anchored as Alertmanager anchors it, for =~ and !~.
func renderMatcher(text, node string) (m SilenceMatcher, re *regexp.Regexp, usesNode bool, err error) {
	parts := matcherSyntax.FindStringSubmatch(text)
	if parts == nil {
		return m, nil, false, errors.New(`want name="value", name!="value", name=~"regex" or name!~"regex"`)
	}
	value, err := strconv.Unquote(parts[3])
	if err != nil {
		return m, nil, false, fmt.Errorf("the value is not a double-quoted string: %w", err)
	}
	m = SilenceMatcher{Name: parts[1], Regex: strings.HasSuffix(parts[2], "~"), Equal: !strings.HasPrefix(parts[2], "!")}
	usesNode = nodePlaceholder.MatchString(value)
	quoted := node
	if m.Regex {
		quoted = regexp.QuoteMeta(node)
	}
	value = nodePlaceholder.ReplaceAllLiteralString(value, quoted)
	if strings.Contains(value, "{{") {
		return m, nil, false, errors.New("only {{ .Node }} may be templated")
	}
	if len(value) > maxMatcherValue {
		return m, nil, false, fmt.Errorf("the value is %d bytes, more than %d", len(value), maxMatcherValue)
	}
	if m.Regex {
		// Alertmanager anchors a matcher's regex, and Go's regexp is
		// its syntax too.
		if re, err = regexp.Compile("^(?:" + value + ")$"); err != nil {
			return m, nil, false, fmt.Errorf("the regex does not compile: %w", err)
		}
	}
	m.Value = value
	return m, re, usesNode, nil
}
