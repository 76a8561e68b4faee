package notify

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// Event is what the notifier reads of a Kubernetes Event.
type Event struct {
	Reason string
	// Type is Normal or Warning.
	Type string
	Note string
	// Kind and Name are the object the event is about (regarding).
	Kind, Name string
	// RelatedKind is the kind of the event's related object, if any.
	RelatedKind string
}

// FromAPI reads an events.k8s.io Event.
func FromAPI(ev *eventsv1.Event) Event {
	e := Event{Reason: ev.Reason, Type: ev.Type, Note: ev.Note, Kind: ev.Regarding.Kind, Name: ev.Regarding.Name}
	if ev.Related != nil {
		e.RelatedKind = ev.Related.Kind
	}
	return e
}

// Line is one event in a message.
type Line struct {
	Reason string
	Text   string
}

// maxLineLength bounds a line, in characters: an event's note can be long
// (a drain's blockers), a chat message cannot.
const maxLineLength = 300

// Selector picks the events that are notified.
type Selector struct {
	reasons map[string]bool
}

// NewSelector selects events of the given reasons.
func NewSelector(reasons []string) Selector {
	s := Selector{reasons: map[string]bool{}}
	for _, r := range reasons {
		s.reasons[r] = true
	}
	return s
}

// Line turns an event into a message's line, or says it is not notified:
// its reason is not selected, or it is the node's copy of an event the gate
// records on a node and on its pool (the pool's copy is notified).
func (s Selector) Line(e Event) (Line, bool) {
	if !s.reasons[e.Reason] {
		return Line{}, false
	}
	if e.Kind == "Node" && e.RelatedKind == "MaintenancePool" {
		return Line{}, false
	}
	text := fmt.Sprintf("%s, %s %s: %s", e.Reason, noun(e.Kind), inert(e.Name), inert(strings.TrimSpace(e.Note)))
	if e.Type == corev1.EventTypeWarning {
		text = "Warning " + text
	}
	return Line{Reason: e.Reason, Text: truncate(text, maxLineLength)}, true
}

// inert makes text that others wrote (a node's name, an event's note
// quoting a daemon's state or a request's reason) plain text in every chat:
// no mention that pings a channel (Slack's <!channel>, Discord's
// @everyone), no link dressed as other text (<https://...|here>), no markup
// tag, no line that looks like a message of its own. The angle brackets
// become look-alikes, an @ is kept from starting a mention by a word joiner
// (U+2060), and control characters (newlines among them) become spaces.
func inert(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '<':
			return '‹'
		case r == '>':
			return '›'
		case r == '&':
			return '＆'
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, strings.ReplaceAll(s, "@", "@\u2060"))
}

// noun is how a person calls kmaint's kinds.
func noun(kind string) string {
	switch kind {
	case "MaintenancePool":
		return "pool"
	case "Node":
		return "node"
	case "NodeMaintenance":
		return "request"
	case "RebootPolicy":
		return "policy"
	}
	return kind
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Batch collects the lines of the next message, within a bound: past
// maxLines, events are only counted by reason. Its size is bounded by
// maxLines and the number of reasons, however many events arrive.
type Batch struct {
	maxLines int
	lines    []Line
	more     map[string]int
}

// NewBatch makes an empty batch of at most maxLines lines.
func NewBatch(maxLines int) *Batch {
	return &Batch{maxLines: maxLines, more: map[string]int{}}
}

// Add adds a line, or counts it when the batch is full; it reports whether
// the line was only counted.
func (b *Batch) Add(l Line) (counted bool) {
	if len(b.lines) < b.maxLines {
		b.lines = append(b.lines, l)
		return false
	}
	b.more[l.Reason]++
	return true
}

// Empty reports whether nothing waits.
func (b *Batch) Empty() bool { return len(b.lines) == 0 }

// Take returns the batch's message and empties it.
func (b *Batch) Take() Message {
	m := Message{Lines: b.lines, More: b.more}
	b.lines, b.more = nil, map[string]int{}
	return m
}

// Message is what one notification says.
type Message struct {
	Lines []Line
	// More counts, by reason, the events past the message's lines.
	More map[string]int
}

// Events counts the events the message stands for.
func (m Message) Events() int {
	n := len(m.Lines)
	for _, c := range m.More {
		n += c
	}
	return n
}

// Text is the message as sent: a line per event, then the count of the
// events left out, by reason.
func (m Message) Text() string {
	var sb strings.Builder
	for i, l := range m.Lines {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(l.Text)
	}
	if len(m.More) == 0 {
		return sb.String()
	}
	var parts []string
	total := 0
	for _, r := range slices.Sorted(maps.Keys(m.More)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, m.More[r]))
		total += m.More[r]
	}
	fmt.Fprintf(&sb, "\n… and %d more (%s): kubectl get events -n default", total, strings.Join(parts, ", "))
	return sb.String()
}
