package silences

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// pass is one pass's calls to Alertmanager: each Alertmanager's silences
// listed once, when a silence is looked for by its key.
type pass struct {
	r      *Reconciler
	f      Facts
	p      Plan
	o      Outcome
	listed map[string][]Silence
	failed map[string]map[string]int // Alertmanager → operation → failures
}

// call makes, extends and expires what the plan says, each call on its own:
// one that fails is retried by a later pass and stops no other.
func (r *Reconciler) call(ctx context.Context, node *corev1.Node, f Facts, p Plan) Outcome {
	c := &pass{r: r, f: f, p: p, o: Outcome{Errors: map[int]error{}}, listed: map[string][]Silence{}, failed: map[string]map[string]int{}}
	var comment string
	if len(p.Make)+len(p.Extend) > 0 {
		comment = r.comment(ctx, node.Name, f, p.Record)
	}
	for _, i := range p.Make {
		c.make(ctx, i, comment)
	}
	for _, i := range p.Extend {
		c.extend(ctx, i, comment)
	}
	for _, i := range p.Expire {
		c.expire(ctx, i)
	}
	for _, am := range r.Alertmanagers {
		made, expired, removed := count(p.Record, c.o.Made, am.Name), count(p.Record, c.o.Expired, am.Name), count(p.Record, c.o.Removed, am.Name)
		if made+expired+removed+len(c.failed[am.Name]) > 0 {
			r.Metrics.Silences(am.Name, made, expired, removed, c.failed[am.Name])
		}
	}
	return c.o
}

func (c *pass) fail(i int, am, op string, err error) {
	c.o.Errors[i] = err
	if c.failed[am] == nil {
		c.failed[am] = map[string]int{}
	}
	c.failed[am][op]++
}

// make makes entry i's silence, unless one made for it earlier (its ID
// never recorded: the operator stopped in between) is found by its key.
func (c *pass) make(ctx context.Context, i int, comment string) {
	h := &c.p.Record.Silences[i]
	am := c.r.alertmanager(h.Alertmanager)
	if am == nil {
		c.fail(i, h.Alertmanager, "make", fmt.Errorf("silence %s in %s: %w", h.Set, h.Alertmanager, errUnknownAlertmanager))
		return
	}
	matchers, err := c.matchers(h.Set)
	if err != nil {
		c.fail(i, am.Name, "make", err)
		return
	}
	// The record's key is on the node for anyone who may read Nodes: a
	// silence is adopted, and then extended, only if it mutes what kmaint
	// would make it mute.
	found, err := c.find(ctx, am, h.Set, matchers)
	if err != nil {
		c.fail(i, am.Name, "list", err)
		return
	}
	if found != nil {
		h.ID, h.EndsAt = found.ID, found.EndsAt
		ctrl.LoggerFrom(ctx).Info("Silence found again by its key", "node", c.f.node, "set", h.Set, "alertmanager", am.Name, "id", found.ID)
		return
	}
	s := Silence{Matchers: matchers, StartsAt: c.f.Now, EndsAt: c.p.EndsAt, CreatedBy: CreatedBy, Comment: comment + " (" + keyMark(c.p.Record.Key, h.Set) + ")"}
	id, err := am.API.Create(ctx, s)
	if err != nil {
		c.fail(i, am.Name, "make", err)
		return
	}
	h.ID, h.EndsAt = id, c.p.EndsAt
	c.o.Made = append(c.o.Made, i)
}

// extend moves entry i's silence's end; one someone expired is marked
// Removed and not made again, one Alertmanager lost (restarted without its
// data) is made again.
func (c *pass) extend(ctx context.Context, i int, comment string) {
	h := &c.p.Record.Silences[i]
	am := c.r.alertmanager(h.Alertmanager)
	if am == nil {
		c.fail(i, h.Alertmanager, "extend", fmt.Errorf("silence %s in %s: %w", h.ID, h.Alertmanager, errUnknownAlertmanager))
		return
	}
	id, err := am.API.Extend(ctx, h.ID, c.p.EndsAt)
	switch {
	case errors.Is(err, ErrExpired):
		h.Removed = true
		c.o.Removed = append(c.o.Removed, i)
	case errors.Is(err, ErrNotFound):
		ctrl.LoggerFrom(ctx).Info("Silence lost by Alertmanager; made again", "node", c.f.node, "set", h.Set, "alertmanager", am.Name, "id", h.ID)
		h.ID = ""
		c.make(ctx, i, comment)
	case err != nil:
		c.fail(i, am.Name, "extend", err)
	default:
		h.ID, h.EndsAt = id, c.p.EndsAt
		c.o.Extended = append(c.o.Extended, i)
	}
}

// expire ends entry i's silence: by its ID, or, never recorded, the one
// its key finds (none: it was never made).
func (c *pass) expire(ctx context.Context, i int) {
	h := &c.p.Record.Silences[i]
	am := c.r.alertmanager(h.Alertmanager)
	if am == nil {
		// Not configured any longer: it ends at its end.
		ctrl.LoggerFrom(ctx).Info("Silence in an Alertmanager no longer configured ends on its own", "node", c.f.node, "set", h.Set,
			"alertmanager", h.Alertmanager, "id", h.ID, "endsAt", h.EndsAt)
		return
	}
	id := h.ID
	if id == "" {
		// Whatever it mutes: a silence that claims to be this one ends
		// with it.
		found, err := c.find(ctx, am, h.Set, nil)
		if err != nil {
			c.fail(i, am.Name, "list", err)
			return
		}
		if found == nil {
			return
		}
		id = found.ID
	}
	if err := am.API.Expire(ctx, id); err != nil {
		c.fail(i, am.Name, "expire", err)
		return
	}
	c.o.Expired = append(c.o.Expired, i)
}

// find looks for the silence of the record's key and set in am: kmaint's,
// not expired, marked with the key, and with matchers when given.
func (c *pass) find(ctx context.Context, am *Alertmanager, set string, matchers []Matcher) (*Silence, error) {
	all, ok := c.listed[am.Name]
	if !ok {
		var err error
		if all, err = am.API.List(ctx, CreatedBy); err != nil {
			return nil, err
		}
		c.listed[am.Name] = all
	}
	for i := range all {
		if mine(all[i], c.p.Record.Key, set) && (matchers == nil || slices.Equal(all[i].Matchers, matchers)) {
			return &all[i], nil
		}
	}
	return nil, nil
}

// matchers renders the set's matchers for the node.
func (c *pass) matchers(set string) ([]Matcher, error) {
	if c.f.spec == nil {
		return nil, fmt.Errorf("silence set %s: the pool has no silences", set)
	}
	for _, s := range c.f.spec.Sets {
		if s.Name != set {
			continue
		}
		rendered, err := s.Render(c.f.node)
		if err != nil {
			return nil, err
		}
		out := make([]Matcher, 0, len(rendered))
		for _, m := range rendered {
			out = append(out, Matcher{Name: m.Name, Value: m.Value, IsRegex: m.Regex, IsEqual: m.Equal})
		}
		return out, nil
	}
	return nil, fmt.Errorf("silence set %s: not in pool %s any longer", set, c.p.Record.Pool)
}

// comment is what a silence says of itself: the node, its pool and
// NodeMaintenances, and that kmaint ends it.
func (r *Reconciler) comment(ctx context.Context, node string, f Facts, rec *protocol.SilenceRecord) string {
	names := r.requestNames(ctx, node, f.requests)
	const named = 3
	more := ""
	if len(names) > named {
		more = fmt.Sprintf(" and %d more", len(names)-named)
		names = names[:named]
	}
	return fmt.Sprintf("kmaint: node %s is in maintenance in pool %s (NodeMaintenance %s%s); ended when the node is done",
		node, rec.Pool, strings.Join(names, ", "), more)
}

func (r *Reconciler) alertmanager(name string) *Alertmanager {
	for i := range r.Alertmanagers {
		if r.Alertmanagers[i].Name == name {
			return &r.Alertmanagers[i]
		}
	}
	return nil
}

func count(rec *protocol.SilenceRecord, is []int, am string) int {
	n := 0
	for _, i := range is {
		if rec.Silences[i].Alertmanager == am {
			n++
		}
	}
	return n
}

// tell tells what the pass did, on the node: the silences made, those
// someone expired, why they could not be made (when that is new), and
// their end.
func (r *Reconciler) tell(ctx context.Context, node *corev1.Node, f Facts, p Plan, o Outcome, w Write) {
	log := ctrl.LoggerFrom(ctx)
	describe := func(is []int) string {
		var parts []string
		for _, i := range is {
			h := p.Record.Silences[i]
			parts = append(parts, fmt.Sprintf("%s in %s (%s)", h.Set, h.Alertmanager, h.ID))
		}
		return strings.Join(parts, ", ")
	}
	if len(o.Made) > 0 {
		log.Info("Silences made", "node", node.Name, "silences", describe(o.Made))
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, v1alpha1.SilencesMadeReason, "Silence",
			"Silenced node %s until its maintenance ends: %s; each ends by %s unless extended", node.Name, describe(o.Made), p.EndsAt.UTC().Format("15:04:05Z"))
	}
	if len(o.Removed) > 0 {
		log.Info("Silences expired by someone else", "node", node.Name, "silences", describe(o.Removed))
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.SilenceRemovedReason, "Silence",
			"Someone expired silence %s while node %s is in flight: kmaint does not make it again for this maintenance", describe(o.Removed), node.Name)
	}
	if u := w.recordUnavailable(); u != nil && (f.Record == nil || f.Record.Unavailable == nil || f.Record.Unavailable.Message != u.Message) {
		then := "the node stays uncordoned and its pool admits nothing new until they are (onUnreachable: Hold)"
		if u.Proceed {
			then = "its maintenance goes on without them (onUnreachable: Proceed); kmaint keeps trying"
		}
		log.Info("Silences unavailable", "node", node.Name, "message", u.Message, "proceed", u.Proceed)
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.SilencesUnavailableReason, "Silence",
			"Silences for node %s cannot be made: %s; %s", node.Name, u.Message, then)
	}
	if len(o.Expired) > 0 {
		log.Info("Silences expired", "node", node.Name, "silences", describe(o.Expired))
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, v1alpha1.SilencesExpiredReason, "Silence",
			"Node %s's maintenance ended: expired %s", node.Name, describe(o.Expired))
	}
}

func (w Write) recordUnavailable() *protocol.SilencesUnavailable {
	if w.Record == nil || w.Forget {
		return nil
	}
	return w.Record.Unavailable
}
