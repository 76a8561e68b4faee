package pools

import (
	"fmt"
	"slices"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// Verdict says whether a request's windows let it be admitted now.
type Verdict struct {
	// Open is true when the request may be admitted now, as far as
	// windows go.
	Open bool
	// Next is when a closed request may next be admitted: the first moment
	// its pool's and its policy's windows are open together. Zero when
	// unknown, or never.
	Next time.Time
	// Policy names the RebootPolicy whose windows apply too, if any.
	Policy string
	// Problem says why the request is never admitted as things stand: its
	// policy's windows cannot be read.
	Problem string
	// Frozen says which freeze holds the request (FreezeState.Describe);
	// FreezeProblem which freeze that would hold it cannot be read.
	Frozen, FreezeProblem string
}

// Windows evaluates requests' windows at one moment for one pool, parsing
// the pool's windows and each policy's once.
type Windows struct {
	now      time.Time
	pool     string
	windows  []policies.Window
	poolErr  error
	policies map[string]policyWindows
	// freezes are the pool's freezes, parsed; freezeErr says why they
	// cannot be.
	freezes   []policies.Freeze
	freezeErr error
	// poolFrozen is what the pool's freezes say at now, told once.
	poolFrozen policies.FreezeState
	// thawed caches afterFreezes by what it depends on: a recurring freeze
	// that never ends is costly to follow, and every request of the pool
	// asks the same.
	thawed map[thawKey]time.Time
}

type policyWindows struct {
	windows []policies.Window
	err     error
	// freezes are the policy's freezes, parsed; freezeErr says why they
	// cannot be; frozen is what they say at now.
	freezes   []policies.Freeze
	freezeErr error
	frozen    policies.FreezeState
}

// NewWindows prepares the evaluation at now of requests in a pool (nil for
// the built-in default pool without an object), given the cluster's
// RebootPolicies.
func NewWindows(now time.Time, pool *v1alpha1.MaintenancePool, rebootPolicies []v1alpha1.RebootPolicy) *Windows {
	w := &Windows{now: now, pool: v1alpha1.DefaultPoolName, policies: map[string]policyWindows{}, thawed: map[thawKey]time.Time{}}
	if pool != nil {
		w.pool = pool.Name
		if w.windows, w.poolErr = policies.ParseWindows(pool.Spec.Windows); w.poolErr != nil {
			w.poolErr = fmt.Errorf("spec.%w", w.poolErr)
		}
		w.freezes, w.freezeErr = policies.ParseFreezes("pool "+pool.Name, pool.Spec.Freezes)
		w.poolFrozen = policies.FrozenAt(w.freezes, now)
	}
	for _, p := range rebootPolicies {
		if len(p.Spec.Windows) == 0 && len(p.Spec.Freezes) == 0 {
			continue
		}
		parsed, err := policies.ParseWindows(p.Spec.Windows)
		pw := policyWindows{windows: parsed, err: err}
		pw.freezes, pw.freezeErr = policies.ParseFreezes("RebootPolicy "+p.Name, p.Spec.Freezes)
		pw.frozen = policies.FrozenAt(pw.freezes, now)
		w.policies[p.Name] = pw
	}
	return w
}

// PoolErr says why the pool's windows cannot be read, naming the field;
// nil when they can. Nothing is admitted then: a window that cannot be
// read is not taken for an open one.
func (w *Windows) PoolErr() error { return w.poolErr }

// Pool is the state of the pool's own windows: open when one is (or the
// pool has none), shut when they cannot be read.
func (w *Windows) Pool() policies.WindowState {
	if w.poolErr != nil {
		return policies.WindowState{}
	}
	return policies.AnyOpen(w.windows, w.now)
}

// Timeless reports whether Node says the same at every moment: open for
// every request, since neither the pool nor any policy has windows or
// freezes, and the pool's can be read. What it says of a node may then be
// kept until the node's requests change.
func (w *Windows) Timeless() bool {
	return w.poolErr == nil && w.freezeErr == nil && len(w.windows) == 0 && len(w.freezes) == 0 && len(w.policies) == 0
}

// PolicyWindows reports whether any policy has windows, i.e. whether a
// request's policy can matter.
func (w *Windows) PolicyWindows() bool { return len(w.policies) > 0 }

// Request evaluates one request: ignoreWindows passes at once; otherwise the
// pool's windows, and those of the named policy (a policy without windows,
// or one that no longer exists, adds none), must be open together.
//
// While the pool's own windows cannot be read, no request passes, not even
// one that ignores windows: the pool admits nothing until they can be read.
func (w *Windows) Request(s RequestSettings) Verdict {
	if w.poolErr != nil {
		return Verdict{Problem: fmt.Sprintf("pool %s %v", w.pool, w.poolErr)}
	}
	policy := s.Policy
	pw, ok := w.policies[policy]
	if !ok || policy == "" {
		policy, pw = "", policyWindows{}
	}
	if !s.IgnoreFreezes {
		if v, frozen := w.frozen(s, policy, pw); frozen {
			return v
		}
	}
	if s.IgnoreWindows {
		return Verdict{Open: true}
	}
	if pw.err != nil {
		return Verdict{Policy: policy, Problem: fmt.Sprintf("RebootPolicy %s spec.%v", policy, pw.err)}
	}
	st := policies.AllOpen(w.now, w.windows, pw.windows)
	return Verdict{Open: st.Open, Next: st.Next, Policy: policy}
}

// RequestSettings are what a request's NodeMaintenance says of its windows
// and freezes. A request raised on the node (host, config, sentinel) has no
// NodeMaintenance spec of its own, hence the zero settings: it passes no
// window and no freeze.
type RequestSettings struct {
	IgnoreWindows bool
	// IgnoreFreezes passes the pool's and the policy's freezes; it is
	// separate from IgnoreWindows, which passes no freeze.
	IgnoreFreezes bool
	Policy        string
	// Recorded is when the NodeMaintenance was created, as the API server
	// stamped it, and RaisedOnNode whether kmaint created it for a request
	// that started on the node: they bound the request's place in the
	// queue (QueueTime).
	Recorded     time.Time
	RaisedOnNode bool
}

// SettingsOf finds a request's settings by its id: SettingsMap, or
// SettingsList for settings kept long.
type SettingsOf interface {
	Lookup(id string) (RequestSettings, bool)
}

// SettingsMap is request settings by request id.
type SettingsMap map[string]RequestSettings

// Lookup returns the settings of the request id.
func (m SettingsMap) Lookup(id string) (RequestSettings, bool) {
	s, ok := m[id]
	return s, ok
}

// SettingsList is request settings by request id as a list: a node has
// one open NodeMaintenance, or a few, and a map of one entry took some 700
// bytes where its entry takes 80. The gate keeps one for every node with
// requests, 5 MB of its heap at 5000 nodes as maps.
type SettingsList []IDSettings

// IDSettings are the settings of the request ID.
type IDSettings struct {
	ID string
	RequestSettings
}

// Lookup returns the settings of the request id.
func (l SettingsList) Lookup(id string) (RequestSettings, bool) {
	for i := range l {
		if l[i].ID == id {
			return l[i].RequestSettings, true
		}
	}
	return RequestSettings{}, false
}

// lookup is s.Lookup(id); nothing for a nil s.
func lookup(s SettingsOf, id string) (RequestSettings, bool) {
	if s == nil {
		return RequestSettings{}, false
	}
	return s.Lookup(id)
}

// Settings returns, by node and then by request id, the window settings of
// open NodeMaintenances. A request's settings are its own node's: a node
// whose requests named another node's request id (its daemon's token may
// read that node's api-requests) would otherwise borrow that request's
// ignoreFreezes or ignoreWindows.
func Settings(items []v1alpha1.NodeMaintenance) map[string]SettingsMap {
	out := map[string]SettingsMap{}
	for i := range items {
		nm := &items[i]
		if nm.Status.Phase.Done() {
			continue
		}
		node := out[nm.Spec.NodeName]
		if node == nil {
			node = SettingsMap{}
			out[nm.Spec.NodeName] = node
		}
		node[nm.RequestID()] = settingsOf(nm)
	}
	return out
}

func settingsOf(nm *v1alpha1.NodeMaintenance) RequestSettings {
	return RequestSettings{
		IgnoreWindows: nm.Spec.IgnoreWindows, IgnoreFreezes: nm.Spec.IgnoreFreezes, Policy: nm.Spec.Policy,
		Recorded: nm.CreationTimestamp.Time, RaisedOnNode: nm.Spec.Source.RaisedOnNode(),
	}
}

// NodeSettings is Settings of one node's open NodeMaintenances, read in
// place (package cacheread); nil for none. Of two with one request id (none
// of kmaint's making), the last counts, as in Settings.
func NodeSettings(open []*v1alpha1.NodeMaintenance) SettingsList {
	var out SettingsList
	for _, nm := range open {
		if nm.Status.Phase.Done() {
			continue
		}
		id := nm.RequestID()
		out = slices.DeleteFunc(out, func(s IDSettings) bool { return s.ID == id })
		out = append(out, IDSettings{ID: id, RequestSettings: settingsOf(nm)})
	}
	return slices.Clip(out)
}

// Node evaluates the windows of a node's requests: the node may be admitted
// when any of its requests may be, since the one reboot satisfies them all.
// A request without settings (no NodeMaintenance known) falls under the
// pool's windows alone.
func (w *Windows) Node(requests []protocol.Request, settings SettingsOf) policies.WindowWait {
	ww := policies.WindowWait{Shut: len(requests) > 0}
	for _, req := range requests {
		s, _ := lookup(settings, req.ID)
		v := w.Request(s)
		switch {
		case v.Open:
			return policies.WindowWait{}
		case v.Frozen != "" || v.FreezeProblem != "":
			ww.Frozen = appendNew(ww.Frozen, v.Frozen)
			ww.FreezeProblems = appendNew(ww.FreezeProblems, v.FreezeProblem)
			if !v.Next.IsZero() && (ww.Next.IsZero() || v.Next.Before(ww.Next)) {
				ww.Next = v.Next
			}
			continue
		case v.Problem != "":
			if !slices.Contains(ww.Problems, v.Problem) {
				ww.Problems = append(ww.Problems, v.Problem)
			}
			continue
		case !v.Next.IsZero() && (ww.Next.IsZero() || v.Next.Before(ww.Next)):
			ww.Next = v.Next
		}
		what := "pool " + w.pool
		if v.Policy != "" {
			what += " and RebootPolicy " + v.Policy
		}
		if !slices.Contains(ww.Closed, what) {
			ww.Closed = append(ww.Closed, what)
		}
	}
	return ww
}
