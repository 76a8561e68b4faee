package statuspatch

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Written remembers the status a controller last wrote for each object, by
// name. The informer cache may not show that write yet, so a reconcile that
// compared with the cached status would write the same status again, or
// decide from an older one. An entry holds only for the object (UID) it was
// written for: an object deleted and made again starts afresh. S is a
// pointer to a status type with a generated DeepCopy; the zero Written is
// empty and ready to use.
type Written[S interface{ DeepCopy() S }] struct {
	mu   sync.Mutex
	last map[string]written[S]
}

type written[S any] struct {
	uid    types.UID
	status S
}

// Last returns a copy of the status last written for the object, if any.
func (w *Written[S]) Last(name string, uid types.UID) (S, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.last[name]
	if !ok || e.uid != uid {
		var none S
		return none, false
	}
	return e.status.DeepCopy(), true
}

// Same reports whether s is what was last written for the object, compared
// as the API server would store it.
func (w *Written[S]) Same(name string, uid types.UID, s S) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.last[name]
	return ok && e.uid == uid && equality.Semantic.DeepEqual(e.status, s)
}

// Remember records s as written for the object.
func (w *Written[S]) Remember(name string, uid types.UID, s S) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]written[S]{}
	}
	w.last[name] = written[S]{uid: uid, status: s.DeepCopy()}
}

// Forget drops what was written for the object of that name, once it is
// gone.
func (w *Written[S]) Forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, name)
}
