package agentpty

import (
	"context"
	"fmt"
	"time"
)

// settledText is the settled text and how the program ended, and the
// waiters on its changes; guarded by Session.mu, so each of its methods is
// called with mu held.
type settledText struct {
	settle     *settler
	changed    chan struct{} // made by a waiter, closed and dropped when output is rendered or the child exits
	readOff    int64         // ring offset up to which results have returned output
	truncated  int64
	outputAt   time.Time // when output was last rendered
	frameEnd   int64     // ring offset of the end of the last batch that ended a synchronized update
	cols, rows int
	exited     bool // the child has been reaped; status is set
	status     ExitStatus
	drainSeen  bool  // the reader has read what was on its way at exit (or hit end of file) ...
	drainOff   int64 // ... up to this ring offset
	drained    bool  // exited, and everything up to drainOff is rendered
}

// newSettledText is the text of a terminal of cols×rows whose ring holds
// scrollback bytes.
func newSettledText(scrollback, cols, rows int) settledText {
	// The settler: its text plus bookkeeping of about 16 bytes a line.
	t := settledText{settle: newSettler(2 * scrollback)}
	// Readline and other line editors move by screen row once a line is
	// wider than the terminal; the settler needs the width to follow them,
	// and the height to keep motion on the screen.
	t.resize(cols, rows)
	t.settle.keepCol = true // the pty's ONLCR adds the CR where output processing is on
	return t
}

// settler is the renderer that holds the text, for reading it.
func (t *settledText) settler() *settler { return t.settle }

// render renders batch, the ring's bytes up to end, and says what it held.
func (t *settledText) render(batch []byte, end int64) settleEvents {
	ev := t.settle.write(batch)
	if ev&evSyncEnd != 0 {
		t.frameEnd = end
	}
	t.outputAt = time.Now()
	return ev
}

// lastOutput is when output was last rendered.
func (t *settledText) lastOutput() time.Time { return t.outputAt }

// endsFrame reports that the output rendered up to ring offset settled
// ended a synchronized update, and no other has begun.
func (t *settledText) endsFrame(settled int64) bool {
	return !t.settle.syncing && t.frameEnd == settled
}

// resize follows the terminal's new size.
func (t *settledText) resize(cols, rows int) {
	t.settle.setCols(cols)
	t.settle.setRows(rows)
	t.cols, t.rows = cols, rows
}

// size is the terminal's size.
func (t *settledText) size() (cols, rows int) { return t.cols, t.rows }

// exit records how the program ended.
func (t *settledText) exit(st ExitStatus) { t.exited, t.status = true, st }

// ended reports how the program ended, once it has.
func (t *settledText) ended() (ExitStatus, bool) { return t.status, t.exited }

// sawDrain records that the reader has everything the program wrote, up
// to ring offset end; it reports whether this is news.
func (t *settledText) sawDrain(end int64) bool {
	if t.drainSeen {
		return false
	}
	t.drainSeen, t.drainOff = true, end
	return true
}

// drain marks the output complete once the child has exited and what was
// on its way is rendered (up to ring offset settled); it reports whether
// it did so now.
func (t *settledText) drain(settled int64) bool {
	if !t.exited || !t.drainSeen || t.drained || settled < t.drainOff {
		return false
	}
	t.drained = true
	return true
}

// complete reports that the program has exited and its output is all
// rendered.
func (t *settledText) complete() bool { return t.drained }

// returned is the ring offset up to which results have returned output.
func (t *settledText) returned() int64 { return t.readOff }

// readTo counts what left the ring (which now starts at ring offset start)
// before any result returned it, marks the output read up to ring offset
// off, and returns the count over the session's life and the part of it
// that this read lost.
func (t *settledText) readTo(off, start int64) (total, lost int64) {
	_, lost = t.wouldLose(start)
	t.truncated += lost
	t.readOff = max(t.readOff, off)
	return t.truncated, lost
}

// wouldLose is what a read would count, without reading: the count over
// the session's life so far, and what left the ring (which now starts at
// ring offset start) since the last read.
func (t *settledText) wouldLose(start int64) (total, lost int64) {
	return t.truncated, max(start-t.readOff, 0)
}

// wake wakes the waiters on changes.
func (t *settledText) wake() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// changes returns the channel the next wake closes, made only when
// someone waits, so rendering with no waiter allocates nothing.
func (t *settledText) changes() <-chan struct{} {
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// size is the terminal's size.
func (s *Session) size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.size()
}

// ended reports how the program ended, once it has.
func (s *Session) ended() (ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.ended()
}

// Tail returns the last n lines of the settled scrollback, read or not,
// the line being written last (when it has text): for a status line or a
// host's view of a session. It reads nothing.
func (s *Session) Tail(n int) []string {
	s.mu.Lock()
	t := s.text.settler().tail(n)
	s.mu.Unlock()
	return s.sh.showRunLines(t)
}

// Scrollback returns the settled scrollback the session keeps, read or
// not, lines joined by newlines. It reads nothing.
func (s *Session) Scrollback() string {
	s.mu.Lock()
	t := s.text.settler().scrollback()
	s.mu.Unlock()
	return s.sh.showRuns(t)
}

// Wait returns how the program ended, once it has exited and the output
// that was on its way has been read and rendered.
func (s *Session) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		st, _ := s.ended()
		return st, nil
	case <-ctx.Done():
		return ExitStatus{}, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
	}
}
