package agentpty

// readerLooks is the largest rendered batch in which the reader looks for
// a parked call's pattern itself: an answer, a prompt, a line. After a
// larger one (a flood comes in reads of up to 4 KiB) it wakes the call to
// look, as every other waiter is woken, so that the reader keeps pace with
// the terminal and a call that looks slower sees several batches at once.
const readerLooks = 1 << 10

// matcher is the call parked in await on its pattern (at most one: calls
// take turns). The reader looks for the pattern itself as it renders, under
// mu, and wakes the call only once it matches, or when the call must look
// itself (a full screen, a flood, anything broadcast wakes): the echo of
// the call's input and output that does not match then cost no wake-up of
// the call and no switch between goroutines. Guarded by Session.mu.
type matcher struct {
	want        *waitSpec         // the parked pattern, until its call ends the park; nil while none is parked
	released    bool              // the reader released the call and stopped looking; the park stays the call's until it looks
	hit         bool              // the reader found it, and released the call
	wake        chan struct{}     // a token when the call is released (1-buffered, made once)
	text, kinds []byte            // a waitSpec's buffers, kept between calls (see looker)
	tell        func(what string) // tests: told, under mu, "parked" at a park, "kept" when the reader's look found nothing, "beside" when a wait looks beside a park
}

// looker is a call's looks for its pattern in the settled text (await),
// parked with the reader between them.
type looker struct {
	s      *Session
	want   *waitSpec // nil: no pattern
	parked bool
}

// look reports whether the pattern matches: the reader found it while the
// call was parked, or it does now. Call with mu held.
func (l *looker) look() bool {
	if l.want == nil {
		return false
	}
	m := &l.s.match
	if l.want.text == nil { // the buffers of an earlier call: looks allocate nothing
		l.want.text, l.want.kinds, m.text, m.kinds = m.text, m.kinds, nil, nil
	}
	hit := l.parked && l.s.unparkMatch()
	l.parked = false
	return hit || l.want.inSettled(l.s.text.settler())
}

// wake returns what wakes the call: the reader's release when park (the
// call waits for its pattern only) and no other wait is parked (calls take
// turns, but a wait outside them may look beside one), else any change.
// Call with mu held.
func (l *looker) wake(park bool) <-chan struct{} {
	m := &l.s.match
	if park && m.want == nil {
		l.parked = true
		return l.s.parkMatch(l.want)
	}
	if park && m.tell != nil {
		m.tell("beside")
	}
	return l.s.text.changes()
}

// done ends the looks: the reader stops looking, and the call's buffers
// are kept for the next call, unless a flood made them large.
func (l *looker) done() {
	if l.want == nil {
		return
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.parked {
		l.s.unparkMatch()
	}
	if cap(l.want.text) <= 64<<10 {
		l.s.match.text, l.s.match.kinds = l.want.text[:0], l.want.kinds[:0]
	}
	l.want.text, l.want.kinds = nil, nil
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
	m.want, m.hit, m.released = want, false, false
	if m.tell != nil {
		m.tell("parked")
	}
	return m.wake
}

// unparkMatch ends a park, whether the reader released it or not, and
// reports whether the reader found the match. Only the parked call calls
// it. Call with mu held.
func (s *Session) unparkMatch() bool {
	hit := s.match.hit
	s.match.want, s.match.hit, s.match.released = nil, false, false
	return hit
}

// releaseMatch wakes the parked call, if any; hit says the reader found
// its match. Call with mu held.
func (s *Session) releaseMatch(hit bool) {
	m := &s.match
	if m.want == nil || m.released {
		return
	}
	m.released, m.hit = true, hit
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
	if m.want == nil || m.released {
		return
	}
	st := s.text.settler()
	switch {
	case n > readerLooks || st.altScreen():
		s.releaseMatch(false) // the call looks itself: on the screen, or at leisure through a flood
	case m.want.inSettled(st):
		s.releaseMatch(true)
	case m.tell != nil:
		m.tell("kept")
	}
}
