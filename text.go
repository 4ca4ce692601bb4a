package agentpty

import (
	"context"
	"fmt"
	"time"
)

// settledText is the settled text and how the program ended; guarded by
// Session.mu.
type settledText struct {
	settle     *settler
	readOff    int64 // ring offset up to which results have returned output
	truncated  int64
	lastOutput time.Time
	frameEnd   int64 // ring offset of the end of the last batch that ended a synchronized update
	cols, rows int
	exited     bool // the child has been reaped; status is set
	status     ExitStatus
	drainSeen  bool  // the reader has read what was on its way at exit (or hit end of file) ...
	drainOff   int64 // ... up to this ring offset
	drained    bool  // exited, and everything up to drainOff is rendered
}

// checkDrained marks the output complete once the child has exited and
// what was on its way is rendered. Call with mu held.
func (s *Session) checkDrained() {
	if s.text.exited && s.text.drainSeen && !s.text.drained && s.out.settled.Load() >= s.text.drainOff {
		s.text.drained = true
		close(s.done)
		s.broadcast()
	}
}

// reap waits for the child, records how it ended, and asks the reader to
// finish the output that was on its way.
func (s *Session) reap() {
	st, err := s.term.Wait()
	if err != nil {
		st = ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	s.mu.Lock()
	s.text.exited = true
	s.text.status = st
	s.broadcast()
	s.checkDrained()
	s.mu.Unlock()
	// Emitted before kill can see the child reaped, so "exited" always
	// comes before "killed".
	code, sig := st.exitFields()
	<-s.announced // a program that exits at once must not be reported before it was created
	s.m.emit(Event{Kind: EventExited, ID: s.id, PID: s.pid, Command: s.command, ExitCode: code, Signal: sig, Time: time.Now()})
	close(s.reaped)
}

// size is the terminal's size.
func (s *Session) size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.cols, s.text.rows
}

// ended reports how the program ended, once it has.
func (s *Session) ended() (ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.status, s.text.exited
}

// Tail returns the last n lines of the settled scrollback, read or not,
// the line being written last (when it has text): for a status line or a
// host's view of a session. It reads nothing.
func (s *Session) Tail(n int) []string {
	s.mu.Lock()
	t := s.text.settle.tail(n)
	s.mu.Unlock()
	return s.sh.showRunLines(t)
}

// Scrollback returns the settled scrollback the session keeps, read or
// not, lines joined by newlines. It reads nothing.
func (s *Session) Scrollback() string {
	s.mu.Lock()
	t := s.text.settle.scrollback()
	s.mu.Unlock()
	return s.sh.showRuns(t)
}

// Wait returns how the program ended, once it has exited and the output
// that was on its way has been read and rendered.
func (s *Session) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.text.status, nil
	case <-ctx.Done():
		return ExitStatus{}, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
	}
}

// readTo counts what left the ring before any result returned it, marks
// the output read up to ring offset off, and returns the count over the
// session's life and the part of it that this read lost. Call with mu
// held.
func (s *Session) readTo(off int64) (total, lost int64) {
	lost = s.unreadLost()
	s.text.truncated += lost
	s.text.readOff = max(s.text.readOff, off)
	return s.text.truncated, lost
}

// unreadLost is what left the ring since the last read: what the next
// read loses. Call with mu held.
func (s *Session) unreadLost() int64 {
	s.out.inMu.Lock()
	start := s.out.ring.start()
	s.out.inMu.Unlock()
	return max(start-s.text.readOff, 0)
}
