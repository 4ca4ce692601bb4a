package agentpty

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty/internal/screen"
)

// display is the session's screen, made on first use (many sessions never
// need one), and the query answers it owes the program.
type display struct {
	// mu guards the screen and the fields up to screenOff; take it before
	// Session.mu, never under it. Resize holds it across the terminal's
	// resize, so the screen changes size where the terminal did.
	mu     sync.Mutex
	screen *screen.Screen
	shown  []string  // the rows the last read returned while the alternate screen showed, else nil
	lit    litMemory // the highlights the screen-mode reads returned
	piece  int       // bytes the screen parses between checks (nextPiece)

	screenOff atomic.Int64 // ring offset the screen has been fed up to
	queries   atomic.Bool  // the settler saw a query the screen has not parsed yet
	answering atomic.Int32 // screen parses and query replies under way (see State)
	parses    atomic.Int64 // screen parses begun, each of which may type an answer (see State)
}

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
		s.disp.mu.Lock()
		done := s.syncScreenBy(time.Now().Add(processorSlice))
		s.disp.mu.Unlock()
		if done || s.typing.stopped() {
			return
		}
	}
}

// processorSlice is the longest the processor holds the screen at a time.
const processorSlice = 20 * time.Millisecond

// syncScreenLocked is syncScreen with disp.mu held.
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
	if s.disp.screen == nil {
		cols, rows := s.size()
		s.disp.screen = screen.New(cols, rows)
		s.disp.piece = 1 // grows as fast as pieces parse quickly
	}
	s.disp.answering.Add(1) // held over from the query flag to the reply queued (see replier.queue)
	s.disp.parses.Add(1)
	defer s.disp.answering.Add(-1)
	s.disp.queries.Store(false) // whatever asked is in what is parsed now
	// The screen reads the ring in place: the reader does not write over
	// bytes the screen has not parsed (see feed), so only taking the slices
	// needs the lock.
	a, b, end := s.out.slices(s.disp.screenOff.Load())
	from := end - int64(len(a)+len(b))
	if from == end {
		return true
	}
	// What the settler has already seen to be plain text needs no scan to
	// find the part that scrolled away unseen.
	// settled before nonPlainEnd: the renderer stores them the other way
	// round, so a batch counted as settled here has its flag seen too.
	settled := s.out.rendered()
	plain := int64(0)
	if s.out.plainSince(from) {
		plain = max(min(settled, end)-from, 0)
	}
	var reply []byte
	off := from
	late := false
	for _, p := range [2][]byte{a, b} {
		k := min(int64(len(p)), plain)
		if k > 0 {
			reply = s.disp.screen.WritePlain(reply, p[:k])
		}
		plain -= k
		var n int64
		reply, n, late = s.parsePieces(reply, p[k:], limit)
		off += k + n
		if late {
			break
		}
	}
	if late {
		s.disp.screenOff.Store(off)
	} else {
		s.disp.screenOff.Store(end)
	}
	s.rep.queue(reply, &s.disp.answering, &s.typing)
	return !late
}

// parsePieces parses p into the screen in pieces, so that a Kill need not
// wait for a screen that has much to parse: a dying session's screen stops
// where it is, and a call's where limit (none when zero) has passed. It
// returns the replies with the screen's appended, how much it parsed, and
// whether it stopped for the limit. Call with disp.mu held.
func (s *Session) parsePieces(reply, p []byte, limit time.Time) ([]byte, int64, bool) {
	parsed := int64(0)
	for len(p) > 0 && !s.typing.stopped() {
		now := time.Now()
		if !limit.IsZero() && now.After(limit) {
			return reply, parsed, true
		}
		n := min(len(p), s.disp.piece)
		reply = s.disp.screen.Write(reply, p[:n])
		parsed += int64(n)
		p = p[n:]
		s.disp.piece = nextPiece(s.disp.piece, time.Since(now))
	}
	return reply, parsed, false
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
	s.disp.mu.Lock()
	defer s.disp.mu.Unlock()
	s.syncScreenLocked()
	scr := s.snapshot()
	scr.Cells = s.disp.screen.Cells()
	return scr
}

// snapshot reads the screen. Call with disp.mu held.
func (s *Session) snapshot() Screen {
	cols, rows := s.disp.screen.Size()
	r, c := s.disp.screen.Cursor()
	return Screen{Rows: rows, Cols: cols, Cursor: Cursor{Row: r, Col: c}, AltScreen: s.disp.screen.AltScreen(), Lines: s.disp.screen.Lines()}
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(cols, rows int) error {
	if cols < 1 || cols > maxCols || rows < 1 || rows > maxRows {
		return errorf(ErrInvalid, "%s: size %dx%d is outside 1-%d columns by 1-%d rows", s.id, cols, rows, maxCols, maxRows)
	}
	s.disp.mu.Lock()
	defer s.disp.mu.Unlock()
	st, exited := s.ended()
	if exited {
		return errorf(ErrExited, "%s: cannot resize, the program has exited (%s)", s.id, st)
	}
	old, err := s.m.recount(s, cols*rows)
	if err != nil {
		return err
	}
	s.syncScreenLocked() // what came before the resize is parsed at the old size
	s.changing()
	if err := s.term.Resize(cols, rows); err != nil {
		_, _ = s.m.recount(s, old)
		return fmt.Errorf("agentpty: %s: resize to %dx%d: %w", s.id, cols, rows, err)
	}
	s.disp.screen.Resize(cols, rows)
	s.taps.resize(s.disp.screenOff.Load(), cols, rows) // with disp.mu held: at the place in the output where it happened
	s.mu.Lock()
	s.text.resize(cols, rows)
	s.mu.Unlock()
	return nil
}

// --- added by parts-pipe ---

// due reports whether the screen must parse what it has not, up to ring
// offset end of out: a query awaits its answer, or the ring would soon
// drop bytes it never saw.
func (d *display) due(end int64, out *output) bool {
	return d.queries.Load() || out.far(end, d.screenOff.Load())
}
