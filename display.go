package agentpty

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty/internal/screen"
)

// How the vt model parses output: in pieces, so a Kill or a limit is seen between them.
const (
	maxPiece  = 128                  // the vt model parses at most this much between checks for a Kill or a limit
	pieceTime = 2 * time.Millisecond // ... and less when a piece takes longer than this (see nextPiece)
)

// display is the session's screen as a person would see it: the vt model
// that parses the output (made on first use: many sessions never need
// one), what the last read showed of it, and the query answers it owes
// the program. Its fields are touched only by its methods, below.
type display struct {
	// mu guards the model and the fields up to parsedTo; take it before
	// Session.mu, never under it. Resize holds it across the terminal's
	// resize, so the model changes size where the terminal did.
	mu    sync.Mutex
	vt    *screen.Screen
	shown []string  // the rows the last read returned while the alternate screen showed, else nil
	lit   litMemory // the highlights the screen-mode reads returned
	piece int       // bytes the model parses between checks (nextPiece)

	parsedTo  atomic.Int64 // ring offset the model has parsed up to
	queries   atomic.Bool  // the settler saw a query the model has not parsed yet
	answering atomic.Int32 // parses and query replies under way (see State)
	parses    atomic.Int64 // parses begun, each of which may type an answer (see State)
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

// processorSlice is the longest the processor holds the display at a time.
const processorSlice = 20 * time.Millisecond

// callSync bounds how long a call parses on its own behalf: a program can
// print faster than the model parses (a full clear of a 1000x500 screen
// per byte pair), and a read must not wait on that for good. The
// processor catches up without a bound, a slice at a time (see process).
const callSync = 300 * time.Millisecond

// callLimit is the limit of a call's readScreen.
func callLimit() time.Time { return time.Now().Add(callSync) }

// readScreen takes the display, has its model parse what the output holds
// that it has not (until limit; none when zero), sends the answers it owes
// for queries in it, and runs f, if any, on the display before letting it
// go. It reports whether the model holds all the output.
func (s *Session) readScreen(limit time.Time, f func(d *display)) bool {
	s.disp.mu.Lock()
	defer s.disp.mu.Unlock()
	if !s.disp.hasModel() {
		s.disp.makeModel(s.size())
	}
	from := s.disp.beginParse()
	a, b, end, plain := s.out.unparsed(from)
	reply, done := s.disp.parse(a, b, end, plain, &s.typing, limit)
	s.rep.queue(reply, &s.disp, &s.typing)
	s.disp.endParse() // once the answers are queued (see replier.queue)
	if f != nil {
		f(&s.disp)
	}
	return done
}

// hasModel reports whether the vt model is made. Call with mu held.
func (d *display) hasModel() bool { return d.vt != nil }

// makeModel makes the vt model at the terminal's size. Call with mu held.
func (d *display) makeModel(cols, rows int) {
	d.vt = screen.New(cols, rows)
	d.piece = 1 // grows as fast as pieces parse quickly
}

// beginParse counts a parse begun and returns where the model has parsed
// up to. Call with mu held, and endParse once its answers are queued.
func (d *display) beginParse() int64 {
	d.answering.Add(1) // held over from the query flag to the reply queued (see replier.queue)
	d.parses.Add(1)
	d.queries.Store(false) // whatever asked is in what is parsed now
	return d.parsedTo.Load()
}

// endParse ends what beginParse began.
func (d *display) endParse() { d.answering.Add(-1) }

// parse parses a and b, the output's bytes up to ring offset end that the
// model has not parsed, of which the first plain are text the settler
// found plain (no scan needed), until limit (none when zero) or a Kill
// (dying). It returns the answers the model owes for queries in them, and
// whether it parsed them all. Call with mu held.
func (d *display) parse(a, b []byte, end, plain int64, dying stopper, limit time.Time) ([]byte, bool) {
	from := end - int64(len(a)+len(b))
	if from == end {
		return nil, true
	}
	var reply []byte
	off := from
	late := false
	for _, p := range [2][]byte{a, b} {
		k := min(int64(len(p)), plain)
		if k > 0 {
			reply = d.vt.WritePlain(reply, p[:k])
		}
		plain -= k
		var n int64
		reply, n, late = d.parsePieces(reply, p[k:], dying, limit)
		off += k + n
		if late {
			break
		}
	}
	if late {
		d.parsedTo.Store(off)
	} else {
		d.parsedTo.Store(end)
	}
	return reply, !late
}

// parsePieces parses p into the model in pieces, so that a Kill need not
// wait for a model that has much to parse: a dying session's model stops
// where it is, and a call's where limit (none when zero) has passed. It
// returns the replies with the model's appended, how much it parsed, and
// whether it stopped for the limit. Call with mu held.
func (d *display) parsePieces(reply, p []byte, dying stopper, limit time.Time) ([]byte, int64, bool) {
	parsed := int64(0)
	for len(p) > 0 && !dying.stopped() {
		now := time.Now()
		if !limit.IsZero() && now.After(limit) {
			return reply, parsed, true
		}
		n := min(len(p), d.piece)
		reply = d.vt.Write(reply, p[:n])
		parsed += int64(n)
		p = p[n:]
		d.piece = nextPiece(d.piece, time.Since(now))
	}
	return reply, parsed, false
}

// nextPiece is the size of the model's next piece after one of n bytes
// took d: as much as parses in about pieceTime at that pace, at most
// twice n. A piece of a flood of full-screen clears on a large screen
// takes far longer than a byte of text, and the checks between pieces
// must come often enough for a call's limit and a Kill to hold.
func nextPiece(n int, d time.Duration) int {
	next := 2 * n
	if d > 0 {
		next = min(next, int(int64(n)*int64(pieceTime)/int64(d)))
	}
	return min(max(next, 1), maxPiece)
}

// Screen returns what the terminal shows now.
func (s *Session) Screen() Screen {
	var scr Screen
	s.readScreen(time.Time{}, func(d *display) { scr = d.snapshotCells() })
	return scr
}

// snapshot reads the model. Call with mu held.
func (d *display) snapshot() Screen {
	cols, rows := d.vt.Size()
	r, c := d.vt.Cursor()
	return Screen{Rows: rows, Cols: cols, Cursor: Cursor{Row: r, Col: c}, AltScreen: d.vt.AltScreen(), Lines: d.vt.Lines()}
}

// snapshotCells is snapshot with every cell. Call with mu held.
func (d *display) snapshotCells() Screen {
	scr := d.snapshot()
	scr.Cells = d.vt.Cells()
	return scr
}

// stopper says when a parse must stop: the session is being killed (the
// typing writer, see typing.stop).
type stopper interface{ stopped() bool }

// resize gives the model the terminal's new size. Call with mu held,
// across the terminal's own resize.
func (d *display) resize(cols, rows int) { d.vt.Resize(cols, rows) }

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(cols, rows int) error {
	if err := checkResize(s.id, cols, rows); err != nil {
		return err
	}
	var err error
	// What came before the resize is parsed at the old size, and the
	// display is held across the terminal's resize.
	s.readScreen(time.Time{}, func(d *display) {
		if st, exited := s.ended(); exited {
			err = errorf(ErrExited, "%s: cannot resize, the program has exited (%s)", s.id, st)
			return
		}
		old, e := s.m.recount(s, cols*rows)
		if e != nil {
			err = e
			return
		}
		s.seen.changing()
		if e := s.term.Resize(cols, rows); e != nil {
			_, _ = s.m.recount(s, old)
			err = fmt.Errorf("agentpty: %s: resize to %dx%d: %w", s.id, cols, rows, e)
			return
		}
		d.resize(cols, rows)
		s.taps.resize(d.parsed(), cols, rows) // with the display held: at the place in the output where it happened
		s.mu.Lock()
		s.text.resize(cols, rows)
		s.mu.Unlock()
	})
	return err
}

// parsed is the ring offset the model has parsed up to.
func (d *display) parsed() int64 { return d.parsedTo.Load() }

// behind reports whether the model must parse what it has not, up to ring
// offset end: a query awaits its answer, or it lags more than lag.
func (d *display) behind(end, lag int64) bool {
	return d.queries.Load() || end-d.parsedTo.Load() > lag
}

// queryRendered notes that the settler rendered a query the model has not
// parsed yet: an answer is owed (see State).
func (d *display) queryRendered() { d.queries.Store(true) }

// answerQueued and answersTyped count the answers on their way to the
// program, from queued to typed (see State).
func (d *display) answerQueued()        { d.answering.Add(1) }
func (d *display) answersTyped(n int32) { d.answering.Add(-n) }

// owing is what State's stamp reads of the answers owed: -1 while a query
// waits for the model, else the parses and replies under way. The query
// flag is read first: a parse clears it only once it counts in answering.
func (d *display) owing() int64 {
	if d.queries.Load() {
		return -1
	}
	return int64(d.answering.Load())
}

// parseCount is how many parses have begun, each of which may type an
// answer.
func (d *display) parseCount() int64 { return d.parses.Load() }

// keyModes reads the terminal's key modes. Call with mu held.
func (d *display) keyModes() keyModes {
	c, k := d.vt.KeyModes()
	return keyModes{appCursor: c, appKeypad: k}
}

// redraw returns the bytes that redraw the model as it is, its size, and
// the offset it has parsed up to: what continues from exactly that
// screen. Call with mu held.
func (d *display) redraw() (redraw []byte, cols, rows int, off int64) {
	cols, rows = d.vt.Size()
	return d.vt.Redraw(nil), cols, rows, d.parsedTo.Load()
}

// rows returns the model's rows and those the last read returned while
// the alternate screen showed, with the offset the model has parsed up
// to. Call with mu held.
func (d *display) rows() (rows, shown []string, off int64) {
	return d.vt.Lines(), d.shown, d.parsedTo.Load()
}

// read is a read's snapshot of the model; unless peek, it remembers the
// rows while the alternate screen shows (what wait_for compares with
// next), else nothing. Call with mu held.
func (d *display) read(alt, peek bool) Screen {
	scr := d.snapshot()
	if !peek {
		d.shown = nil
		if alt {
			d.shown = scr.Lines
		}
	}
	return scr
}

// forgetShown notes a read that showed no screen.
func (d *display) forgetShown() {
	d.mu.Lock()
	d.shown = nil
	d.mu.Unlock()
}

// view is what a screen mode shows of the model now. Call with mu held.
func (d *display) view() modeView {
	scr := d.snapshot()
	return modeView{lines: scr.Lines, cursor: scr.Cursor, highlights: highlights(d.vt.Cells()), alt: scr.AltScreen, cols: scr.Cols}
}

// pickHighlights chooses the highlights a result lists of v's (see
// litMemory.pick). Call with mu held.
func (d *display) pickHighlights(v modeView, record bool) []Highlight { return d.lit.pick(v, record) }
