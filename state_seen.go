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

// State reports what the terminal's foreground program is doing now.
// "waiting_input" holds only while no output is in flight: the program is
// blocked on the terminal, nothing it wrote is unread on the master, and
// all of it has been rendered. A program that also waits on something
// else, or with a timeout that is about to run out, waits for input only
// once the terminal has been quiet a while (see waitQuiet). A read less
// than 250 µs after the last, with no output, input, signal or resize in
// between, returns the last read's answer (state_seen.go).
func (s *Session) State() TerminalState {
	if _, exited := s.ended(); exited {
		return TerminalState{State: StateExited}
	}
	sr, ok := s.term.(StateReader)
	if !ok {
		return TerminalState{State: StateRunning} // the terminal cannot tell more
	}
	stamp, now := s.stamp(), time.Now()
	if st, ok := s.seen.reuse(stamp, now); ok {
		return st // nothing has happened since the last read (state_seen.go)
	}
	// The processes first, then the output: what a program wrote before it
	// blocked is then either still in the master or already read. An
	// answer to a query typed after the processes were looked at wakes the
	// program: a parse of the display begun since then counts as one.
	fg := sr.Foreground()
	hidden := sr.EchoOff() // after: a remote terminal's one probe answers both
	st := TerminalState{State: StateRunning, Foreground: fg.Name, InputHidden: hidden}
	waiting := fg.Waiting && !fg.Unread && !sr.OutputPending()
	if waiting {
		after := s.stamp()
		waiting = after.settledSince(stamp)
		if waiting && fg.Quiet > 0 {
			// A program that waits on more than the terminal, or with a
			// timeout, may still print without input until output and
			// input have paused this long.
			s.mu.Lock()
			last := s.text.lastOutput()
			s.mu.Unlock()
			if in := time.Unix(0, after.typed); in.After(last) {
				last = in
			}
			waiting = time.Since(last) >= fg.Quiet
		}
	}
	if waiting {
		st.State, st.Guessed = StateWaitingInput, fg.Guessed
	}
	s.seen.keep(st, stamp, now, fg.Quiet <= 0)
	return st
}
