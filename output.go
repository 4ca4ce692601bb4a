package agentpty

import (
	"sync"
	"sync/atomic"
	"time"
)

// output is the session's byte pipeline: the ring the reader fills, and
// the hand-off between the reader and the processor that render it.
type output struct {
	// inMu guards the ring, which the reader fills; the renderer copies
	// from it and the screen takes slices of it to read in place. It is
	// held only for those, so the reader never waits behind rendering.
	inMu sync.Mutex
	ring *ring

	renderMu    sync.Mutex    // one renderer at a time: the reader, or the processor when the reader found it busy
	batch       []byte        // the renderer's copy of what it renders next, when not the read itself; under renderMu
	kick        chan struct{} // the reader tells the processor there is work (1-buffered)
	progress    chan struct{} // the processor tells a throttled reader it did some (1-buffered)
	readerDone  chan struct{}
	processDone chan struct{}

	settled atomic.Int64 // ring offset the settler has rendered up to; written under Session.mu
	// nonPlainEnd is the end of the last rendered batch that held more than
	// plain text; the screen may skip plain text after it without a scan.
	nonPlainEnd atomic.Int64
}

// end is the offset one past the newest byte read.
func (o *output) end() int64 {
	o.inMu.Lock()
	defer o.inMu.Unlock()
	return o.ring.end()
}

func newOutput(scrollback int) output {
	return output{ring: newRing(scrollback), kick: make(chan struct{}, 1), progress: make(chan struct{}, 1),
		readerDone: make(chan struct{}), processDone: make(chan struct{})}
}

// read is the one goroutine that reads the terminal. Each read goes to
// feed, which renders the settled text and leaves the screen to the
// processor, so the terminal is drained at the speed of the kernel.
func (s *Session) read() {
	defer close(s.out.readerDone)
	// A small buffer until a read fills it: most sessions sit idle, and a
	// flood finds the full size after its first read.
	size := s.readSize()
	buf := make([]byte, min(1<<10, size))
	for {
		n, err := s.term.Read(buf)
		if n > 0 {
			s.take(buf[:n])
		}
		if n == len(buf) && n < size {
			buf = make([]byte, size)
		}
		switch {
		case err == nil:
		case err == errExitDrained:
			// What the program wrote before it exited is read; a
			// background job may still write.
			s.drainSeenAt()
		default:
			s.drainSeenAt()
			return
		}
	}
}

// feed stores p in the ring and renders it into the settled text, which
// keeps pace with any terminal; the screen, which may not, is left to the
// processor. When the processor is busy rendering, feed leaves p to it.
// When rendering or the screen falls half a ring behind, the reader waits,
// so no byte leaves the ring unseen and the program feels the
// back-pressure as it would from a slow terminal.
func (s *Session) feed(p []byte) {
	limit := s.lag()
	for s.out.ring.end()-min(s.out.settled.Load(), s.disp.parsed()) > limit {
		s.kickProcessor()
		<-s.out.progress
	}
	s.out.inMu.Lock()
	s.out.ring.write(p)
	end := s.out.ring.end()
	s.out.inMu.Unlock()
	if s.out.renderMu.TryLock() {
		if s.out.settled.Load() == end-int64(len(p)) {
			s.renderBatch(p, end) // p is all that is new: no copy
		} else {
			s.renderLocked() // the processor left some behind
		}
		s.out.renderMu.Unlock()
	} else {
		s.kickProcessor()
	}
	if s.screenDue(end) {
		s.kickProcessor()
	}
}

// lag is how far rendering or the screen may fall behind the reader
// before it waits: half a ring. A read (see readSize) then never writes
// over bytes not yet rendered and parsed, which can therefore be read in
// place.
func (s *Session) lag() int64 { return int64(s.m.opts.ScrollbackBytes / 2) }

// readSize is the most the reader takes in one read: at most what the ring
// holds beyond the lag.
func (s *Session) readSize() int {
	return min(16<<10, max(s.m.opts.ScrollbackBytes-int(s.lag()), 1))
}

// kickProcessor tells the processor there is work, without waiting.
func (s *Session) kickProcessor() {
	select {
	case s.out.kick <- struct{}{}:
	default:
	}
}

// drainSeenAt records that the reader has everything the program wrote up
// to now; Wait returns once that much is rendered.
func (s *Session) drainSeenAt() {
	s.flushMask() // nothing more comes to complete a secret held back
	end := s.out.end()
	s.mu.Lock()
	if !s.text.drainSeen {
		s.text.drainSeen, s.text.drainOff = true, end
		s.checkDrained()
	}
	s.mu.Unlock()
}

// process renders what the reader left to it, and feeds the screen when a
// query needs an answer or the screen falls far behind. It runs until the
// reader has stopped and everything is rendered.
func (s *Session) process() {
	defer close(s.out.processDone)
	for {
		select {
		case <-s.out.kick:
		case <-s.out.readerDone:
			s.render()
			return
		}
		s.render()
		end := s.out.end()
		if s.screenDue(end) {
			// In slices, letting go of the display between them, so a
			// call that needs it waits for one slice at most, whatever
			// the program prints.
			for !s.readScreen(time.Now().Add(processorSlice), nil) && !s.typing.dying.Load() {
			}
		}
		select {
		case s.out.progress <- struct{}{}:
		default:
		}
	}
}

// screenDue reports whether the screen must parse what it has not, up to
// ring offset end: a query awaits its answer, or the ring would soon drop
// bytes it never saw.
func (s *Session) screenDue(end int64) bool {
	return s.disp.behind(end, s.lag())
}

// render takes everything new from the ring in batches.
func (s *Session) render() {
	s.out.renderMu.Lock()
	defer s.out.renderMu.Unlock()
	s.renderLocked()
}

// renderLocked is render with renderMu held.
func (s *Session) renderLocked() {
	for {
		var end int64
		s.out.batch, end = s.copyFrom(s.out.batch, s.out.settled.Load())
		if len(s.out.batch) == 0 {
			break
		}
		s.renderBatch(s.out.batch, end)
	}
	if cap(s.out.batch) > 64<<10 {
		s.out.batch = nil // an idle session keeps no large batch buffer
	}
}

// renderBatch renders the ring's bytes from settled up to end, which are
// batch, into the settled text and wakes the waiters. Call
// with renderMu held.
func (s *Session) renderBatch(batch []byte, end int64) {
	s.mu.Lock()
	ev := s.text.settle.write(batch)
	if ev&evNonPlain != 0 {
		s.out.nonPlainEnd.Store(end)
	}
	if ev&evSyncEnd != 0 {
		s.text.frameEnd = end
	}
	if ev&evQuery != 0 {
		s.disp.queryRendered() // before settled: State never sees the query rendered but not owed
	}
	s.out.settled.Store(end)
	s.text.lastOutput = time.Now()
	s.wakeChanged()
	s.match.look(len(batch), s.text.settle)
	s.checkDrained()
	s.mu.Unlock()
	s.outputChanged()
}

// copyFrom copies the ring's bytes from off into buf, reusing its memory,
// and returns them with the offset they end at. inMu is held only for the
// copy.
func (s *Session) copyFrom(buf []byte, off int64) ([]byte, int64) {
	s.out.inMu.Lock()
	defer s.out.inMu.Unlock()
	buf, _ = s.out.ring.appendFrom(buf[:0], off)
	return buf, s.out.ring.end()
}

// broadcast wakes every waiter. Call with mu held.
func (s *Session) broadcast() {
	s.wakeChanged()
	s.match.release(false)
}

// wakeChanged wakes the waiters on changes: all but a call parked on its
// pattern. Call with mu held.
func (s *Session) wakeChanged() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// changes returns the channel the next broadcast closes, made only when
// someone waits, so rendering with no waiter allocates nothing. Call with mu
// held.
func (s *Session) changes() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// --- added by parts-screen ---

// unparsed returns the ring's bytes from off on (less where the ring has
// dropped them), which the display has not parsed, where the ring ends,
// and how many of them from their start the settler found plain text. The
// display reads the ring in place: the reader does not write over bytes
// it has not parsed (see feed), so only taking the slices needs inMu.
func (o *output) unparsed(off int64) (a, b []byte, end, plain int64) {
	o.inMu.Lock()
	a, b, _ = o.ring.slices(off)
	end = o.ring.end()
	o.inMu.Unlock()
	from := end - int64(len(a)+len(b))
	// settled before nonPlainEnd: the renderer stores them the other way
	// round, so a batch counted as settled here has its flag seen too.
	settled := o.settled.Load()
	if from >= o.nonPlainEnd.Load() {
		plain = max(min(settled, end)-from, 0)
	}
	return a, b, end, plain
}
