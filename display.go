package agentpty

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentpty/agentpty/internal/screen"
)

// Cursor is a zero-based screen position.
type Cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// Screen is a snapshot of what the terminal shows, as a person would see it.
type Screen struct {
	Rows, Cols int
	Cursor     Cursor
	// AltScreen is true while a full-screen program (vim, less, htop) has
	// switched to the alternate screen.
	AltScreen bool
	// Lines holds each row's text, trailing blanks trimmed.
	Lines []string
	// Cells holds every cell, row by row (Rows rows of Cols cells), with
	// its character, width and attributes. Session.Screen fills it.
	Cells [][]Cell
}

// Text returns the screen's rows joined by newlines, trailing empty rows
// left out.
func (s Screen) Text() string {
	n := len(s.Lines)
	for n > 0 && s.Lines[n-1] == "" {
		n--
	}
	return strings.Join(s.Lines[:n], "\n")
}

// syncScreen feeds the screen everything the ring holds that it has not
// parsed, and sends the replies the terminal owes for queries in it. It
// parses in slices of processorSlice, letting go of the screen between
// them, so a call that needs the screen waits for one slice at most,
// whatever the program prints.
func (s *Session) syncScreen() {
	for {
		s.screenMu.Lock()
		done := s.syncScreenBy(time.Now().Add(processorSlice))
		s.screenMu.Unlock()
		if done || s.dying.Load() {
			return
		}
	}
}

// processorSlice is the longest the processor holds the screen at a time.
const processorSlice = 20 * time.Millisecond

// syncScreenLocked is syncScreen with screenMu held.
func (s *Session) syncScreenLocked() { s.syncScreenBy(time.Time{}) }

// callSync bounds how long a call parses the screen on its own behalf: a
// program can print faster than the screen parses (a full clear of a
// 1000x500 screen per byte pair), and a read must not wait on that for
// good. The processor goroutine catches up without a bound, a slice at a
// time (syncScreen).
const callSync = 300 * time.Millisecond

// syncScreenCall is syncScreenLocked for a call: it parses for at most
// callSync and reports whether the screen holds everything the ring does.
func (s *Session) syncScreenCall() bool { return s.syncScreenBy(time.Now().Add(callSync)) }

// syncScreenBy is syncScreenLocked that stops at limit (none when zero)
// and reports whether it parsed everything.
func (s *Session) syncScreenBy(limit time.Time) bool {
	if s.screen == nil {
		cols, rows := s.size()
		s.screen = screen.New(cols, rows)
		s.piece = 1 // grows as fast as pieces parse quickly
	}
	s.answering.Add(1) // held over from the query flag to the reply queued (see queueReply)
	s.parses.Add(1)
	defer s.answering.Add(-1)
	s.queries.Store(false) // whatever asked is in what is parsed now
	// The screen reads the ring in place: the reader does not write over
	// bytes the screen has not parsed (see feed), so only taking the slices
	// needs the lock.
	s.inMu.Lock()
	a, b, _ := s.ring.slices(s.screenOff.Load())
	end := s.ring.end()
	s.inMu.Unlock()
	from := end - int64(len(a)+len(b))
	if from == end {
		return true
	}
	// What the settler has already seen to be plain text needs no scan to
	// find the part that scrolled away unseen.
	// settled before nonPlainEnd: the renderer stores them the other way
	// round, so a batch counted as settled here has its flag seen too.
	settled := s.settled.Load()
	plain := int64(0)
	if from >= s.nonPlainEnd.Load() {
		plain = max(min(settled, end)-from, 0)
	}
	var reply []byte
	off := from
	late := false
	for _, p := range [2][]byte{a, b} {
		k := min(int64(len(p)), plain)
		if k > 0 {
			reply = s.screen.WritePlain(reply, p[:k])
		}
		plain -= k
		off += k
		// In pieces, so that a Kill need not wait for a screen that has
		// much to parse: a dying session's screen stops where it is, and
		// a call's where its time is up.
		for p = p[k:]; len(p) > 0 && !s.dying.Load(); {
			now := time.Now()
			if !limit.IsZero() && now.After(limit) {
				late = true
				break
			}
			n := min(len(p), s.piece)
			reply = s.screen.Write(reply, p[:n])
			off += int64(n)
			p = p[n:]
			s.piece = nextPiece(s.piece, time.Since(now))
		}
		if late {
			break
		}
	}
	if late {
		s.screenOff.Store(off)
	} else {
		s.screenOff.Store(end)
	}
	s.queueReply(reply)
	return !late
}

// nextPiece is the size of the screen's next piece after one of n bytes
// took d: as much as parses in about pieceTime at that pace, at most
// twice n. A piece of a flood of full-screen clears on a large screen
// takes far longer than a byte of text, and the checks between pieces
// must come often enough for a call's limit and a Kill to hold.
func nextPiece(n int, d time.Duration) int {
	next := 2 * n
	if d > 0 {
		next = min(next, int(int64(n)*int64(pieceTime)/int64(d)))
	}
	return min(max(next, 1), screenPiece)
}

// Screen returns what the terminal shows now.
func (s *Session) Screen() Screen {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	s.syncScreenLocked()
	scr := s.snapshot()
	scr.Cells = s.screen.Cells()
	return scr
}

// snapshot reads the screen. Call with screenMu held.
func (s *Session) snapshot() Screen {
	cols, rows := s.screen.Size()
	r, c := s.screen.Cursor()
	return Screen{Rows: rows, Cols: cols, Cursor: Cursor{Row: r, Col: c}, AltScreen: s.screen.AltScreen(), Lines: s.screen.Lines()}
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(cols, rows int) error {
	if cols < 1 || cols > maxCols || rows < 1 || rows > maxRows {
		return errorf(ErrInvalid, "%s: size %dx%d is outside 1-%d columns by 1-%d rows", s.id, cols, rows, maxCols, maxRows)
	}
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	st, exited := s.ended()
	if exited {
		return errorf(ErrExited, "%s: cannot resize, the program has exited (%s)", s.id, st)
	}
	old, err := s.m.recount(s, cols*rows)
	if err != nil {
		return err
	}
	s.syncScreenLocked() // what came before the resize is parsed at the old size
	if err := s.term.Resize(cols, rows); err != nil {
		_, _ = s.m.recount(s, old)
		return fmt.Errorf("agentpty: %s: resize to %dx%d: %w", s.id, cols, rows, err)
	}
	s.screen.Resize(cols, rows)
	s.tapResize(cols, rows) // with screenMu held: at the place in the output where it happened
	s.mu.Lock()
	s.settle.setCols(cols)
	s.settle.setRows(rows)
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
	return nil
}
