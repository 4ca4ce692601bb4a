package agentpty

import (
	"sync"
	"sync/atomic"
	"time"
)

// stateFresh is how long a state read is reused while nothing the library
// can see has happened since: no output read or rendered, no input typed,
// no signal sent and no resize. The program may still change by itself (a
// timer it set, a signal from elsewhere), so the reuse is short: reads that
// follow one another at once (a result's input_hidden after its state, a
// shell's prompt check and its result) share one read of the kernel, while
// a wait's rechecks, which come when time has passed (recheckFirst and
// after), always read it again. A variable for tests.
var stateFresh = recheckFirst / 2

// stateSeen is the last state read from the kernel, and when.
type stateSeen struct {
	gen   atomic.Uint64 // bumped before the library types, signals or resizes
	mu    sync.Mutex    // guards the fields below; a leaf
	ok    bool          // st may be reused ...
	st    TerminalState // ... the state read ...
	stamp stateStamp    // ... with what could change it, as it was when the read began ...
	at    time.Time     // ... at this time
	reads int           // tests: reads of the kernel
}

// stateStamp is what the library sees of the changes that can change a
// state.
type stateStamp struct {
	gen           uint64
	end, settled  int64 // output read, and rendered
	typed         int64 // typing.last
	parses, owing int64 // screen parses, and query answers owed
}

// stamp is the stamp now; taken before a read, so that a change during
// the read makes the read stale, and again after it (settledSince).
func (s *Session) stamp() stateStamp {
	end := s.out.end()
	return stateStamp{gen: s.seen.generation(), end: end, settled: s.out.rendered(), typed: s.typing.typedAt(),
		parses: s.disp.parseCount(), owing: s.disp.owing()}
}

// settledSince reports, of a stamp taken after a state read began at
// before, that nothing the program wrote is on its way: the renderer has
// rendered everything the reader fed, no query waits for its answer (the
// slave's poll would see the answer unread), and no parse of the display,
// which may type an answer, has begun since before.
func (st stateStamp) settledSince(before stateStamp) bool {
	return st.owing == 0 && st.settled == st.end && st.parses == before.parses
}

// reuse returns the state last read if nothing has changed since stamp
// was taken and it is fresh.
func (c *stateSeen) reuse(stamp stateStamp, now time.Time) (TerminalState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || c.stamp != stamp || now.Sub(c.at) >= stateFresh || now.Before(c.at) {
		return TerminalState{}, false
	}
	return c.st, true
}

// keep records a state read that began at now with stamp; a state that
// depends on time (a wait that counts only after a quiet while) is not
// kept.
func (c *stateSeen) keep(st TerminalState, stamp stateStamp, now time.Time, timeless bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if now.Before(c.at) {
		return // a later read was kept first
	}
	c.ok, c.st, c.stamp, c.at = timeless, st, stamp, now
}

// changing says the library is about to change what a state read sees
// (type, signal, resize): no read from before is reused after.
func (c *stateSeen) changing() { c.gen.Add(1) }

// generation counts the changes the library made.
func (c *stateSeen) generation() uint64 { return c.gen.Load() }
