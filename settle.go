package agentpty

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf8"
)

// settleEvents reports what a write saw that the session must act on.
type settleEvents uint8

const (
	evQuery    settleEvents = 1 << iota // a terminal query (DSR, CPR, DA1-3, DECID, DECRQM, CSI 18 t, OSC colour) waits for an answer
	evAltEnter                          // the program switched to the alternate screen
	evAltLeave                          // the program switched back to the primary screen
	evNonPlain                          // more than text, CR, LF, BS, HT, BEL, SGR and line-local sequences: the screen cannot skip it
	evSyncEnd                           // a synchronized update (mode 2026) ended: the frame is complete
)

const (
	settleMaxCells = 64 << 10 // a line this long is ended as if by LF, so `yes | tr -d '\n'` stays bounded
	settleMaxUp    = 500      // how far above the last line the cursor may go, bounding what one edit can touch
	settleLineCost = 16       // bookkeeping charged per line, so floods of blank lines are bounded too
	settleNone     = math.MaxInt
	settleTall     = 1 << 40 // the rows of a screen whose height is unknown: no bound below
)

// settleCell is one column of the cursor's line: a rune, or one of the values below.
type settleCell uint32

const (
	settleEmpty settleCell = 0        // never written, or erased: a space between written cells, trimmed at the end
	settleCont  settleCell = 0x110000 // the right half of a wide character
	settleGap   settleCell = 0x110001 // the last column of a row a wide character did not fit in: no text
	settleGroup settleCell = 0x110002 // settleGroup+i is clusters[i], a character with its combining marks
)

// settleLine is one line of settled text. Except on the cursor's line, the
// text lives in the arena as UTF-8 with NUL for an empty cell between
// written ones, so a later edit can still tell it from a written space.
type settleLine struct {
	off, n   int32  // the text: arena[off : off+n]
	width    int32  // cells up to the last written one, as of the last flush
	seen     int32  // leading cells an earlier read returned, unchanged since; valid while touched
	epoch    uint32 // the read epoch in which the line was last touched
	mlo, mhi int32  // cells changed since the last match call
	flags    uint8
}

const (
	settleHoles uint8 = 1 << iota // the text holds NUL for empty cells
	settleHit                     // a new occurrence of the match literal starts in this line
	settlePend                    // changed or newly touched since the last match call
)

// Parser states. Ground is plain text; the rest are inside an escape sequence.
const (
	settleGround    uint8 = iota
	settleEsc             // after ESC
	settleEscInter        // after ESC and an intermediate byte: waiting for the final byte
	settleCSI             // in a control sequence
	settleOSC             // in an OSC string, ended by BEL or ST
	settleString          // in a DCS, SOS, PM or APC string, ended by ST
	settleStringEsc       // after ESC inside a string: ST if a backslash follows
)

// settler turns raw terminal output into settled text, a line at a time.
//
// Only the cursor's line is kept as cells; every other line is UTF-8 in one
// arena, so the scrollback costs about a byte a character. Reads are
// tracked with epochs: a line is touched when its epoch is the current
// one, and a read marks everything read by starting a new epoch.
type settler struct {
	max int // bound on the settled scrollback: text plus settleLineCost a line

	// Parser.
	state  uint8
	need   uint8 // UTF-8 continuation bytes still expected
	lo, hi byte  // the range the next continuation byte must lie in
	cp     rune  // the code point decoded so far
	priv   byte  // CSI private marker: one of < = > ?
	inter  byte  // CSI intermediate byte
	bad    bool  // CSI malformed: consume it, do nothing
	sub    bool  // in a ':' sub-parameter, whose digits are ignored
	any    bool  // CSI has parameter bytes
	np     int   // index of the CSI parameter being read
	params [16]int32

	ev      settleEvents
	alt     bool // the alternate screen is showing: record nothing
	syncing bool // inside a synchronized update (mode 2026): the screen is mid-frame

	// oscHook, when set, is told each OSC string ended by BEL or ST (its
	// first settleOSCMax bytes), with the cursor where the string stood;
	// osc holds the part read so far, which also tells colour queries;
	// oscEsc says the ESC just read came inside an OSC string.
	oscHook func(payload []byte)
	osc     []byte
	oscEsc  bool

	// A redraw in place (redrawn, screenview.go): the epoch in which the
	// program last addressed the primary screen by row or erased it all,
	// and the lines begun since.
	addrEpoch uint32
	addrLines int
	// The touched lines as they were when the first of them since the
	// last read came (keepBeforeRedraw): their text, and each one's line
	// and end in it.
	preText  []byte
	preLines []settlePre

	// odd is set when a write completes anything but plain text: a
	// sequence other than SGR and the line-local ones (EL, ECH, DCH, ICH,
	// CHA, HPA, CUF, HPR, CUB), or a control other than CR, LF, VT, FF, BS,
	// HT, BEL and NUL (evNonPlain). A sequence split across writes counts
	// in the write that completes it.
	odd bool

	// The cursor and its line.
	col      int
	w        int  // columns in a screen row: the terminal's width, or settleMaxCells when unknown
	pending  bool // the last character printed filled its row: the terminal's cursor waits at the row's end
	cells    []settleCell
	clusters []string // characters with combining marks on the cursor's line
	changed  bool     // cells differ from the line's arena text
	plain    bool     // cells are all printable ASCII: the usual line, stored by a plain copy
	last     rune     // the last character printed, for REP
	saved    bool     // DECSC ran: saveLine and saveCol are meaningful
	saveLine int
	saveCol  int
	savePend bool
	slowLine int // the line plainLine last found not plain, tried once only

	// The screen's rows (setRows). Vertical motion stays on the screen and
	// inside the scroll region as the terminal's does, so a redraw that
	// moves up more rows than the screen holds rewrites only what is still
	// on it; rows outside the region (the status bar apt keeps under its
	// scroll region) record nothing.
	h          int  // rows on the screen, or settleTall while unknown
	y0         int  // the screen row of the cursor line's first row; below 0 when it began above the screen
	top, bot   int  // the scroll region, zero-based and inclusive
	margin     bool // the cursor is on a row outside the scroll region
	anchor     settlePos
	floor      int // no line before this one is on the screen: ED 2 moved them to the history
	saveY      int
	saveMargin bool
	saveAnchor settlePos

	// keepCol: a bare LF keeps the column, as on a terminal. The session
	// sets it: with output processing on, the line discipline's ONLCR has
	// already turned each LF into CR LF before the master reads it, so a
	// bare LF only arrives from a program that turned OPOST or ONLCR off.
	// Unset, LF also returns the carriage, for text that never went
	// through a terminal.
	keepCol bool

	// Lines. lines[0] is line number base; cur is the cursor's line number.
	lines   []settleLine
	linesAt []settleLine // the array lines lies in, from its start: evicted lines leave room at the front
	base    int
	cur     int
	arena   []byte
	garbage int  // arena bytes no line uses
	ordered bool // line slots lie in the arena in line order, so compaction can work in place
	charge  int  // what the lines cost against max

	// Unread text: the lines touched in the current epoch.
	epoch       uint32
	unreadLines int
	unreadBytes int // their text plus one separator each
	dirtyFrom   int // no touched line lies before this one
	readLast    int // the last line when the last read was made: lines after it are new
	lostLines   int // touched lines evicted before anyone read them
	lostBytes   int

	// Match state for one literal, valid within one epoch.
	mlit   string
	mlitb  []byte   // mlit, for bytes.Index
	mparts [][]byte // mlit split at "\n" when it spans lines
	mepoch uint32
	mhits  int // lines with settleHit
	mfrom  int // no pending line lies before this one
	buf    []byte
	cellOf []int32
}

// newSettler returns a settler keeping about maxBytes of settled scrollback
// (256 KiB when maxBytes <= 0). It allocates nothing more until written to.
func newSettler(maxBytes int) *settler {
	if maxBytes <= 0 {
		maxBytes = DefaultScrollbackBytes
	}
	return &settler{
		max:       min(maxBytes, 1<<29), // arena offsets are int32
		w:         settleMaxCells,
		ordered:   true,
		epoch:     1,
		dirtyFrom: settleNone,
		readLast:  -1,
		mfrom:     settleNone,
		slowLine:  -1,
		h:         settleTall,
		bot:       settleTall - 1,
	}
}

// setCols tells the settler the terminal's width, so that cursor motion in
// a line the terminal wrapped (readline editing a long command) lands where
// it did on the screen. Zero or less means unknown, the default: no line
// wraps before settleMaxCells.
func (s *settler) setCols(n int) {
	if n <= 0 || n > settleMaxCells {
		n = settleMaxCells
	}
	y := s.row()
	s.w = n
	s.pending = s.pending && s.col%n == 0
	s.setRow(y)
}

// write feeds program output and reports what the session must act on.
func (s *settler) write(p []byte) settleEvents {
	s.ev = 0
	s.odd = false
	if s.lines == nil {
		s.addLine()
		s.plain = true
	}
	for i := 0; i < len(p); {
		switch s.state {
		case settleGround:
			if b := p[i]; s.need == 0 {
				if s.fresh() { // a whole line at once, when it is a plain one
					if j := s.plainLine(p, i); j > i {
						i = j
						continue
					}
				}
				if b-0x20 < 0x5f { // printable ASCII: the whole run at once
					j := settlePrintable(p, i+1)
					s.printASCII(p[i:j])
					i = j
					continue
				}
				if b == 0x1b && i+1 < len(p) && p[i+1] == '[' { // the usual escape, in one step
					s.startCSI()
					i = s.csi(p, i+2)
					continue
				}
			}
			i = s.ground(p, i)
		case settleCSI:
			i = s.csi(p, i)
		case settleOSC, settleString:
			i = s.skipString(p, i)
		default:
			if s.escape(p[i]) {
				i++
			}
		}
	}
	if s.odd {
		s.ev |= evNonPlain
	}
	return s.ev
}

// fresh reports whether the cursor is at the start of a new last line,
// nothing written on it yet, outside the alternate screen, and plainLine
// has not already found the line not plain.
func (s *settler) fresh() bool {
	return s.col == 0 && len(s.cells) == 0 && !s.changed && !s.hidden() && !s.pending &&
		s.cur == s.lastLine() && s.lines[len(s.lines)-1].n == 0 && s.slowLine != s.cur
}

// ground handles the byte at p[i] outside escape sequences, other than
// printable ASCII, and returns where to continue.
func (s *settler) ground(p []byte, i int) int {
	b := p[i]
	switch {
	case s.need > 0:
		if s.decode(b) {
			return i + 1
		}
		return i // not a continuation byte: it starts afresh
	case b < 0x20:
		s.control(b)
	case b >= 0x80:
		if r, n := utf8.DecodeRune(p[i:]); n > 1 {
			s.printRune(r)
			return i + n
		}
		s.decode(b) // split across writes, or invalid
	}
	return i + 1
}

// decode feeds one byte to the UTF-8 decoder, which keeps its state across
// writes. It reports false when b ended an invalid sequence and must be
// handled again as a byte of its own. An invalid sequence prints one U+FFFD.
func (s *settler) decode(b byte) bool {
	if s.need == 0 {
		switch {
		case b >= 0xC2 && b <= 0xDF:
			s.need, s.cp, s.lo, s.hi = 1, rune(b&0x1F), 0x80, 0xBF
		case b == 0xE0:
			s.need, s.cp, s.lo, s.hi = 2, rune(b&0x0F), 0xA0, 0xBF
		case b == 0xED:
			s.need, s.cp, s.lo, s.hi = 2, rune(b&0x0F), 0x80, 0x9F
		case b >= 0xE1 && b <= 0xEF:
			s.need, s.cp, s.lo, s.hi = 2, rune(b&0x0F), 0x80, 0xBF
		case b == 0xF0:
			s.need, s.cp, s.lo, s.hi = 3, rune(b&0x07), 0x90, 0xBF
		case b >= 0xF1 && b <= 0xF3:
			s.need, s.cp, s.lo, s.hi = 3, rune(b&0x07), 0x80, 0xBF
		case b == 0xF4:
			s.need, s.cp, s.lo, s.hi = 3, rune(b&0x07), 0x80, 0x8F
		default:
			s.printRune(utf8.RuneError)
		}
		return true
	}
	if b < s.lo || b > s.hi {
		s.need = 0
		s.printRune(utf8.RuneError)
		return false
	}
	s.cp = s.cp<<6 | rune(b&0x3F)
	s.lo, s.hi = 0x80, 0xBF
	if s.need--; s.need == 0 {
		s.printRune(s.cp)
	}
	return true
}

// control acts on a C0 control byte, in text or inside a sequence.
func (s *settler) control(b byte) {
	switch b {
	case '\r', '\n', '\v', '\f', '\b', '\t', 0x07, 0x00, 0x1b:
	default:
		s.odd = true
	}
	switch b {
	case 0x1b:
		s.state = settleEsc
		return
	case 0x18, 0x1a: // CAN, SUB
		s.state = settleGround
		return
	}
	if s.alt {
		return
	}
	switch b {
	case '\b':
		s.unpend()
		s.col = max(s.col-1, s.rowStart())
	case '\t':
		s.tab(1)
	case '\n':
		s.lineFeed(s.keepCol)
	case '\v', '\f': // never translated by the line discipline: they keep the column
		s.lineFeed(true)
	case '\r':
		s.unpend()
		s.col = s.rowStart()
	}
}

// escape handles one byte after ESC, or after ESC inside a string. It
// reports false when b is not part of the sequence and must be handled again.
func (s *settler) escape(b byte) bool {
	if b != '[' || s.state != settleEsc {
		s.odd = true // anything after ESC but a CSI
	}
	if s.state == settleStringEsc {
		if b == '\\' { // ST
			s.state = settleGround
			if s.oscEsc {
				s.endOSC(s.osc)
			}
			return true
		}
		s.state = settleEsc // ESC ended the string and starts a sequence
	}
	switch {
	case b < 0x20:
		s.control(b)
		return true
	case b == 0x7f:
		return true
	case b >= 0x80:
		s.state = settleGround // ESC then a non-ASCII character: drop the ESC
		return false
	case s.state == settleEscInter: // charset designations and the like: consume the final byte
		if b >= 0x30 {
			s.state = settleGround
		}
		return true
	}
	if b <= 0x2f {
		s.state = settleEscInter
		return true
	}
	s.state = settleGround
	switch b {
	case '[':
		s.startCSI()
	case ']':
		s.state = settleOSC
		s.osc = s.osc[:0]
	case 'P', 'X', '^', '_': // DCS, SOS, PM, APC
		s.state = settleString
	case 'Z': // DECID
		s.ev |= evQuery
	case 'c': // RIS
		s.leaveAlt()
		s.col, s.pending = 0, false
		s.resetRegion()
		if s.h != settleTall {
			s.clearScreen(0)
		}
	}
	if s.alt {
		return true
	}
	switch b {
	case 'D': // IND
		s.lineFeed(true)
	case 'E': // NEL
		s.lineFeed(false)
	case 'M': // RI
		s.up(1)
	case '7':
		s.saveCursor()
	case '8':
		s.restoreCursor()
	}
	return true
}

// startCSI begins a control sequence with no parameters yet.
func (s *settler) startCSI() {
	s.state = settleCSI
	s.params = [16]int32{}
	s.np, s.priv, s.inter, s.bad, s.sub, s.any = 0, 0, 0, false, false, false
}

// skipString consumes string bytes from p[i:] up to and including the terminator.
func (s *settler) skipString(p []byte, i int) int {
	from := i
	for ; i < len(p); i++ {
		switch p[i] {
		case 0x1b:
			if s.oscEsc = s.state == settleOSC; s.oscEsc {
				s.osc = s.oscPart(p[from:i]) // ST may follow: the string ends as with BEL
			}
			s.state = settleStringEsc
			return i + 1
		case 0x07:
			if s.state == settleOSC {
				s.state = settleGround
				s.endOSC(s.oscPart(p[from:i]))
				return i + 1
			}
		case 0x18, 0x1a:
			s.state = settleGround
			return i + 1
		}
	}
	if s.state == settleOSC {
		s.osc = s.oscPart(p[from:i])
	}
	return i
}

// endOSC is an OSC string's end, by BEL or ST.
func (s *settler) endOSC(osc []byte) {
	if bytes.HasSuffix(osc, []byte(";?")) { // a colour query (OSC 10;?) the screen answers
		s.ev |= evQuery
	}
	if s.oscHook != nil {
		s.oscHook(osc)
	}
}

// settleOSCMax bounds what oscHook is shown of one OSC string.
const settleOSCMax = 128

// oscPart is the OSC string read so far with part appended, bounded.
func (s *settler) oscPart(part []byte) []byte {
	return append(s.osc, part[:min(len(part), max(settleOSCMax-len(s.osc), 0))]...)
}

// csi consumes control-sequence bytes from p[i:] up to and including the
// final byte. The parameter being read is kept in locals, stored back when
// p runs out in the middle of the sequence.
func (s *settler) csi(p []byte, i int) int {
	np, v, any := s.np, s.params[s.np], s.any
	for ; i < len(p); i++ {
		b := p[i]
		switch {
		case b-'0' <= 9:
			any = true
			if s.inter != 0 {
				s.bad = true
			} else if !s.sub {
				v = min(v*10+int32(b-'0'), 1<<16)
			}
		case b == ';':
			any, s.sub = true, false
			if np < len(s.params)-1 {
				s.params[np] = v
				np++
				v = 0
			}
		case b >= 0x40 && b <= 0x7e:
			s.params[np], s.np, s.any = v, np, any
			s.state = settleGround
			if !s.bad {
				s.dispatch(b)
			} else {
				s.odd = true
			}
			return i + 1
		case b == ':':
			any, s.sub = true, true
		case b >= '<' && b <= '?':
			if any || s.priv != 0 || s.inter != 0 {
				s.bad = true
			}
			s.priv = b
		case b >= 0x20 && b <= 0x2f:
			s.inter = b
		case b < 0x20:
			s.params[np], s.np, s.any = v, np, any
			s.control(b)
			if s.state != settleCSI { // ESC, CAN or SUB ended it
				return i + 1
			}
		}
		// DEL and bytes from 0x80 are ignored.
	}
	s.params[np], s.np, s.any = v, np, any
	return i
}

// dispatch acts on a complete control sequence with final byte f.
func (s *settler) dispatch(f byte) {
	p0 := int(s.params[0])
	if f == 'm' || s.inter != 0 { // SGR, the sequence output is full of, changes no text
		if f != 'm' || s.priv != 0 || s.inter != 0 {
			s.odd = true
		}
		if s.inter == '$' && f == 'p' { // DECRQM
			s.ev |= evQuery
		}
		return
	}
	// Erasing, inserting and deleting in the row and moving along it leave
	// the screen's plain-text skipping sound (see internal/screen).
	if s.priv != 0 || strings.IndexByte("KXP@G`CaD", f) < 0 {
		s.odd = true
	}
	switch s.priv {
	case '?':
		switch f {
		case 'h', 'l':
			s.privateModes(f == 'h')
		case 'n':
			if p0 == 6 {
				s.ev |= evQuery
			}
		}
		return
	case '>', '=': // DA2, DA3
		if f == 'c' && p0 == 0 && s.np == 0 {
			s.ev |= evQuery
		}
		return
	case '<':
		return
	}
	switch {
	case f == 'n' && (p0 == 5 || p0 == 6), f == 'c' && p0 == 0, f == 't' && p0 == 18:
		s.ev |= evQuery
	}
	if s.alt {
		return
	}
	n := max(p0, 1)
	if s.margin && strings.IndexByte("@JKPXb", f) >= 0 {
		return // a status row outside the scroll region: not recorded
	}
	switch f {
	case '@':
		s.insertCells(n)
	case 'A':
		s.up(n)
	case 'B':
		s.down(n)
	case 'C', 'a':
		s.setCol(s.col + n)
	case 'D':
		s.setCol(s.col - n)
	case 'E':
		s.down(n)
		s.col = s.rowStart()
	case 'F':
		s.up(n)
		s.col = s.rowStart()
	case 'G', '`':
		s.setCol(s.rowStart() + n - 1)
	case 'H', 'f':
		s.addressed()
		if s.h != settleTall {
			s.moveRow(n - 1)
		}
		s.setCol(s.rowStart() + max(int(s.params[1]), 1) - 1)
	case 'd': // VPA
		s.addressed()
		if s.h != settleTall {
			s.unpend()
			c := s.col - s.rowStart()
			s.moveRow(n - 1)
			s.setCol(s.rowStart() + c)
		}
	case 'r': // DECSTBM, which homes the cursor; a region of one row is ignored
		if bot := int(s.params[1]); s.h != settleTall {
			if bot == 0 || bot > s.h {
				bot = s.h
			}
			if n < bot {
				s.top, s.bot = n-1, bot-1
				s.moveRow(0)
				s.setCol(s.rowStart())
			}
		}
	case 'I':
		s.tab(n)
	case 'Z':
		s.unpend()
		for rs := s.rowStart(); n > 0 && s.col > rs; n-- {
			s.col = rs + (s.col-rs-1)/8*8
		}
	case 'J':
		switch {
		case p0 == 0:
			s.eraseBelow()
		case p0 == 2:
			s.addressed()
			if s.h != settleTall {
				s.unpend()
				s.clearScreen(s.row())
			}
		}
	case 'K':
		s.eraseInLine(p0)
	case 'P':
		s.deleteCells(n)
	case 'X':
		s.eraseCells(n)
	case 'b':
		s.repeat(n)
	case 's':
		if !s.any {
			s.saveCursor()
		}
	case 'u':
		s.restoreCursor()
	}
}

// privateModes applies DECSET or DECRST; only the alternate screen and
// synchronized updates matter here.
func (s *settler) privateModes(set bool) {
	for _, m := range s.params[:s.np+1] {
		if m == 2026 {
			if s.syncing && !set {
				s.ev |= evSyncEnd
			}
			s.syncing = set
		}
		if m != 1049 && m != 1047 && m != 47 {
			continue
		}
		if set && !s.alt {
			s.alt = true
			s.ev |= evAltEnter
		} else if !set {
			s.leaveAlt()
		}
	}
}

// altScreen reports whether the alternate screen is showing now.
func (s *settler) altScreen() bool { return s.alt }

// leaveAlt returns to the primary screen. Nothing moved while the alternate
// screen showed, so recording resumes where the cursor was.
func (s *settler) leaveAlt() {
	if s.alt {
		s.alt = false
		s.ev |= evAltLeave
	}
}
