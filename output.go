package agentpty

import (
	"context"
	"sync"
	"sync/atomic"
)

// output is the session's byte pipeline: the ring the reader fills, and
// the hand-off between the reader and the processor that render it.
type output struct {
	// inMu guards the ring, which the reader fills; the renderer copies
	// from it and the screen takes slices of it to read in place. It is
	// held only for those, so the reader never waits behind rendering.
	inMu sync.Mutex
	ring *ring
	// lag is how far rendering or the screen may fall behind the reader
	// before it waits: half a ring. A read (see readMax) then never
	// writes over bytes not yet rendered and parsed, which can therefore
	// be read in place.
	lag     int64
	readMax int // the most the reader takes in one read: at most what the ring holds beyond the lag

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

func newOutput(scrollback int) output {
	lag := scrollback / 2
	return output{ring: newRing(scrollback), lag: int64(lag), readMax: min(16<<10, max(scrollback-lag, 1)), kick: make(chan struct{}, 1), progress: make(chan struct{}, 1),
		readerDone: make(chan struct{}), processDone: make(chan struct{})}
}

// end is the offset one past the newest byte read.
func (o *output) end() int64 {
	o.inMu.Lock()
	defer o.inMu.Unlock()
	return o.ring.end()
}

// start is the offset of the oldest byte the ring still holds.
func (o *output) start() int64 {
	o.inMu.Lock()
	defer o.inMu.Unlock()
	return o.ring.start()
}

// appendRange appends the ring's bytes from off up to to to dst, and
// counts those of them the ring has dropped.
func (o *output) appendRange(dst []byte, off, to int64) ([]byte, int64) {
	o.inMu.Lock()
	defer o.inMu.Unlock()
	return o.ring.appendRange(dst, off, to)
}

// rendered is the ring offset the settled text is rendered up to.
func (o *output) rendered() int64 { return o.settled.Load() }

// renderedTo records that the settled text is rendered up to end, the end
// of a batch that held more than plain text when nonPlain.
func (o *output) renderedTo(end int64, nonPlain bool) {
	if nonPlain {
		o.nonPlainEnd.Store(end)
	}
	o.settled.Store(end)
}

// far reports that off is more than the lag behind end.
func (o *output) far(end, off int64) bool { return end-off > o.lag }

// parser is what store needs of the display: where it has parsed up to.
type parser interface{ parsed() int64 }

// read is the one goroutine that reads term. Each read goes to take,
// which renders the settled text and leaves the screen to the processor,
// so the terminal is drained at the speed of the kernel. drainSeen hears
// that what the program wrote before it exited is read.
func (o *output) read(term Terminal, take func([]byte), drainSeen func()) {
	defer close(o.readerDone)
	// A small buffer until a read fills it: most sessions sit idle, and a
	// flood finds the full size after its first read.
	size := o.readMax
	buf := make([]byte, min(1<<10, size))
	for {
		n, err := term.Read(buf)
		if n > 0 {
			take(buf[:n])
		}
		if n == len(buf) && n < size {
			buf = make([]byte, size)
		}
		switch {
		case err == nil:
		case err == errExitDrained:
			// What the program wrote before it exited is read; a
			// background job may still write.
			drainSeen()
		default:
			drainSeen()
			return
		}
	}
}

// store puts p in the ring, first waiting while rendering or the screen
// (parsed up to screen.parsed()) is over the lag behind, so no byte leaves the
// ring unseen and the program feels the back-pressure as it would from a
// slow terminal. It returns the ring's end. Only the reader calls it.
func (o *output) store(p []byte, screen parser) int64 {
	for o.far(o.ring.end(), min(o.settled.Load(), screen.parsed())) {
		o.wake()
		<-o.progress
	}
	o.inMu.Lock()
	defer o.inMu.Unlock()
	o.ring.write(p)
	return o.ring.end()
}

// renderNew renders with to what is new, when no one else renders: p
// itself, just stored and ending at end, without a copy when nothing is
// left from before. It reports false when the processor is rendering.
func (o *output) renderNew(p []byte, end int64, to func(batch []byte, end int64)) bool {
	if !o.renderMu.TryLock() {
		return false
	}
	if o.settled.Load() == end-int64(len(p)) {
		to(p, end)
	} else {
		o.renderLocked(to) // the processor left some behind
	}
	o.renderMu.Unlock()
	return true
}

// wake tells the processor there is work, without waiting.
func (o *output) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// process renders with to what the reader left to it, and hands the end
// of what it rendered to screen, which feeds the screen when a query
// needs an answer or the screen falls far behind. It runs until the
// reader has stopped and everything is rendered.
func (o *output) process(to func(batch []byte, end int64), screen func(end int64)) {
	defer close(o.processDone)
	for {
		select {
		case <-o.kick:
		case <-o.readerDone:
			o.render(to)
			return
		}
		o.render(to)
		screen(o.end())
		select {
		case o.progress <- struct{}{}:
		default:
		}
	}
}

// awaitProcessed waits for the processor to end, or ctx.
func (o *output) awaitProcessed(ctx context.Context) error {
	select {
	case <-o.processDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// render renders everything new from the ring with to, in batches.
func (o *output) render(to func(batch []byte, end int64)) {
	o.renderMu.Lock()
	defer o.renderMu.Unlock()
	o.renderLocked(to)
}

// renderLocked is render with renderMu held.
func (o *output) renderLocked(to func(batch []byte, end int64)) {
	for {
		var end int64
		o.batch, end = o.copyFrom(o.batch, o.settled.Load())
		if len(o.batch) == 0 {
			break
		}
		to(o.batch, end)
	}
	if cap(o.batch) > 64<<10 {
		o.batch = nil // an idle session keeps no large batch buffer
	}
}

// copyFrom copies the ring's bytes from off into buf, reusing its memory,
// and returns them with the offset they end at. inMu is held only for the
// copy.
func (o *output) copyFrom(buf []byte, off int64) ([]byte, int64) {
	o.inMu.Lock()
	defer o.inMu.Unlock()
	buf, _ = o.ring.appendFrom(buf[:0], off)
	return buf, o.ring.end()
}

// feed stores p in the ring and renders it into the settled text, which
// keeps pace with any terminal; the screen, which may not, is left to the
// processor. When the processor is busy rendering, feed leaves p to it.
func (s *Session) feed(p []byte) {
	end := s.out.store(p, &s.disp)
	if !s.out.renderNew(p, end, s.renderBatch) || s.screenDue(end) {
		s.out.wake()
	}
}

// screenDue reports whether the display must parse what it has not, up
// to ring offset end: a query awaits its answer, or it lags more than the
// reader may run ahead of it (see output.lag).
func (s *Session) screenDue(end int64) bool { return s.disp.behind(end, s.out.lag) }

// drainSeenAt records that the reader has everything the program wrote up
// to now; Wait returns once that much is rendered.
func (s *Session) drainSeenAt() {
	s.sec.flush(s) // nothing more comes to complete a secret held back
	end := s.out.end()
	s.mu.Lock()
	if s.text.sawDrain(end) {
		s.checkDrained()
	}
	s.mu.Unlock()
}

// renderBatch renders the ring's bytes from settled up to end, which are
// batch, into the settled text and wakes the waiters. Call
// with renderMu held.
func (s *Session) renderBatch(batch []byte, end int64) {
	s.mu.Lock()
	ev := s.text.render(batch, end)
	if ev&evQuery != 0 {
		s.disp.queryRendered() // before settled: State never sees the query rendered but not owed
	}
	s.out.renderedTo(end, ev&evNonPlain != 0)
	s.text.wake()
	s.match.look(len(batch), s.text.settler())
	s.checkDrained()
	s.mu.Unlock()
	if s.ev.due(s.m.opts.OnEvent != nil) {
		s.ev.schedule(s.emitOutput)
	}
}

// broadcast wakes every waiter. Call with mu held.
func (s *Session) broadcast() {
	s.text.wake()
	s.match.release(false)
}

// take is the reader's way in: p goes to feed, masked when the session has
// secrets (secrets.pass).
func (s *Session) take(p []byte) {
	if !s.sec.pass(p, s) {
		s.feed(p)
	}
	if s.m.opts.OnEvent != nil {
		noteHidden(s, terminalEchoOff(s.term))
	}
}

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
