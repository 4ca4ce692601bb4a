package agentpty

// readerLooks is the largest rendered batch in which the reader looks for
// a parked call's pattern itself; after a larger one (a flood) it wakes the
// call to look, as every other waiter is woken, so that the reader keeps
// pace with the terminal.
const readerLooks = 4 << 10

// matcher is the call parked in await on its pattern (at most one: calls
// take turns). The reader looks for the pattern itself as it renders, under
// mu, and wakes the call only once it matches, or when the call must look
// itself (a full screen, a flood, anything broadcast wakes): the echo of
// the call's input and output that does not match then cost no wake-up of
// the call and no switch between goroutines. Guarded by Session.mu.
type matcher struct {
	want *waitSpec         // the pattern looked for; nil while no call is parked
	hit  bool              // the reader found it, and released the call
	wake chan struct{}     // a token when the call is released (1-buffered, made once)
	tell func(what string) // tests: told, under mu, "parked" at a park and "kept" when a look found nothing
}

// parkMatch parks want for the reader to look for, and returns the channel
// that wakes the call. The caller has just looked itself and found nothing.
// Call with mu held.
func (s *Session) parkMatch(want *waitSpec) <-chan struct{} {
	m := &s.match
	if m.wake == nil {
		m.wake = make(chan struct{}, 1)
	}
	select {
	case <-m.wake: // the token of an earlier park that ended otherwise
	default:
	}
	m.want, m.hit = want, false
	if m.tell != nil {
		m.tell("parked")
	}
	return m.wake
}

// unparkMatch ends a park, whether the reader released it or not, and
// reports whether the reader found the match. Call with mu held.
func (s *Session) unparkMatch() bool {
	hit := s.match.hit
	s.match.want, s.match.hit = nil, false
	return hit
}

// releaseMatch wakes the parked call, if any; hit says the reader found
// its match. Call with mu held.
func (s *Session) releaseMatch(hit bool) {
	m := &s.match
	if m.want == nil {
		return
	}
	m.want, m.hit = nil, hit
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// lookForMatch is the reader's look, after it rendered n bytes, for the
// parked call's pattern in the settled text: the look the call would make
// on waking (inSettled), so its state (what was scanned, the echo) stays
// the call's. Call with mu held.
func (s *Session) lookForMatch(n int) {
	m := &s.match
	if m.want == nil {
		return
	}
	st := s.text.settle
	switch {
	case n > readerLooks || st.altScreen():
		s.releaseMatch(false) // the call looks itself: on the screen, or at leisure through a flood
	case m.want.inSettled(st):
		s.releaseMatch(true)
	case m.tell != nil:
		m.tell("kept")
	}
}
