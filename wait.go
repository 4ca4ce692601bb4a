package agentpty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"
)

// Waits on full-screen programs, patterns, input and settled output.
const (
	frameQuiet    = 50 * time.Millisecond  // a full-screen program that drew nothing for this long has finished its frame
	syncQuiet     = 300 * time.Millisecond // ... or this long inside a synchronized update it never ended
	frameMax      = time.Second            // the longest wait for a frame: some programs never stop drawing
	regexBack     = 8                      // lines of old text before the new in which a pattern's match may start
	defaultSettle = 300 * time.Millisecond // how long output must stay still for wait_until "settled" by default ...
	maxSettle     = 10 * time.Second       // ... and at most
)

// The kernel gives no event for "the program now blocks reading the
// terminal", so between outputs the state is re-checked on a short
// backoff: the first re-check soon after the last output, then less often.
const (
	recheckFirst = 500 * time.Microsecond
	recheckMax   = 20 * time.Millisecond
)

// WaitUntilSettled is the value of wait_until for programs that redraw
// and never wait for input (top, watch, dashboards): return once the
// output has changed since the last read and then stayed still for
// settle_ms.
const WaitUntilSettled = "settled"

// waiter is one call's wait, whatever ends it besides its deadline and
// the program's exit: a literal or an RE2 pattern in new output (never in
// the echo of the input the call typed), the program waiting for input,
// output that settled, a start's first output that paused; and, while a
// full-screen program shows, the end of its frame. The validator
// (check.go) makes it from a request; on binds it to a session. One
// goroutine uses it, but for the reader's looks while it is parked
// (matcher), which happen under Session.mu.
type waiter struct {
	s *Session // the session waited on (on)

	// What the call asked for, checked by the validator.
	lit    string
	litb   []byte
	re     *regexp.Regexp
	waitMS *int
	until  untilMode
	view   callView

	deadline time.Time
	quiet    bool // a start's wait without wait_for or wait_ms: output that appeared and paused ends it

	echo     []echoPiece // the runs of text the call typed, in order
	echoLine int         // the settled line the cursor was on when it typed them

	text, kinds []byte // the text last looked in, kept for its memory
	scanned     bool   // the settled text was looked in ...
	hit         bool   // ... and a match found; after none, only what changed since needs another look
	screenSeen  bool   // the screen was looked in, and found no match ...
	screenAt    int64  // ... when the display had parsed the ring up to here
	parked      bool   // the pattern is parked with the reader (matcher)
}

// untilMode is how a call's wait may end besides a match, the exit and
// the deadline.
type untilMode struct {
	input  bool          // wait_until "input": the program waits for input
	settle time.Duration // wait_until "settled": the output has been still this long
}

// callView is what a pty-write asks for besides typing and waiting: how
// its result shows the screen, whether it consumes output, and what
// happens to the terminal before typing.
type callView struct {
	screen     string    // "", ScreenFull or ScreenDiff
	peek       bool      // the result consumes nothing
	signal     os.Signal // sent to the foreground group before typing; nil for none
	cols, rows int       // the size to take before typing; 0 keeps the current one
	secret     bool      // the input is a secret: no copy is kept to tell its echo
}

// literalWait waits for lit.
func literalWait(lit string) *waiter { return &waiter{lit: lit, litb: []byte(lit)} }

// waitOn is a wait on s until deadline, for nothing but what the method
// called on it waits for.
func waitOn(s *Session, deadline time.Time) *waiter { return &waiter{s: s, deadline: deadline} }

// on binds w to s; deadline, when set, is when the wait runs out.
func (w *waiter) on(s *Session, deadline time.Time) *waiter {
	w.s, w.deadline = s, deadline
	return w
}

// pattern reports whether w waits for a literal or a pattern.
func (w *waiter) pattern() bool { return w.lit != "" || w.re != nil }

// limit turns the request's wait into a duration: wait_ms, else the
// default of a wait for a pattern or a wait_until, else defaultWait.
func (w *waiter) limit() time.Duration {
	switch {
	case w.waitMS != nil:
		return min(time.Duration(*w.waitMS)*time.Millisecond, maxWait)
	case w.pattern() || w.until.input || w.until.settle > 0:
		return defaultWaitFor
	}
	return defaultWait
}

// typed records that the call is about to type input, so that its echo
// does not count. Call with mu held.
func (w *waiter) typed(s *settler, input []byte) {
	w.echo = echoPieces(input)
	w.echoLine = s.cur
}

// inSettled reports whether w matches the new settled text in a way that
// counts: not wholly in text an earlier read returned, and not in the echo
// of what the call typed.
func (w *waiter) inSettled(st *settler) bool {
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

// onScreen reports whether w matches the screen of a full-screen program
// in a way that counts. The display parses what it has not seen until the
// call's deadline at most: a flood must not stretch the wait.
func (w *waiter) onScreen() bool {
	matched := false
	w.s.readScreen(w.deadline, func(d *display) {
		rows, shown, off := d.rows()
		if w.screenSeen && off == w.screenAt || time.Now().After(w.deadline) {
			return // the screen has not changed since the last look, or the wait is over
		}
		w.screenSeen, w.screenAt = true, off
		matched = w.inScreen(rows, shown)
	})
	return matched
}

// inScreen reports whether w matches a screen's rows in a way that counts:
// holding text of a row that differs from shown, the rows the last read
// returned, and not in the echo of what the call typed (a program's prompt
// line); the program's own drawing counts.
func (w *waiter) inScreen(rows, shown []string) bool {
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

// inOutput looks for w's pattern in the new settled text and, while a
// full-screen program shows, on the display. Call without locks held.
func (w *waiter) inOutput() bool {
	s := w.s
	s.mu.Lock()
	matched := w.inSettled(s.text.settler())
	alt := s.text.settler().altScreen()
	s.mu.Unlock()
	return matched || alt && w.onScreen()
}

// write types input, then waits and collects as pty-write does.
func (w *waiter) write(ctx context.Context, input []byte) (WriteResult, error) {
	defer w.s.clock.use()() // a long wait is use, not idleness
	leave, err := w.s.turn(ctx, ToolWrite)
	if err != nil {
		return WriteResult{}, err
	}
	defer leave()
	return w.writeInTurn(ctx, input)
}

// writeInTurn is write once the call has its turn.
func (w *waiter) writeInTurn(ctx context.Context, input []byte) (WriteResult, error) {
	s := w.s
	if err := checkInputWait(ToolWrite+" "+s.id, s.term, w.until.input); err != nil {
		return WriteResult{}, err
	}
	st, exited := s.ended()
	if exited && len(input) > 0 {
		return WriteResult{}, errorf(ErrExited, "%s %s: the program has exited (%s); write no input to read what is left, or kill it", ToolWrite, s.id, st)
	}
	before, err := w.beforeTyping()
	if err != nil {
		return WriteResult{}, err
	}
	w.deadline = time.Now().Add(w.limit())
	if len(input) > 0 && w.pattern() && !w.view.secret {
		s.mu.Lock()
		w.typed(s.text.settler(), input)
		s.mu.Unlock()
	}
	ends := shellEnds(s)
	if err := w.typeInput(ctx, input); err != nil {
		return WriteResult{}, err
	}
	res, err := w.collectWait(ctx)
	if err != nil {
		return WriteResult{}, err
	}
	w.showScreen(before, &res)
	out := res.writeResult(s.id)
	if code, ok := shellEnded(s, ends); ok && !res.exited {
		out.PromptAfter, out.ExitCode = true, &code
	}
	return out, nil
}

// typeInput types a write's input, giving it a moment even when the call
// will not wait for output.
func (w *waiter) typeInput(ctx context.Context, input []byte) error {
	if len(input) == 0 {
		return nil
	}
	typing := w.deadline
	if least := time.Now().Add(minTyping); typing.Before(least) {
		typing = least
	}
	n, err := w.s.typeInput(ctx, input, typing)
	if err == nil {
		return nil
	}
	why := ""
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		why = " before the wait ran out; the program is not reading its input"
	}
	return fmt.Errorf("agentpty: %s %s: typed %d of %d bytes%s: %w", ToolWrite, w.s.id, n, len(input), why, err)
}

// beforeTyping does what a write asks before its input: it snapshots the
// screen for a diff, resizes the terminal, and signals the foreground
// group, in that order. It returns the snapshot (nil without a diff).
func (w *waiter) beforeTyping() (*modeView, error) {
	s, v := w.s, w.view
	var before *modeView
	if v.screen == ScreenDiff {
		s.readScreen(callLimit(), func(d *display) {
			b := d.view()
			before = &b
		})
	}
	if v.cols > 0 || v.rows > 0 {
		cols, rows := s.size()
		if v.cols > 0 {
			cols = v.cols
		}
		if v.rows > 0 {
			rows = v.rows
		}
		if err := s.Resize(cols, rows); err != nil {
			return nil, err
		}
	}
	if v.signal != nil {
		if err := s.Signal(v.signal); err != nil {
			return nil, err
		}
	}
	return before, nil
}

// start is a start's wait: as write's, but with neither wait_for nor
// wait_ms (nor wait_until) it returns once output has appeared and paused.
func (w *waiter) start(ctx context.Context) (StartResult, error) {
	s := w.s
	defer s.clock.use()() // the idle clock starts when start returns
	leave, err := s.turn(ctx, ToolStart)
	if err != nil {
		return StartResult{ID: s.id}, err
	}
	defer leave()
	if err := checkInputWait(ToolStart+" "+s.id, s.term, w.until.input); err != nil {
		return StartResult{ID: s.id}, err
	}
	w.quiet = !w.pattern() && w.waitMS == nil && !w.until.input && w.until.settle == 0
	w.deadline = time.Now().Add(w.limit())
	res, err := w.collectWait(ctx)
	if err != nil {
		return StartResult{ID: s.id}, err
	}
	w.showScreen(&modeView{}, &res)
	return res.startResult(s.id), nil
}

// collectWait waits as the request asks (await, awaitInput or
// awaitSettled) and, on a full screen, for the frame to be finished, then
// collects the result, with the state taken before the output (the one
// that ended an input wait); a peek consumes nothing.
func (w *waiter) collectWait(ctx context.Context) (waitResult, error) {
	var matched bool
	var err error
	var st TerminalState
	var waited string // set by a settled wait only
	switch {
	case w.until.settle > 0:
		waited, err = w.awaitSettled(ctx)
		matched = waited == WaitedMatch
	case w.until.input:
		matched, st, err = w.awaitInput(ctx)
	default:
		matched, err = w.await(ctx)
	}
	if err == nil {
		err = w.awaitFrame(ctx)
	}
	if err != nil {
		return waitResult{}, err
	}
	paused := w.quiet && !matched && time.Now().Before(w.deadline) // await's pause ended it, not the deadline
	if st.State != StateWaitingInput {
		st = w.s.State()
	}
	res := w.s.collect(matched, w.view.peek, true)
	res.state = resultState(st, res.exited)
	if waited == "" {
		waited = waitedHow(matched, res.exited, w.until.input, paused, res.state)
	}
	res.waited = waited
	return res, nil
}

// await blocks until w's pattern matches new output, the child exits, the
// deadline passes, or (quiet) output has appeared and paused. It reads
// nothing. Only the reader wakes it: nothing polls.
func (w *waiter) await(ctx context.Context) (bool, error) {
	s := w.s
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	var pause *time.Timer
	var pauseC <-chan time.Time
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	defer w.doneLooking()
	for {
		s.mu.Lock()
		matched := w.look()
		drained, alt := s.text.complete(), s.text.settler().altScreen()
		var ch <-chan struct{}
		if !matched && !drained {
			ch = w.wake(w.pattern() && !alt)
		}
		var since time.Duration
		hasOutput := w.quiet && s.text.settler().unread()
		if hasOutput {
			since = time.Since(s.text.lastOutput())
		}
		s.mu.Unlock()
		if !matched && w.pattern() && alt {
			matched = w.onScreen()
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

// look reports whether the pattern matches: the reader found it while the
// call was parked, or it does now. Call with mu held.
func (w *waiter) look() bool {
	if !w.pattern() {
		return false
	}
	m := &w.s.match
	if w.text == nil { // the buffers of an earlier call: looks allocate nothing
		w.text, w.kinds = m.lend()
	}
	hit := w.parked && m.unpark()
	w.parked = false
	return hit || w.inSettled(w.s.text.settler())
}

// wake returns what wakes the call: the reader's release when park (the
// call waits for its pattern only) and no other wait is parked (calls take
// turns, but a wait outside them may look beside one), else any change.
// Call with mu held.
func (w *waiter) wake(park bool) <-chan struct{} {
	m := &w.s.match
	if park && m.free() {
		w.parked = true
		return m.park(w)
	}
	if park {
		m.note("beside")
	}
	return w.s.text.changes()
}

// doneLooking ends the looks: the reader stops looking, and the call's
// buffers are kept for the next call, unless a flood made them large.
func (w *waiter) doneLooking() {
	if !w.pattern() {
		return
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.parked {
		w.s.match.unpark()
		w.parked = false
	}
	w.s.match.keep(w.text, w.kinds)
	w.text, w.kinds = nil, nil
}

// awaitInput blocks until the state is waiting_input or w's pattern
// appears in new output (matched), as awaitCond waits, and returns the
// last state it saw. It reads nothing.
func (w *waiter) awaitInput(ctx context.Context) (matched bool, st TerminalState, err error) {
	err = w.awaitCond(ctx, func() bool {
		// The state before the output: waiting_input means every byte is
		// rendered, so a match the output holds is seen below too.
		st = w.s.State()
		matched = w.pattern() && w.inOutput()
		return matched || st.State == StateWaitingInput
	})
	return matched, st, err
}

// awaitCond blocks until done reports true, the child's output is
// drained, the deadline passes, or ctx ends. done is called without locks
// held. Output wakes it; between outputs it re-checks on the backoff
// above, since a program that starts to wait for input prints nothing to
// say so.
func (w *waiter) awaitCond(ctx context.Context, done func() bool) error {
	s := w.s
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	recheck := time.NewTimer(recheckFirst)
	defer recheck.Stop()
	backoff := recheckFirst
	for {
		s.mu.Lock()
		drained, ch := s.text.complete(), s.text.changes()
		s.mu.Unlock()
		if drained || done() {
			return nil
		}
		select {
		case <-ch:
			backoff = recheckFirst
		case <-recheck.C:
			backoff = min(2*backoff, recheckMax)
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
		recheck.Reset(backoff) // since Go 1.23 a Reset timer delivers no stale tick
	}
}

// awaitSettled blocks until output no result has returned yet has been
// still for the settle time, w's pattern matches new output, the output is
// drained after the exit, the deadline passes, or ctx ends, and says
// which. It reads nothing; the reader's output and one timer at the moment
// the output would have been still long enough wake it.
func (w *waiter) awaitSettled(ctx context.Context) (string, error) {
	s, settle := w.s, w.until.settle
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	still := time.NewTimer(settle)
	defer still.Stop()
	for {
		s.mu.Lock()
		matched := w.pattern() && w.inSettled(s.text.settler())
		drained, ch := s.text.complete(), s.text.changes()
		alt := s.text.settler().altScreen()
		// Changed: output no result returned, which shows: text to read,
		// or anything drawn on a full screen (escapes alone, such as the
		// clear before a first frame, change nothing a person sees).
		changed := s.out.rendered() > s.text.returned() && (alt || s.text.settler().unread())
		since := time.Since(s.text.lastOutput())
		s.mu.Unlock()
		if !matched && w.pattern() && alt {
			matched = w.onScreen()
		}
		switch {
		case matched:
			return WaitedMatch, nil
		case drained:
			return WaitedExit, nil
		case changed && since >= settle:
			return WaitedSettled, nil
		}
		if changed {
			still.Reset(settle - since) // since Go 1.23 a Reset timer delivers no stale tick
		}
		select {
		case <-ch:
		case <-still.C:
		case <-timer.C:
			return WaitedTimeout, nil
		case <-ctx.Done():
			return "", fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
}

// awaitFrame waits, while a full-screen program shows, until it has
// finished drawing: its synchronized update (mode 2026) has ended, or it
// has drawn nothing for frameQuiet. The deadline and frameMax bound it, and
// exit ends it. Only the reader wakes it.
func (w *waiter) awaitFrame(ctx context.Context) error {
	s := w.s
	// Most results show no full screen: the timers and the channel are
	// made only once there is a frame to wait for.
	limit := time.Now().Add(min(time.Until(w.deadline), frameMax))
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

// showScreen turns a result into the screen mode asked for: the screen
// or its diff against before as output, with the cursor and the
// highlights the session's reads have not shown on every read (see
// litMemory); a peek leaves that memory as it was. No mode leaves the
// result as it is.
func (w *waiter) showScreen(before *modeView, res *waitResult) {
	mode := w.view.screen
	if mode == "" {
		return
	}
	var after modeView
	w.s.readScreen(callLimit(), func(d *display) {
		after = d.view()
		res.highlights = d.pickHighlights(after, !w.view.peek)
	})
	res.cursor = &after.cursor
	if mode == ScreenFull {
		res.output = w.s.sh.showRuns(Screen{Lines: after.lines}.Text())
		return
	}
	if before == nil {
		before = &modeView{}
	}
	res.output = w.s.sh.showRuns(viewDiff(*before, after))
}
