package agentpty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"
)

// Waits on full-screen programs and patterns.
const (
	frameQuiet = 50 * time.Millisecond  // a full-screen program that drew nothing for this long has finished its frame
	syncQuiet  = 300 * time.Millisecond // ... or this long inside a synchronized update it never ended
	frameMax   = time.Second            // the longest wait for a frame: some programs never stop drawing
	regexBack  = 8                      // lines of old text before the new in which a pattern's match may start
)

// waitSpec is what a call waits for: a literal or an RE2 pattern, and the
// input the call typed, whose echo never counts as a match.
type waitSpec struct {
	lit      string
	litb     []byte
	re       *regexp.Regexp
	echo     []echoPiece // the runs of text the call typed, in order
	echoLine int         // the settled line the cursor was on when it typed them

	text, kinds []byte // the text last looked in, kept for its memory
	scanned     bool   // the settled text was looked in ...
	hit         bool   // ... and a match found; after none, only what changed since needs another look
	screenSeen  bool   // the screen was looked in, and found no match ...
	screenAt    int64  // ... when it had parsed the ring up to here
}

// newWaitSpec checks a call's wait_for and wait_for_regex; who names the
// call in errors ("pty-write pty-3"). Neither gives nil: no match to wait for.
func newWaitSpec(who, lit, pattern string) (*waitSpec, error) {
	switch {
	case lit != "" && pattern != "":
		return nil, errorf(ErrInvalid, "%s: give wait_for or wait_for_regex, not both", who)
	case pattern != "":
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, errorf(ErrInvalid, "%s: wait_for_regex %q is not an RE2 pattern: %v", who, pattern, err)
		}
		return &waitSpec{re: re}, nil
	case lit != "":
		return literalWait(lit), nil
	}
	return nil, nil
}

// literalWait waits for lit.
func literalWait(lit string) *waitSpec { return &waitSpec{lit: lit, litb: []byte(lit)} }

// typed records that the call is about to type input, so that its echo
// does not count. Call with mu held.
func (w *waitSpec) typed(s *settler, input []byte) {
	w.echo = echoPieces(input)
	w.echoLine = s.cur
}

// inSettled reports whether w matches the new settled text in a way that
// counts: not wholly in text an earlier read returned, and not in the echo
// of what the call typed.
func (w *waitSpec) inSettled(st *settler) bool {
	back := regexBack
	if w.re == nil {
		back = bytes.Count(w.litb, []byte("\n"))
		// The incremental scan finds every one-line occurrence not wholly
		// old; only one that may be echo needs the closer look.
		if back == 0 {
			if !st.match(w.lit) {
				return false
			}
			if len(w.echo) == 0 {
				return true
			}
		}
	}
	first := st.firstTouched()
	if first < 0 {
		return false
	}
	start := first - back
	if len(w.echo) == 0 {
		// After a look that found nothing, a new match holds a line changed
		// since, so floods are scanned once; the echo's runs are looked for
		// from their start.
		changed := st.takeChanges()
		if w.scanned && !w.hit {
			if changed == settleNone {
				return false
			}
			start = max(start, changed-back)
		}
		w.scanned = true
	}
	var echoFrom int
	w.text, w.kinds, echoFrom = st.region(w.text[:0], w.kinds[:0], start, w.echoLine, w.re == nil)
	markEcho(w.text, w.kinds, echoFrom, w.echo)
	w.hit = findCounted(w.text, w.kinds, w.litb, w.re)
	return w.hit
}

// screenMatch reports whether w matches the screen of a full-screen
// program in a way that counts. The screen parses what it has not seen
// until the call's deadline at most: a flood must not stretch the wait.
func (s *Session) screenMatch(w *waitSpec, deadline time.Time) bool {
	s.disp.mu.Lock()
	defer s.disp.mu.Unlock()
	s.syncScreenBy(deadline)
	off := s.disp.screenOff.Load()
	if w.screenSeen && off == w.screenAt || time.Now().After(deadline) {
		return false // the screen has not changed since the last look, or the wait is over
	}
	w.screenSeen, w.screenAt = true, off
	return w.inScreen(s.disp.screen.Lines(), s.disp.shown)
}

// inScreen reports whether w matches a screen's rows in a way that counts:
// holding text of a row that differs from shown, the rows the last read
// returned, and not in the echo of what the call typed (a program's prompt
// line); the program's own drawing counts.
func (w *waitSpec) inScreen(rows, shown []string) bool {
	text, kinds := w.text[:0], w.kinds[:0]
	for y, l := range rows {
		if y > 0 {
			text, kinds = append(text, '\n'), append(kinds, byteOld) // the rows are never new
		}
		k := byteOld
		if y < len(shown) && l != shown[y] || y >= len(shown) && l != "" {
			k = byteNew
		}
		text, kinds = append(text, l...), appendKinds(kinds, k, len(l))
	}
	w.text, w.kinds = text, kinds
	markEcho(text, kinds, 0, w.echo)
	return findCounted(text, kinds, w.litb, w.re)
}

// awaitFrame waits, while a full-screen program shows, until it has
// finished drawing: its synchronized update (mode 2026) has ended, or it
// has drawn nothing for frameQuiet. The deadline and frameMax bound it, and
// exit ends it. Only the reader wakes it.
func (s *Session) awaitFrame(ctx context.Context, deadline time.Time) error {
	// Most results show no full screen: the timers and the channel are
	// made only once there is a frame to wait for.
	limit := time.Now().Add(min(time.Until(deadline), frameMax))
	var timer, pause *time.Timer
	defer func() {
		for _, t := range []*time.Timer{timer, pause} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	for {
		s.mu.Lock()
		alt, drained := s.text.settler().altScreen(), s.text.complete()
		var ch <-chan struct{}
		if alt && !drained {
			ch = s.text.changes()
		}
		syncing := s.text.settler().syncing
		ended := s.text.endsFrame(s.out.rendered()) // the last output ended an update
		since := time.Since(s.text.lastOutput())
		s.mu.Unlock()
		quiet := frameQuiet
		if syncing {
			quiet = syncQuiet
		}
		// The end conditions of a frame. Where the kernel can tell that the
		// program blocks reading the terminal again, that is one more.
		if !alt || drained || ended || since >= quiet {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(limit))
		}
		if pause == nil {
			pause = time.NewTimer(quiet - since)
		} else {
			pause.Reset(quiet - since)
		}
		select {
		case <-ch:
		case <-pause.C:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
}

// turn waits until the calls on the session that arrived before this one
// have returned, and returns the func that lets the next one go. The
// turn is also when the call's WithEvents function hears the session's
// output events, whichever way the call waits.
func (s *Session) turn(ctx context.Context, tool string) (func(), error) {
	if err := s.lane.enter(ctx); err != nil {
		return nil, fmt.Errorf("agentpty: %s %s: waiting for the call before it: %w", tool, s.id, err)
	}
	unwatch, due := s.ev.watch(ctx, s.m, tool == ToolStart, s.Tail)
	if due {
		s.ev.schedule(s.emitOutput)
	}
	return func() {
		unwatch()
		s.lane.leave()
	}, nil
}

// lane runs a session's calls one at a time, in the order they arrived: a
// call that finds it busy queues, and leaving hands it to the first in the
// queue.
type lane struct {
	mu     sync.Mutex // guards the fields below; nothing else is taken under it
	busy   bool
	queue  []chan struct{} // closed to hand the lane to that call
	queued func()          // tests: told, outside mu, each time a call queues
}

// enter takes the lane, waiting for the calls queued before this one, or
// gives up when ctx ends.
func (l *lane) enter(ctx context.Context) error {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.queue = append(l.queue, ch)
	queued := l.queued
	l.mu.Unlock()
	if queued != nil {
		queued()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, c := range l.queue {
		if c == ch {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			l.mu.Unlock()
			return ctx.Err()
		}
	}
	l.mu.Unlock()
	l.leave() // handed the lane as ctx ended: pass it on
	return ctx.Err()
}

// leave hands the lane to the first queued call, or frees it.
func (l *lane) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.busy = false
		return
	}
	close(l.queue[0])
	l.queue = l.queue[1:]
}

// waitLimit turns the request's wait into a duration.
func waitLimit(want *waitSpec, waitMS *int) time.Duration {
	d := defaultWait
	switch {
	case waitMS != nil:
		d = time.Duration(*waitMS) * time.Millisecond
	case want != nil:
		d = defaultWaitFor
	}
	return min(d, maxWait)
}

// write types input, then waits and collects as pty-write does.
func (s *Session) write(ctx context.Context, input []byte, want *waitSpec, waitMS *int, v callView) (WriteResult, error) {
	defer s.clock.use()() // a long wait is use, not idleness
	leave, err := s.turn(ctx, ToolWrite)
	if err != nil {
		return WriteResult{}, err
	}
	defer leave()
	return s.writeInTurn(ctx, input, want, waitMS, v)
}

// writeInTurn is write once the call has its turn.
func (s *Session) writeInTurn(ctx context.Context, input []byte, want *waitSpec, waitMS *int, v callView) (WriteResult, error) {
	if err := checkInputWait(s.term, s.id, ToolWrite, v.waitUntil); err != nil {
		return WriteResult{}, err
	}
	st, exited := s.ended()
	if exited && len(input) > 0 {
		return WriteResult{}, errorf(ErrExited, "%s %s: the program has exited (%s); write no input to read what is left, or kill it", ToolWrite, s.id, st)
	}
	before, err := s.beforeTyping(v)
	if err != nil {
		return WriteResult{}, err
	}
	deadline := time.Now().Add(untilLimit(want, waitMS, v.waitUntil))
	if len(input) > 0 && want != nil && !v.secret {
		s.mu.Lock()
		want.typed(s.text.settler(), input)
		s.mu.Unlock()
	}
	ends := shellEnds(s)
	if len(input) > 0 {
		// Even a call that will not wait for output gets a moment to type.
		typing := deadline
		if least := time.Now().Add(minTyping); typing.Before(least) {
			typing = least
		}
		if n, err := s.typeInput(ctx, input, typing); err != nil {
			why := ""
			switch {
			case ctx.Err() != nil:
				err = ctx.Err()
			case errors.Is(err, os.ErrDeadlineExceeded):
				why = " before the wait ran out; the program is not reading its input"
			}
			return WriteResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes%s: %w", ToolWrite, s.id, n, len(input), why, err)
		}
	}
	w, err := s.waitUntil(ctx, want, deadline, false, modeOf(v.waitUntil, v.settle), v.peek)
	if err != nil {
		return WriteResult{}, err
	}
	s.applyScreen(v.screen, before, v.peek, &w)
	res := s.writeResult(w)
	if code, ok := shellEnded(s, ends); ok && !w.exited {
		res.PromptAfter, res.ExitCode = true, &code
	}
	return res, nil
}

// wait is start's wait: as write's, but with neither wait_for nor wait_ms
// it returns once output has appeared and paused.
func (s *Session) wait(ctx context.Context, want *waitSpec, waitMS *int, waitUntil string, settle time.Duration) (waitResult, error) {
	defer s.clock.use()() // the idle clock starts when start returns
	leave, err := s.turn(ctx, ToolStart)
	if err != nil {
		return waitResult{}, err
	}
	defer leave()
	if err := checkInputWait(s.term, s.id, ToolStart, waitUntil); err != nil {
		return waitResult{}, err
	}
	quiet := want == nil && waitMS == nil && waitUntil == ""
	return s.waitUntil(ctx, want, time.Now().Add(untilLimit(want, waitMS, waitUntil)), quiet, modeOf(waitUntil, settle), false)
}

// waitUntil waits as await does (awaitInput or awaitSettled as until
// asks) and, on a full screen, for the frame to be finished, then collects
// the result, with the state taken before the output (the one that ended
// an input wait); a peek consumes nothing.
func (s *Session) waitUntil(ctx context.Context, want *waitSpec, deadline time.Time, quiet bool, until untilMode, peek bool) (waitResult, error) {
	var matched bool
	var err error
	var st TerminalState
	var waited string // set by a settled wait only
	switch {
	case until.settle > 0:
		waited, err = s.awaitSettled(ctx, want, deadline, until.settle)
		matched = waited == WaitedMatch
	case until.input:
		matched, st, err = s.awaitInput(ctx, want, deadline)
	default:
		matched, err = s.await(ctx, want, deadline, quiet)
	}
	if err == nil {
		err = s.awaitFrame(ctx, deadline)
	}
	if err != nil {
		return waitResult{}, err
	}
	paused := quiet && !matched && time.Now().Before(deadline) // await's pause ended it, not the deadline
	if st.State != StateWaitingInput {
		st = s.State()
	}
	w := s.collect(matched, peek)
	w.state = resultState(st, w.exited)
	if waited == "" {
		waited = waitedHow(matched, w.exited, until.input, paused, w.state)
	}
	w.waited = waited
	return w, nil
}

// await blocks until want matches new output, the child exits, the
// deadline passes, or (quiet) output has appeared and paused. It reads
// nothing. Only the reader wakes it: nothing polls.
func (s *Session) await(ctx context.Context, want *waitSpec, deadline time.Time, quiet bool) (bool, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var pause *time.Timer
	var pauseC <-chan time.Time
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	l := looker{s: s, want: want}
	defer l.done()
	for {
		s.mu.Lock()
		matched := l.look()
		drained, alt := s.text.complete(), s.text.settler().altScreen()
		var ch <-chan struct{}
		if !matched && !drained {
			ch = l.wake(want != nil && !alt)
		}
		var since time.Duration
		hasOutput := quiet && s.text.settler().unread()
		if hasOutput {
			since = time.Since(s.text.lastOutput())
		}
		s.mu.Unlock()
		if !matched && want != nil && alt {
			matched = s.screenMatch(want, deadline)
		}
		if matched || drained || (hasOutput && since >= startQuiet) {
			return matched, nil
		}
		if hasOutput {
			if pause == nil {
				pause = time.NewTimer(startQuiet - since)
				pauseC = pause.C
			} else {
				pause.Reset(startQuiet - since)
			}
		}
		select {
		case <-ch:
		case <-pauseC:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
}
