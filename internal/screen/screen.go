// Package screen is a terminal screen for agentpty: hinshun/vt10x behind a
// pre-parser that clamps, filters and completes what vt10x gets wrong, so
// nothing a program prints can crash, hang or mislead the session.
package screen

import (
	"bytes"
	"strconv"

	"github.com/hinshun/vt10x"
)

// Limits on the size a screen may take; vt10x allocates rows×cols cells per
// buffer and the session validates the same bounds.
const (
	maxCols = 1000
	maxRows = 500
)

// vt10x's unexported bits, read from Cursor().Attr.Mode and Cursor().State.
const (
	attrReverse   = 1 << 0
	attrUnderline = 1 << 1
	attrBold      = 1 << 2
	attrGfx       = 1 << 3
	attrItalic    = 1 << 4
	attrBlink     = 1 << 5

	cursorWrapNext = 1 << 1
	cursorOrigin   = 1 << 2
)

// Screen is a terminal screen: hinshun/vt10x behind a guard that clamps,
// filters and completes what vt10x gets wrong. It is not safe for
// concurrent use; the session calls it with its own mutex held.
type Screen struct {
	vt         vt10x.Terminal
	cols, rows int

	// vtOut collects what vt10x itself writes back (OSC colour replies);
	// it is a buffer so vt10x, which writes while holding its lock, never
	// blocks.
	vtOut bytes.Buffer
	// out holds bytes queued for vt10x: whole runes and whole sequences
	// only, each one something vt10x handles correctly.
	out []byte
	// dst collects the replies of the Write in progress.
	dst []byte

	parser

	// Terminal state vt10x lacks or gets wrong, tracked here.
	alt         bool
	insert      bool // IRM
	autowrap    bool // DECAWM
	lnm         bool // LNM: line feed also returns the carriage
	revWrap     bool // reverse wraparound (DEC private mode 45)
	origin      bool // DECOM
	appCursor   bool // DECCKM: the cursor keys send SS3 forms
	appKeypad   bool // DECKPAM: the keypad sends SS3 forms
	top, bottom int  // scroll region, zero-based, inclusive
	saved       [2]savedCursor

	// last is the graphic character printed by the previous token, for
	// REP and for attaching combining marks; lastOK is false once anything
	// else came in between, as in xterm.
	last   rune
	lastW  int
	lastOK bool
	// mayWrap is false when vt10x surely has no wrap pending, which
	// saves asking it.
	mayWrap bool
	// phantom is a wrap xterm keeps pending after CBT moved the cursor
	// away from the last column, where vt10x can't keep one.
	phantom bool

	// protect is DECSCA: characters printed now are protected from
	// selective erase (DECSED, DECSEL), which vt10x lacks; they are
	// stored as protected clusters. anyProt says one was ever printed,
	// so selective erase is a plain erase until then.
	protect, anyProt bool

	// altKeep is the alternate screen as ?47l left it: xterm shows it
	// again at the next ?47h, where vt10x has cleared it.
	altKeep [][]vt10x.Glyph

	clusters clusterTable

	prevLines []string // what Changed last reported against

	// Plain-text skipping (skip.go): scratch space, a switch for tests,
	// and how many bytes were skipped.
	lfRing  []lfMark
	noSkip  bool
	skipped int

	// A plain run that reaches the end of a Write is held back (up to
	// maxHeld bytes) until the next Write or until someone looks: most of
	// it usually scrolls away unseen, and vt10x is the costly part.
	held    []byte
	joined  []byte
	holding bool

	rebuilding bool

	// panics counts panics recovered from vt10x and fed the bytes given
	// to it, for tests and the fuzz target's bound on work.
	panics int
	fed    int
}

// savedCursor is a DECSC slot. vt10x has one slot shared by both screen
// buffers; xterm keeps one per buffer, and programs rely on it.
type savedCursor struct {
	set    bool
	x, y   int
	attr   vt10x.Glyph
	origin bool
}

// New returns a blank screen of the given size (clamped to 1..1000 columns
// and 1..500 rows).
func New(cols, rows int) *Screen {
	cols, rows = clampSize(cols, rows)
	s := &Screen{cols: cols, rows: rows}
	s.reset()
	return s
}

func clampSize(cols, rows int) (int, int) {
	return clamp(cols, 1, maxCols), clamp(rows, 1, maxRows)
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// reset builds a fresh vt10x and forgets all state: used at New and to
// recover from a panic inside vt10x, after which its state can't be trusted.
func (s *Screen) reset() {
	s.vt = vt10x.New(vt10x.WithWriter(&s.vtOut), vt10x.WithSize(s.cols, s.rows))
	s.out = s.out[:0]
	s.vtOut.Reset()
	s.parser = parser{}
	s.alt, s.insert, s.origin, s.autowrap, s.lnm, s.revWrap = false, false, false, true, false, false
	s.appCursor, s.appKeypad = false, false
	s.top, s.bottom = 0, s.rows-1
	s.saved = [2]savedCursor{}
	s.lastOK = false
	s.protect, s.altKeep = false, nil
	// vt10x's own reset clears only part of the screen (it swaps rows and
	// columns); start from a clean slate.
	s.out = append(s.out, "\x1b[2J"...)
	s.flush()
}

// Write feeds program output, split anywhere, and returns dst with the
// replies the terminal owes the program for the queries in p appended in
// order: DSR and CPR (from the cursor after everything before the query),
// DA1 and DECID as a VT220-class terminal with ANSI colour (CSI ?62;22c),
// DA2 (CSI >1;10;0c), DECRQM, the text area size (CSI 18 t), and the OSC
// colour queries vt10x answers. It never panics and takes time
// proportional to len(p).
func (s *Screen) Write(dst, p []byte) []byte {
	if len(s.held) > 0 {
		s.joined = append(append(s.joined[:0], s.held...), p...)
		s.held = s.held[:0]
		p = s.joined
	}
	s.holding = !s.noSkip
	defer func() { s.holding = false }()
	s.dst = dst
	defer func() {
		if r := recover(); r != nil {
			// A fault in the pre-parser itself: start over rather than
			// take the session down.
			s.panics++
			s.rebuild()
		}
	}()
	s.feed(p)
	s.flush()
	dst, s.dst = s.dst, nil
	if cap(s.joined) > 64<<10 {
		s.joined = nil
	}
	return dst
}

// catchUp parses the plain text a Write held back, before anyone looks at
// the screen. Plain text holds no query, so there is nothing to answer.
func (s *Screen) catchUp() {
	if len(s.held) == 0 {
		return
	}
	p := s.held
	s.held = nil
	s.feed(p)
	s.flush()
	s.dst = nil
	s.held = p[:0]
}

// flush hands the queued bytes to vt10x and collects its replies.
func (s *Screen) flush() {
	if len(s.out) > 0 {
		s.fed += len(s.out)
		s.guard(func() { s.vt.Write(s.out) })
		s.out = s.out[:0]
	}
	if s.vtOut.Len() > 0 {
		s.dst = append(s.dst, s.vtOut.Bytes()...)
		s.vtOut.Reset()
	}
}

// guard runs f, a call into vt10x, and recovers from a panic by rebuilding
// the terminal with the old text, so the screen keeps working.
func (s *Screen) guard(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.panics++
			ok = false
			s.rebuild()
		}
	}()
	f()
	return true
}

// rebuild replaces a vt10x whose state may be corrupt with a fresh one that
// shows the same text and cursor. The bytes that caused the panic are
// dropped, and a panic while rebuilding is not retried.
func (s *Screen) rebuild() {
	if s.rebuilding {
		return
	}
	s.rebuilding = true
	defer func() { s.rebuilding = false }()
	s.out = s.out[:0]
	lines := s.readLines()
	var cur vt10x.Cursor
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		cur = s.vt.Cursor()
	})
	alt, dst := s.alt, s.dst
	appCursor, appKeypad := s.appCursor, s.appKeypad
	s.reset()
	s.dst = dst
	if alt {
		s.switchScreen(true)
	}
	s.setKeyModes(appCursor, appKeypad)
	for y, l := range lines {
		if l != "" {
			s.moveAbs(y, 0)
			s.feed([]byte(l))
		}
	}
	s.moveAbs(clamp(cur.Y, 0, s.rows-1), clamp(cur.X, 0, s.cols-1))
	s.flush()
}

// cursor returns vt10x's cursor after flushing what is queued.
func (s *Screen) cursor() (c vt10x.Cursor) {
	s.flush()
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		c = s.vt.Cursor()
	})
	return c
}

// Resize changes the size (clamped as in New). vt10x keeps the top-left
// text, slides up to keep the cursor visible, and resets the scroll region.
func (s *Screen) Resize(cols, rows int) {
	s.catchUp()
	cols, rows = clampSize(cols, rows)
	if cols == s.cols && rows == s.rows {
		return
	}
	s.flush()
	old := s.cols
	s.guard(func() { s.vt.Resize(cols, rows) })
	s.cols, s.rows = cols, rows
	s.top, s.bottom = 0, rows-1
	s.lastOK = false
	s.altKeep = nil
	if cols > old {
		// vt10x sets the new default tab stops on its old slice and loses
		// them; set them here, on the cursor's row, then put it back.
		c := s.cursor()
		for x := (old + 7) / 8 * 8; x < cols; x += 8 {
			s.out = appendCSI(s.out, 'G', x+1)
			s.out = append(s.out, "\x1bH"...)
		}
		s.out = appendCSI(s.out, 'G', c.X+1)
	}
	s.flush()
}

// Size returns the screen's size.
func (s *Screen) Size() (cols, rows int) { return s.cols, s.rows }

// Cursor returns the zero-based cursor position; the column counts a wide
// character as two, as the program did.
func (s *Screen) Cursor() (row, col int) {
	s.catchUp()
	c := s.cursor()
	return c.Y, c.X
}

// AltScreen reports whether the alternate screen buffer is shown.
func (s *Screen) AltScreen() bool { return s.alt }

// KeyModes reports the modes that decide what a keyboard sends: DECCKM
// (cursor keys as ESC O A rather than ESC [ A) and DECKPAM (the keypad as
// ESC O p... rather than its characters).
func (s *Screen) KeyModes() (appCursor, appKeypad bool) { return s.appCursor, s.appKeypad }

// setKeyModes sets DECCKM and DECKPAM here and in vt10x (for Redraw and
// DECRQM).
func (s *Screen) setKeyModes(appCursor, appKeypad bool) {
	s.appCursor, s.appKeypad = appCursor, appKeypad
	if appCursor {
		s.out = append(s.out, "\x1b[?1h"...)
	} else {
		s.out = append(s.out, "\x1b[?1l"...)
	}
	if appKeypad {
		s.out = append(s.out, "\x1b="...)
	} else {
		s.out = append(s.out, "\x1b>"...)
	}
}

func appendCSI(b []byte, final byte, args ...int) []byte {
	b = append(b, 0x1b, '[')
	for i, a := range args {
		if i > 0 {
			b = append(b, ';')
		}
		b = strconv.AppendInt(b, int64(a), 10)
	}
	return append(b, final)
}
