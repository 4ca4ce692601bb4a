package agentpty

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A tap follows the session's output from a place in it on, in a goroutine
// of its own, for a recording or a person attached. It reads the ring at
// its own pace: the reader never waits for a tap, so a slow writer cannot
// stall the session. A tap that falls a whole ring behind
// (Options.ScrollbackBytes) skips to the screen as it is then, redrawn, so
// what it shows ends right. It holds no more than the ring does, plus at
// most maxMarks resizes and inputs not yet delivered.
type tap struct {
	emit  func(kind byte, p []byte) error // 'o' output, 'r' resize ("COLSxROWS"), 'i' input, 'm' a run's command
	input bool                            // wants 'i' marks

	off   int64 // ring offset delivered up to; the tap's goroutine owns it once running
	mu    sync.Mutex
	marks []tapMark // guarded by mu
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{} // closed when the goroutine ends; err says why
	err   error
	halt  sync.Once
	buf   []byte
}

// tapMark is a resize or an input, at the ring offset it happened at.
type tapMark struct {
	off  int64
	kind byte
	data []byte
}

const maxMarks = 1024

func newTap(input bool, emit func(kind byte, p []byte) error) *tap {
	return &tap{emit: emit, input: input, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// tapSet is the part of a session that keeps its taps (recordings and
// people attached) and the order in which attached people type. Its
// mutex is a leaf, and so is each tap's, taken under it.
type tapSet struct {
	mu       sync.Mutex
	taps     []*tap        // recordings and attachments following the output
	keyboard []*attachment // attached people, oldest first; the first one types
}

// add makes t follow the output.
func (ts *tapSet) add(t *tap) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.taps = append(ts.taps, t)
}

// drop forgets t.
func (ts *tapSet) drop(t *tap) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.taps = slices.DeleteFunc(ts.taps, func(have *tap) bool { return have == t })
}

// mark queues a resize or an input for every tap that wants it.
func (ts *tapSet) mark(mk tapMark) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.taps {
		if (mk.kind == 'i' || mk.kind == 'm') && !t.wantsInput() {
			continue
		}
		t.queue(mk)
	}
}

// resize tells the taps the terminal is now cols×rows, at ring offset
// off: where the screen has parsed up to.
func (ts *tapSet) resize(off int64, cols, rows int) {
	ts.mark(tapMark{off: off, kind: 'r', data: []byte(strconv.Itoa(cols) + "x" + strconv.Itoa(rows))})
}

// wantInput reports whether a tap wants what is typed.
func (ts *tapSet) wantInput() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.ContainsFunc(ts.taps, (*tap).wantsInput)
}

// end has every tap deliver the rest and end, waiting for each at most
// grace in all, or until ctx ends: a writer blocked for good is left
// behind.
func (ts *tapSet) end(ctx context.Context, grace time.Duration) {
	ts.mu.Lock()
	taps := slices.Clone(ts.taps)
	ts.mu.Unlock()
	if len(taps) == 0 {
		return
	}
	bound, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	for _, t := range taps {
		_ = t.stopWait(bound)
	}
}

// join puts a person attached last in line for the keyboard.
func (ts *tapSet) join(a *attachment) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.keyboard = append(ts.keyboard, a)
}

// leave takes a person who detached out of the line.
func (ts *tapSet) leave(a *attachment) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.keyboard = slices.DeleteFunc(ts.keyboard, func(have *attachment) bool { return have == a })
}

// typist is the attached person whose keys are typed.
func (ts *tapSet) typist() *attachment {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.keyboard) == 0 {
		return nil
	}
	return ts.keyboard[0]
}

// startTap registers t where the screen has parsed up to, and returns the
// bytes that redraw the screen as it is there, and its size: what t
// delivers next continues from exactly that screen.
func startTap(s *Session, t *tap, op string) (redraw []byte, cols, rows int, err error) {
	s.readScreen(time.Time{}, func(d *display) {
		s.mu.Lock()
		over := s.text.complete()
		s.mu.Unlock()
		if over || s.rep.isStopped() {
			st, _ := s.ended()
			err = errorf(ErrExited, "%s: %s: the program has exited (%s)", s.id, op, st)
			return
		}
		var off int64
		redraw, cols, rows, off = d.redraw()
		t.startAt(off)
		s.taps.add(t)
	})
	return redraw, cols, rows, err
}

// stopTap asks t to deliver what is rendered and end.
func (t *tap) stopTap() { t.halt.Do(func() { close(t.stop) }) }

// stopWait asks t to end, as stopTap, and waits until it has, or until
// ctx ends: then it returns ctx's error.
func (t *tap) stopWait(ctx context.Context) error {
	t.stopTap()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ended is closed when t's goroutine has ended; failure then says why.
func (t *tap) ended() <-chan struct{} { return t.done }

// failure is the error of emit that ended t, or nil; read it once ended
// is closed.
func (t *tap) failure() error { return t.err }

// wantsInput reports whether t delivers what is typed ('i', 'm' marks).
func (t *tap) wantsInput() bool { return t.input }

// startAt sets the ring offset t delivers from, before it runs.
func (t *tap) startAt(off int64) { t.off = off }

// queue adds mk to what t delivers, up to maxMarks, and wakes t.
func (t *tap) queue(mk tapMark) {
	t.mu.Lock()
	if len(t.marks) < maxMarks {
		t.marks = append(t.marks, mk)
	}
	t.mu.Unlock()
	t.poke()
}

// takeMarks returns the marks queued so far and forgets them.
func (t *tap) takeMarks() []tapMark {
	t.mu.Lock()
	defer t.mu.Unlock()
	marks := t.marks
	t.marks = nil
	return marks
}

// runTap delivers t's output and marks in order until s's output is
// complete, t is stopped, or emit fails; then t is dropped and ends.
func runTap(s *Session, t *tap) {
	err := followTap(s, t)
	s.taps.drop(t)
	t.finish(err)
}

// followTap is runTap's loop; it returns emit's error.
func followTap(s *Session, t *tap) error {
	stopping := false
	for {
		s.mu.Lock()
		ch := s.text.changes()
		end := s.out.rendered()
		over := s.text.complete()
		s.mu.Unlock()
		for _, mk := range t.takeMarks() {
			if err := deliverTap(s, t, mk.off); err != nil {
				return err
			}
			if err := t.send(mk); err != nil {
				return err
			}
		}
		if err := deliverTap(s, t, end); err != nil || over || stopping {
			return err
		}
		stopping = t.await(ch)
	}
}

// deliverTap emits s's output up to ring offset end to t, or the screen
// redrawn when the ring has left t behind.
func deliverTap(s *Session, t *tap, end int64) error {
	lost, err := t.deliver(end, &s.out)
	if !lost {
		return err
	}
	var redraw []byte
	var off int64
	s.readScreen(time.Time{}, func(d *display) { redraw, _, _, off = d.redraw() })
	return t.redrawn(redraw, off)
}

// deliver emits the output from t.off up to ring offset end, read from
// out. When the ring has dropped some of it, it emits nothing and reports
// lost: t is to be redrawn.
func (t *tap) deliver(end int64, out *output) (lost bool, err error) {
	if end <= t.off {
		return false, nil
	}
	var dropped int64
	t.buf, dropped = out.appendRange(t.buf[:0], t.off, end)
	if dropped > 0 {
		return true, nil
	}
	t.off += int64(len(t.buf))
	err = t.emit('o', t.buf)
	if cap(t.buf) > 64<<10 {
		t.buf = nil
	}
	return false, err
}

// send emits mk.
func (t *tap) send(mk tapMark) error { return t.emit(mk.kind, mk.data) }

// redrawn emits redraw, the screen as it is at ring offset off, and goes
// on from there.
func (t *tap) redrawn(redraw []byte, off int64) error {
	t.off = off
	return t.emit('o', redraw)
}

// await waits until ch is closed, a mark comes or t is stopped; it
// reports a stop.
func (t *tap) await(ch <-chan struct{}) (stopped bool) {
	select {
	case <-ch:
	case <-t.wake:
	case <-t.stop:
		return true
	}
	return false
}

// finish records why t ended and says it has.
func (t *tap) finish(err error) {
	t.err = err
	close(t.done)
}

// poke wakes t for its marks.
func (t *tap) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// tapInput tells the taps that want input what is being typed, as a
// mark of kind ('i' typed, 'm' a run's command). Input typed while echo is
// off is a password and is not passed on; secrets given to WriteSecret
// are masked wherever they appear.
func tapInput(s *Session, kind byte, p []byte) {
	if !s.taps.wantInput() || terminalEchoOff(s.term) {
		return
	}
	data := s.sec.maskInput(append([]byte(nil), p...))
	s.taps.mark(tapMark{off: s.out.end(), kind: kind, data: data})
}
