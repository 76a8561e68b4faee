package history

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// store holds the records one watch of the API server shows (the records
// of one finished phase), kept up to date by a client-go Reflector: it is
// the Reflector's store, and turns each NodeMaintenance it is given into a
// Record as it comes.
type store struct {
	intern func(string) string
	// changed is called after each change of the store.
	changed func()

	mu      sync.RWMutex
	records map[string]*Record
	byNode  map[string][]*Record
	// reached is the resourceVersion of the latest change the store holds:
	// a change of a record at or before it is here, or was here and is
	// gone again.
	reached string
	synced  chan struct{}
}

func newStore(intern func(string) string, changed func()) *store {
	return &store{
		intern:  intern,
		changed: changed,
		records: map[string]*Record{},
		byNode:  map[string][]*Record{},
		synced:  make(chan struct{}),
	}
}

var (
	_ toolscache.TransformingStore      = &store{}
	_ toolscache.ReflectorBookmarkStore = &store{}
)

// Transformer is also used by the Reflector on the records it streams in
// before the first Replace: the 24,000 records of a year at 2000 nodes are
// never all held whole at once.
func (s *store) Transformer() toolscache.TransformFunc { return s.transform }

func (s *store) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *Record:
		return o, nil
	case *v1alpha1.NodeMaintenance:
		o.ManagedFields = nil
		return newRecord(o, s.intern), nil
	}
	return nil, fmt.Errorf("history: a %T is no NodeMaintenance", obj)
}

// Add, Update, Delete, Replace, Resync and Bookmark are what the Reflector
// calls.

func (s *store) Add(obj any) error    { return s.put(obj) }
func (s *store) Update(obj any) error { return s.put(obj) }

func (s *store) put(obj any) error {
	rec, err := s.transform(obj)
	if err != nil {
		return err
	}
	r := rec.(*Record)
	s.mu.Lock()
	s.remove(r.Name)
	s.records[r.Name] = r
	s.byNode[r.Node] = append(s.byNode[r.Node], r)
	s.advance(r.ResourceVersion)
	s.mu.Unlock()
	s.changed()
	return nil
}

func (s *store) Delete(obj any) error {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("history: delete: %w", err)
	}
	s.mu.Lock()
	s.remove(m.GetName())
	s.advance(m.GetResourceVersion())
	s.mu.Unlock()
	s.changed()
	return nil
}

func (s *store) Replace(list []any, resourceVersion string) error {
	records := make(map[string]*Record, len(list))
	byNode := map[string][]*Record{}
	for _, obj := range list {
		rec, err := s.transform(obj)
		if err != nil {
			return err
		}
		r := rec.(*Record)
		records[r.Name] = r
		byNode[r.Node] = append(byNode[r.Node], r)
	}
	s.mu.Lock()
	s.records, s.byNode, s.reached = records, byNode, resourceVersion
	s.mu.Unlock()
	select {
	case <-s.synced:
	default:
		close(s.synced)
	}
	s.changed()
	return nil
}

func (s *store) Resync() error { return nil }

func (s *store) Bookmark(resourceVersion string) error {
	s.mu.Lock()
	s.advance(resourceVersion)
	s.mu.Unlock()
	s.changed()
	return nil
}

// remove drops the record named, if held; s.mu is held.
func (s *store) remove(name string) {
	old, ok := s.records[name]
	if !ok {
		return
	}
	delete(s.records, name)
	of := slices.DeleteFunc(s.byNode[old.Node], func(r *Record) bool { return r == old })
	if len(of) == 0 {
		delete(s.byNode, old.Node)
		return
	}
	s.byNode[old.Node] = of
}

// advance moves reached to resourceVersion, if later; s.mu is held.
func (s *store) advance(resourceVersion string) {
	if laterThan(resourceVersion, s.reached) {
		s.reached = resourceVersion
	}
}

// laterThan says whether resourceVersion a is later than b. Versions that
// cannot be compared (an API server whose versions are not numbers) count
// as not later.
func laterThan(a, b string) bool {
	if b == "" {
		return a != ""
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// read calls f with the store's records held; f must not keep the maps.
func (s *store) read(f func(records map[string]*Record, byNode map[string][]*Record)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s.records, s.byNode)
}

// get returns the record named, nil when the store does not hold it.
func (s *store) get(name string) *Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.records[name]
}

// holds says whether the store holds the record named as of
// resourceVersion or later.
func (s *store) holds(name, resourceVersion string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[name]
	return ok && reachedBy(resourceVersion, r.ResourceVersion)
}

// hasReached says whether the store holds every change up to
// resourceVersion; not when the two cannot be compared.
func (s *store) hasReached(resourceVersion string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return reachedBy(resourceVersion, s.reached)
}

// reachedBy says whether resourceVersion is at or before reached.
func reachedBy(resourceVersion, reached string) bool {
	if reached == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(resourceVersion, reached)
	return err == nil && c <= 0
}
