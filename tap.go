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
	s     *Session
	emit  func(kind byte, p []byte) error // 'o' output, 'r' resize ("COLSxROWS"), 'i' input, 'm' a run's command
	input bool                            // wants 'i' marks

	off   int64     // ring offset delivered up to; the tap's goroutine owns it once running
	marks []tapMark // guarded by Session.mu
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

func newTap(s *Session, input bool, emit func(kind byte, p []byte) error) *tap {
	return &tap{s: s, emit: emit, input: input, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// startTap registers t where the screen has parsed up to, and returns the
// bytes that redraw the screen as it is there, and its size: what t
// delivers next continues from exactly that screen.
func (s *Session) startTap(t *tap, op string) (redraw []byte, cols, rows int, err error) {
	s.readScreen(time.Time{}, func(d *display) {
		s.mu.Lock()
		over := s.text.drained
		s.mu.Unlock()
		if over || s.rep.isStopped() {
			st, _ := s.ended()
			err = errorf(ErrExited, "%s: %s: the program has exited (%s)", s.id, op, st)
			return
		}
		redraw, cols, rows, t.off = d.redraw()
		s.mu.Lock()
		s.taps = append(s.taps, t)
		s.mu.Unlock()
	})
	return redraw, cols, rows, err
}

// stopTap asks t to deliver what is rendered and end.
func (t *tap) stopTap() { t.halt.Do(func() { close(t.stop) }) }

// run delivers the output and the marks in order until the session's
// output is complete, the tap is stopped, or emit fails.
func (t *tap) run() {
	s := t.s
	defer close(t.done)
	defer s.dropTap(t)
	stopping := false
	for {
		s.mu.Lock()
		ch := s.changes()
		end := s.out.settled.Load()
		marks := t.marks
		t.marks = nil
		over := s.text.drained
		s.mu.Unlock()
		for _, mk := range marks {
			if t.err = t.deliver(mk.off); t.err == nil {
				t.err = t.emit(mk.kind, mk.data)
			}
			if t.err != nil {
				return
			}
		}
		if t.err = t.deliver(end); t.err != nil || over || stopping {
			return
		}
		select {
		case <-ch:
		case <-t.wake:
		case <-t.stop:
			stopping = true
		}
	}
}

// deliver emits the output from t.off up to ring offset end.
func (t *tap) deliver(end int64) error {
	s := t.s
	if end <= t.off {
		return nil
	}
	s.out.inMu.Lock()
	var lost int64
	t.buf, lost = s.out.ring.appendRange(t.buf[:0], t.off, end)
	s.out.inMu.Unlock()
	if lost > 0 {
		return t.resync()
	}
	t.off += int64(len(t.buf))
	err := t.emit('o', t.buf)
	if cap(t.buf) > 64<<10 {
		t.buf = nil
	}
	return err
}

// resync redraws the screen for a tap the ring has left behind.
func (t *tap) resync() error {
	s := t.s
	var redraw []byte
	s.readScreen(time.Time{}, func(d *display) { redraw, _, _, t.off = d.redraw() })
	return t.emit('o', redraw)
}

// dropTap forgets t.
func (s *Session) dropTap(t *tap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taps = slices.DeleteFunc(s.taps, func(have *tap) bool { return have == t })
}

// mark queues a resize or an input for every tap that wants it. Call with
// mu held.
func (s *Session) mark(mk tapMark) {
	for _, t := range s.taps {
		if (mk.kind == 'i' || mk.kind == 'm') && !t.input || len(t.marks) >= maxMarks {
			continue
		}
		t.marks = append(t.marks, mk)
		t.poke()
	}
}

// poke wakes t for its marks.
func (t *tap) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// tapResize tells the taps the terminal is now cols×rows. Call with
// the display held, so the place is where it has parsed up to.
func (s *Session) tapResize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.taps) > 0 {
		s.mark(tapMark{off: s.disp.parsed(), kind: 'r', data: []byte(strconv.Itoa(cols) + "x" + strconv.Itoa(rows))})
	}
}

// tapInput tells the taps that want input what is being typed. Input typed
// while echo is off is a password and is not passed on; secrets given to
// WriteSecret are masked wherever they appear.
func (s *Session) tapInput(p []byte) { s.tapInputMark('i', p) }

// tapInputMark queues p as a mark of kind for the taps that want input, as
// tapInput says.
func (s *Session) tapInputMark(kind byte, p []byte) {
	s.mu.Lock()
	any := false
	for _, t := range s.taps {
		any = any || t.input
	}
	s.mu.Unlock()
	if !any || s.echoOff() {
		return
	}
	data := s.maskInput(append([]byte(nil), p...))
	off := s.out.end()
	s.mu.Lock()
	s.mark(tapMark{off: off, kind: kind, data: data})
	s.mu.Unlock()
}

// endAround ends what was built around a killed session: the taps deliver
// the rest and end (waited for at most KillGrace, or until ctx ends: a
// writer blocked for good is left behind), and the secrets are wiped.
func (s *Session) endAround(ctx context.Context) {
	s.mu.Lock()
	taps := append([]*tap(nil), s.taps...)
	s.mu.Unlock()
	if len(taps) > 0 {
		bound, cancel := context.WithTimeout(ctx, s.m.opts.KillGrace)
		defer cancel()
		for _, t := range taps {
			t.stopTap()
			select {
			case <-t.done:
			case <-bound.Done():
			}
		}
	}
	s.wipeSecrets()
}
