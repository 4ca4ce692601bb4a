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
// the call and no switch between goroutines. Guarded by Session.mu: every
// method is called with it held.
type matcher struct {
	want        *waiter           // the parked wait, until its call ends the park; nil while none is parked
	released    bool              // the reader released the call and stopped looking; the park stays the call's until it looks
	hit         bool              // the reader found it, and released the call
	wake        chan struct{}     // a token when the call is released (1-buffered, made once)
	text, kinds []byte            // a waiter's buffers, kept between calls (see lend, keep)
	tell        func(what string) // tests: told, under mu, "parked" at a park, "kept" when the reader's look found nothing, "beside" when a wait looks beside a park
}

// free reports that no wait is parked.
func (m *matcher) free() bool { return m.want == nil }

// note tells a test what happened, if one listens.
func (m *matcher) note(what string) {
	if m.tell != nil {
		m.tell(what)
	}
}

// lend hands a waiter the buffers an earlier call left, so its looks
// allocate nothing.
func (m *matcher) lend() (text, kinds []byte) {
	text, kinds, m.text, m.kinds = m.text, m.kinds, nil, nil
	return text, kinds
}

// keep takes back a waiter's buffers for the next call, unless a flood
// made them large.
func (m *matcher) keep(text, kinds []byte) {
	if cap(text) <= 64<<10 {
		m.text, m.kinds = text[:0], kinds[:0]
	}
}

// park parks w for the reader to look for, and returns the channel that
// wakes the call. The caller has just looked itself and found nothing.
func (m *matcher) park(w *waiter) <-chan struct{} {
	if m.wake == nil {
		m.wake = make(chan struct{}, 1)
	}
	select {
	case <-m.wake: // the token of an earlier park that ended otherwise
	default:
	}
	m.want, m.hit, m.released = w, false, false
	m.note("parked")
	return m.wake
}

// unpark ends a park, whether the reader released it or not, and reports
// whether the reader found the match. Only the parked call calls it.
func (m *matcher) unpark() bool {
	hit := m.hit
	m.want, m.hit, m.released = nil, false, false
	return hit
}

// release wakes the parked call, if any; hit says the reader found its
// match.
func (m *matcher) release(hit bool) {
	if m.want == nil || m.released {
		return
	}
	m.released, m.hit = true, hit
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// look is the reader's look, after it rendered n bytes into st, for the
// parked call's pattern: the look the call would make on waking
// (inSettled), so its state (what was scanned, the echo) stays the call's.
func (m *matcher) look(n int, st *settler) {
	if m.want == nil || m.released {
		return
	}
	switch {
	case n > readerLooks || st.altScreen():
		m.release(false) // the call looks itself: on the screen, or at leisure through a flood
	case m.want.inSettled(st):
		m.release(true)
	default:
		m.note("kept")
	}
}
