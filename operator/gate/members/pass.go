package members

// Pass is one reconcile's reading of a pool's members: the active ones,
// made ready for the phases when it starts, and the quiet ones the gate
// pulls in as it reaches them (the plan, the head of the queue first),
// each made ready once. Those not pulled are counted (Tally), not read.
//
// The members are the pool's, not copies: at thousands of nodes a copy of
// each was most of a reconcile's allocations. What a pass makes ready of
// a member it starts afresh (prepare), so nothing of one reconcile leaks
// into the next.
type Pass[V any] struct {
	pool    *Pool[V]
	number  uint64
	prepare func(*Member[V])
	// quiet counts the quiet members not pulled in this pass.
	quiet  Tally
	pulled []*Member[V]
}

// Start begins a reconcile's pass: prepare makes a member ready for it,
// and is called now for each active member, by name, and for each quiet
// one when it is first pulled. The pool must not change (Set, Reset)
// while the pass is read.
func (p *Pool[V]) Start(prepare func(*Member[V])) *Pass[V] {
	p.pass++
	s := &Pass[V]{pool: p, number: p.pass, prepare: prepare, quiet: p.tally}
	for _, m := range p.active {
		prepare(m)
	}
	return s
}

// Pull makes a quiet member ready for this pass, once: from then it is
// read, not counted. It reports whether this call made it ready.
func (s *Pass[V]) Pull(m *Member[V]) bool {
	if m.pass == s.number {
		return false
	}
	m.pass = s.number
	s.prepare(m)
	s.quiet.add(m.Place, -1)
	s.pulled = append(s.pulled, m)
	return true
}

// HasPulled reports whether m was pulled in this pass.
func (s *Pass[V]) HasPulled(m *Member[V]) bool { return m.pass == s.number }

// Pulled returns the members pulled in this pass so far, in the order
// they were.
func (s *Pass[V]) Pulled() []*Member[V] { return s.pulled }

// Tally counts the quiet members not pulled in this pass.
func (s *Pass[V]) Tally() Tally { return s.quiet }

// Get is Pool.Get.
func (s *Pass[V]) Get(name string) *Member[V] { return s.pool.Get(name) }

// Queue is Pool.Queue.
func (s *Pass[V]) Queue() []*Member[V] { return s.pool.queue }

// Rebooting is Pool.Rebooting.
func (s *Pass[V]) Rebooting() []*Member[V] { return s.pool.rebooting }
