package pools

import (
	"slices"
	"time"

	"github.com/kmaint/kmaint/policies"
)

// maxFreezeSearch bounds the search for the first moment a frozen request
// may be admitted (out of its freezes, with its windows open); past it, the
// last moment reached is given, and the gate looks again then.
const maxFreezeSearch = 64

// PoolFreeze is what the pool's own freezes say now: whether one is in
// force, which, and until when; frozen with Err when one cannot be read.
// The built-in default pool has none.
func (w *Windows) PoolFreeze() policies.FreezeState {
	if w.freezeErr != nil {
		return policies.FreezeState{Frozen: true, Err: w.freezeErr}
	}
	return w.poolFrozen
}

// Freezes reports whether the pool or any policy has freezes, i.e. whether
// a request's ignoreFreezes and policy can matter.
func (w *Windows) Freezes() bool {
	if len(w.freezes) > 0 || w.freezeErr != nil {
		return true
	}
	for _, pw := range w.policies {
		if len(pw.freezes) > 0 || pw.freezeErr != nil {
			return true
		}
	}
	return false
}

// frozen evaluates the freezes that hold a request (its pool's, and its
// policy's, pw, when policy is not empty): the verdict, and true, when one
// is in force or cannot be read. Next is then the first moment the request
// is out of every freeze with its windows open (unless it ignores them).
func (w *Windows) frozen(s RequestSettings, policy string, pw policyWindows) (Verdict, bool) {
	for _, err := range []error{w.freezeErr, pw.freezeErr} {
		if err != nil {
			return Verdict{Policy: policy, FreezeProblem: policies.FreezeState{Err: err}.Describe()}, true
		}
	}
	// The pool's freeze is told first: it holds every request of the pool.
	states := []policies.FreezeState{w.poolFrozen, pw.frozen}
	i := slices.IndexFunc(states, func(st policies.FreezeState) bool { return st.Frozen })
	if i < 0 {
		return Verdict{}, false
	}
	key := thawKey{policy: policy, ignoreWindows: s.IgnoreWindows}
	next, ok := w.thawed[key]
	if !ok {
		next = w.afterFreezes(s, pw)
		w.thawed[key] = next
	}
	return Verdict{Policy: policy, Frozen: states[i].Describe(), Next: next}, true
}

// thawKey is what afterFreezes depends on besides the pool.
type thawKey struct {
	policy        string
	ignoreWindows bool
}

// afterFreezes returns the first moment from now at which the request is
// out of its freezes and, unless it ignores windows, its windows are open
// together; zero when that is never known.
func (w *Windows) afterFreezes(s RequestSettings, pw policyWindows) time.Time {
	all := append(slices.Clone(w.freezes), pw.freezes...)
	t := w.now
	fromFreeze := false
	for range maxFreezeSearch {
		if st := policies.FrozenAt(all, t); st.Frozen {
			if fromFreeze {
				// Still frozen at the end of the freezes in force: their
				// chain was followed as far as it is, and is looked at
				// again then.
				return t
			}
			t, fromFreeze = st.Until, true
			continue
		}
		fromFreeze = false
		if s.IgnoreWindows || pw.err != nil {
			// A policy whose windows cannot be read holds the request
			// whatever the time; the freeze's end is the best known.
			return t
		}
		ws := policies.AllOpen(t, w.windows, pw.windows)
		switch {
		case ws.Open:
			return t
		case ws.Next.IsZero():
			return time.Time{}
		default:
			t = ws.Next
		}
	}
	return t
}

// appendNew appends s unless it is empty or there already.
func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
