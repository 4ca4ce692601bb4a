package agentpty

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

// settleEvents reports what a write saw that the session must act on.
type settleEvents uint8

const (
	evQuery    settleEvents = 1 << iota // a terminal query (DSR, CPR, DA1-3, DECID, DECRQM, CSI 18 t, OSC colour) waits for an answer
	evAltEnter                          // the program switched to the alternate screen
	evAltLeave                          // the program switched back to the primary screen
	evNonPlain                          // more than text, CR, LF, BS, HT, BEL, SGR and line-local sequences: the screen cannot skip it
)

const (
	settleMaxCells = 64 << 10 // a line this long is ended as if by LF, so `yes | tr -d '\n'` stays bounded
	settleMaxUp    = 500      // how far above the last line the cursor may go, bounding what one edit can touch
	settleLineCost = 16       // bookkeeping charged per line, so floods of blank lines are bounded too
	settleNone     = math.MaxInt
)

// settleCell is one column of the cursor's line: a rune, or one of the values below.
type settleCell uint32

const (
	settleEmpty settleCell = 0        // never written, or erased: a space between written cells, trimmed at the end
	settleCont  settleCell = 0x110000 // the right half of a wide character
	settleGroup settleCell = 0x110001 // settleGroup+i is clusters[i], a character with its combining marks
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

	ev  settleEvents
	alt bool // the alternate screen is showing: record nothing

	// oscHook, when set, is told each OSC string ended by BEL (its first
	// settleOSCMax bytes), with the cursor where the string stood; osc
	// holds the part read so far, which also tells colour queries.
	oscHook func(payload []byte)
	osc     []byte

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
		mfrom:     settleNone,
		slowLine:  -1,
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
	s.w = n
	s.pending = s.pending && s.col%n == 0
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
	return s.col == 0 && len(s.cells) == 0 && !s.changed && !s.alt && !s.pending &&
		s.cur == s.lastLine() && s.lines[len(s.lines)-1].n == 0 && s.slowLine != s.cur
}

// plainLine is the hot path of logs and build output. On a fresh line, a
// whole line of printable ASCII and SGRs ended by LF or CR LF goes to the
// arena as it is, without cells; the result is what printing it, CR and LF
// would leave (CR goes to the start of the line's last row, from where LF
// ends the line, however many rows it wrapped to). It returns where the
// line ended, or i when p[i:] does not hold such a line, for the general
// path to take.
func (s *settler) plainLine(p []byte, i int) int {
	if b := p[i]; b-0x20 >= 0x5f && (b != 0x1b || i+1 == len(p) || p[i+1] != '[') {
		return i // a line starts with text or an SGR
	}
	s.slowLine = s.cur // until it is known to be plain: a line is tried once
	rest := p[i:]
	if len(s.arena)+len(rest) > cap(s.arena) {
		s.reserve(len(rest))
	}
	start := len(s.arena)
	arena := s.arena
	k := 0
	for {
		j := settlePrintable(rest, k)
		if arena = append(arena, rest[k:j]...); len(arena)-start >= settleMaxCells || j == len(rest) {
			return i // so long that printing would break it, or not ended in p
		}
		if rest[j] == '\n' {
			k = j + 1
			break
		}
		if rest[j] == '\r' && j+1 < len(rest) && rest[j+1] == '\n' {
			k = j + 2
			break
		}
		// Only an SGR may come between runs of text.
		if rest[j] != 0x1b || j+2 >= len(rest) || rest[j+1] != '[' {
			return i
		}
		k = j + 2
		for k < len(rest) && (rest[k]-'0' <= 9 || rest[k] == ';' || rest[k] == ':') {
			k++
		}
		if k == len(rest) || rest[k] != 'm' {
			return i
		}
		k++
	}
	n := len(arena) - start
	// As printing would: the line is touched and changed, so a match looks
	// at it again (all of it: it is not the cursor's line any more).
	l := s.touch(s.cur)
	if n > 0 {
		s.last = rune(arena[len(arena)-1])
		l.flags |= settlePend
		s.mfrom = min(s.mfrom, s.cur)
		// As flush would, for a line with no text yet.
		s.arena = arena
		l.off, l.n, l.width = int32(start), int32(n), int32(n)
		l.flags &^= settleHoles
		s.unreadBytes += n
		s.charge += n
	}
	s.newLine() // as LF would, on the last line
	return i + k
}

// settlePrintable returns the end of the run of printable ASCII at p[i:],
// testing eight bytes at a time while it can.
func settlePrintable(p []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		below := (x - 0x20*ones) &^ x // a byte under 0x20
		above := (x + ones) | x       // a byte over 0x7e
		// Borrows and carries can only mark bytes above the first one marked.
		if m := (below | above) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(p) && p[i]-0x20 < 0x5f {
		i++
	}
	return i
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
	case '\n', '\v', '\f':
		s.lineFeed()
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
	}
	if s.alt {
		return true
	}
	switch b {
	case 'D', 'E': // IND, NEL
		s.lineFeed()
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
			s.state = settleStringEsc
			return i + 1
		case 0x07:
			if s.state == settleOSC {
				s.state = settleGround
				osc := s.oscPart(p[from:i])
				if bytes.HasSuffix(osc, []byte(";?")) { // a colour query (OSC 10;?) the screen answers
					s.ev |= evQuery
				}
				if s.oscHook != nil {
					s.oscHook(osc)
				}
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
	case 'H', 'f': // the row is meaningless in settled text
		s.setCol(s.rowStart() + max(int(s.params[1]), 1) - 1)
	case 'I':
		s.tab(n)
	case 'Z':
		s.unpend()
		for rs := s.rowStart(); n > 0 && s.col > rs; n-- {
			s.col = rs + (s.col-rs-1)/8*8
		}
	case 'J':
		if p0 == 0 {
			s.eraseBelow()
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

// privateModes applies DECSET or DECRST; only the alternate screen matters here.
func (s *settler) privateModes(set bool) {
	for _, m := range s.params[:s.np+1] {
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

// printASCII prints a run of printable ASCII bytes.
func (s *settler) printASCII(run []byte) {
	if s.alt {
		return
	}
	s.last = rune(run[len(run)-1])
	for len(run) > 0 {
		if s.col >= settleMaxCells {
			s.wrap()
		}
		n := min(len(run), settleMaxCells-s.col)
		s.putASCII(run[:n])
		run = run[n:]
	}
}

// putASCII writes run at the cursor, which it fits in front of.
func (s *settler) putASCII(run []byte) {
	c, end := s.col, s.col+len(run)
	s.col = end
	s.pending = s.rowFull()
	if c >= len(s.cells) { // the common case: appending
		old := len(s.cells)
		if end > cap(s.cells) {
			s.cells = slices.Grow(s.cells, end-old)
		}
		s.cells = s.cells[:end]
		if c > old {
			clear(s.cells[old:c])
			s.plain = false
		}
		settleWidenASCII(s.cells[c:end], run)
		s.modified(c, end)
		return
	}
	s.extend(end)
	lo, hi := -1, 0
	if s.cells[c] == settleCont {
		s.cells[c-1] = settleEmpty
		lo, hi = c-1, c
	}
	dst := s.cells[c:end]
	for k, b := range run {
		if dst[k] != settleCell(b) {
			dst[k] = settleCell(b)
			if lo < 0 {
				lo = c + k
			}
			hi = c + k + 1
		}
	}
	if end < len(s.cells) && s.cells[end] == settleCont {
		s.cells[end] = settleEmpty
		if lo < 0 {
			lo = end
		}
		hi = end + 1
	}
	if lo >= 0 {
		s.modified(lo, hi)
	}
}

// printRune prints a character that is not printable ASCII.
func (s *settler) printRune(r rune) {
	if r >= 0x80 && r < 0xa0 || s.alt { // C1 controls print nothing
		return
	}
	w := width.Rune(r)
	s.plain = false
	if w == 0 {
		s.combine(r)
		return
	}
	s.last = r
	if w == 2 && s.col >= s.w-1 && s.col%s.w == s.w-1 { // no room in this row: the terminal wraps it whole
		s.col++
	}
	if s.col+w > settleMaxCells {
		s.wrap()
	}
	c := s.col
	s.extend(c + w)
	lo, hi := c, c+w
	if s.cells[c] == settleCont {
		s.cells[c-1] = settleEmpty
		lo = c - 1
	}
	if c+w < len(s.cells) && s.cells[c+w] == settleCont {
		s.cells[c+w] = settleEmpty
		hi = c + w + 1
	}
	changed := lo < c || hi > c+w || s.cells[c] != settleCell(r) || w == 2 && s.cells[c+1] != settleCont
	s.cells[c] = settleCell(r)
	if w == 2 {
		s.cells[c+1] = settleCont
	}
	s.col = c + w
	s.pending = s.rowFull()
	if changed {
		s.modified(lo, hi)
	}
}

// combine attaches a zero-width character to the one before the cursor, as
// terminals do; with nothing there it is dropped.
func (s *settler) combine(r rune) {
	c := s.col - 1
	if c >= len(s.cells) {
		return
	}
	if c > 0 && s.cells[c] == settleCont {
		c--
	}
	if c < 0 || s.cells[c] == settleEmpty || s.cells[c] == settleCont {
		return
	}
	var b []byte
	b = s.appendCell(b, s.cells[c], 0)
	b = utf8.AppendRune(b, r)
	if len(s.clusters) > 2*len(s.cells)+64 {
		s.compactClusters()
	}
	s.clusters = append(s.clusters, string(b))
	s.cells[c] = settleGroup + settleCell(len(s.clusters)-1)
	s.modified(c, c+1)
}

// compactClusters drops the clusters no cell uses any more, so a line
// rewritten in place forever stays bounded.
func (s *settler) compactClusters() {
	var live []string
	for i, v := range s.cells {
		if v >= settleGroup {
			live = append(live, s.clusters[v-settleGroup])
			s.cells[i] = settleGroup + settleCell(len(live)-1)
		}
	}
	s.clusters = live
}

// repeat prints the last character n more times (REP).
func (s *settler) repeat(n int) {
	n = min(n, settleMaxCells)
	if s.last >= 0x80 {
		for range n {
			s.printRune(s.last)
		}
		return
	}
	var run [64]byte
	for i := range run {
		run[i] = byte(s.last)
	}
	for s.last != 0 && n > 0 {
		k := min(n, len(run))
		s.printASCII(run[:k])
		n -= k
	}
}

// extend makes the cursor's line at least n cells long.
func (s *settler) extend(n int) {
	if old := len(s.cells); n > old {
		s.cells = slices.Grow(s.cells, n-old)[:n]
		clear(s.cells[old:])
	}
}

// unpend leaves the pending-wrap state: the cursor is on the last column of
// the row it filled, as the terminal's is, for anything but printing.
func (s *settler) unpend() {
	if s.pending {
		s.col--
		s.pending = false
	}
}

// rowFull reports whether printing just filled the cursor's row. The
// divisions here and below are skipped on the first row, where most lines
// stay: they cost more than the rest of printing a word.
func (s *settler) rowFull() bool { return s.col >= s.w && s.col%s.w == 0 }

// rowStart and rowEnd bound the screen row the cursor is on.
func (s *settler) rowStart() int {
	if s.col < s.w {
		return 0
	}
	return s.col / s.w * s.w
}
func (s *settler) rowEnd() int { return min(s.rowStart()+s.w, settleMaxCells) }

// setCol moves the cursor to column c of its line, kept within its row.
func (s *settler) setCol(c int) {
	s.unpend()
	s.col = min(max(c, s.rowStart()), s.rowEnd()-1)
}

// tab moves to the nth next tab stop, every 8 columns of the row.
func (s *settler) tab(n int) {
	s.unpend()
	for rs := s.rowStart(); n > 0; n-- {
		s.setCol(rs + ((s.col-rs)/8+1)*8)
	}
}

// splitWide blanks both halves of a wide character that cell c cuts in two,
// and reports the first cell it changed (or c).
func (s *settler) splitWide(c int) int {
	if c > 0 && c < len(s.cells) && s.cells[c] == settleCont {
		s.cells[c-1], s.cells[c] = settleEmpty, settleEmpty
		return c - 1
	}
	return c
}

// eraseInLine applies EL: 0 cursor to end of row, 1 row start to cursor, 2 the row.
func (s *settler) eraseInLine(mode int) {
	s.unpend()
	switch mode {
	case 0:
		s.erase(s.col, s.rowEnd())
	case 1:
		s.erase(s.rowStart(), s.col+1)
	case 2:
		s.erase(s.rowStart(), s.rowEnd())
	}
}

// eraseCells applies ECH: n cells from the cursor become empty.
func (s *settler) eraseCells(n int) {
	s.unpend()
	s.erase(s.col, min(s.col+n, s.rowEnd()))
}

// erase empties cells [lo, hi) of the cursor's line, and both halves of a
// wide character either end cuts.
func (s *settler) erase(lo, hi int) {
	hi = min(hi, len(s.cells))
	if lo >= hi {
		return
	}
	from, to := lo, hi
	if s.cells[lo] == settleCont {
		from--
	}
	if hi < len(s.cells) && s.cells[hi] == settleCont {
		to++
	}
	if from == lo && to == hi && !settleWritten(s.cells[lo:hi]) {
		return
	}
	if to >= settleExtent(s.cells) {
		s.cells = s.cells[:from]
	} else {
		clear(s.cells[from:to])
		s.plain = false
	}
	s.modified(from, to)
}

// deleteCells applies DCH: n cells at the cursor go, the rest of the row
// shifts left. On the line's last row that is the rest of the line.
func (s *settler) deleteCells(n int) {
	s.unpend()
	c, re, ext := s.col, s.rowEnd(), settleExtent(s.cells)
	if c >= ext {
		return
	}
	lo := s.splitWide(c)
	if re >= ext {
		n = min(n, len(s.cells)-c)
		s.cells = append(s.cells[:c], s.cells[c+n:]...)
	} else {
		n = min(n, re-c)
		copy(s.cells[c:re], s.cells[c+n:re])
		clear(s.cells[re-n : re])
		s.plain = false
	}
	if c < len(s.cells) && s.cells[c] == settleCont { // its left half was deleted
		s.cells[c] = settleEmpty
	}
	s.modified(lo, re)
}

// insertCells applies ICH: n empty cells at the cursor push the rest of the
// row right; what goes past the row's end is lost.
func (s *settler) insertCells(n int) {
	s.unpend()
	c, re, old := s.col, s.rowEnd(), settleExtent(s.cells)
	if c >= old {
		return
	}
	lo := s.splitWide(c)
	n = min(n, re-c)
	end := min(old+n, re)
	s.extend(end)
	cut := s.cells[end-n] == settleCont // a wide character loses its right half off the end
	copy(s.cells[c+n:end], s.cells[c:end-n])
	clear(s.cells[c : c+n])
	if cut {
		s.cells[end-1] = settleEmpty
	}
	s.plain = false
	s.modified(lo, re)
}

// settleWritten reports whether any cell is written.
func settleWritten(cells []settleCell) bool {
	for _, v := range cells {
		if v != settleEmpty {
			return true
		}
	}
	return false
}

// settleExtent returns the number of cells up to the last written one.
func settleExtent(cells []settleCell) int {
	n := len(cells)
	for n > 0 && cells[n-1] == settleEmpty {
		n--
	}
	return n
}

// Lines.

// line returns line number i; numbers count from the first line ever written.
func (s *settler) line(i int) *settleLine { return &s.lines[i-s.base] }

// lastLine returns the number of the last line, where output goes on.
func (s *settler) lastLine() int { return s.base + len(s.lines) - 1 }

// touch marks line i touched in this epoch, starting its seen and match
// state when it is the first touch since the last read.
func (s *settler) touch(i int) *settleLine {
	l := s.line(i)
	if l.epoch != s.epoch {
		l.epoch = s.epoch
		l.seen = l.width // whatever it showed was read, or it is new and empty
		l.mlo, l.mhi = math.MaxInt32, 0
		l.flags = l.flags&settleHoles | settlePend // it joins the text: new neighbours
		s.unreadLines++
		s.unreadBytes += int(l.n) + 1
		s.dirtyFrom = min(s.dirtyFrom, i)
		s.mfrom = min(s.mfrom, i)
	}
	return l
}

// modified records that cells [lo, hi) of the cursor's line changed. Most
// writes only widen the changed range of a line already touched; that much
// is small enough to be inlined.
func (s *settler) modified(lo, hi int) {
	l := &s.lines[s.cur-s.base]
	if l.epoch != s.epoch || l.flags&settlePend == 0 || int32(lo) < l.seen {
		s.modifiedFirst(lo, hi)
		return
	}
	s.changed = true
	l.mlo, l.mhi = min(l.mlo, int32(lo)), max(l.mhi, int32(hi))
}

// modifiedFirst is modified for the first change since a read or a match.
func (s *settler) modifiedFirst(lo, hi int) {
	s.changed = true
	l := s.touch(s.cur)
	if lo < int(l.seen) {
		hi = max(hi, int(l.seen)) // what was seen there is no longer known to be
		l.seen = int32(lo)
	}
	if l.flags&settlePend == 0 {
		l.flags |= settlePend
		s.mfrom = min(s.mfrom, s.cur)
	}
	l.mlo = min(l.mlo, int32(lo))
	l.mhi = max(l.mhi, int32(min(hi, settleMaxCells)))
}

// lineFeed ends the line on the last line, and moves down a line elsewhere.
func (s *settler) lineFeed() {
	s.unpend()
	if next := s.rowStart() + s.w; next < settleExtent(s.cells) { // the line goes on below: down a row of it
		s.col = next
		return
	}
	if s.cur < s.lastLine() {
		s.moveTo(s.cur + 1)
		s.col = 0
		return
	}
	s.touch(s.cur) // ended by a line feed
	s.flush()
	if cap(s.cells) > 8<<10 && len(s.cells) < 1<<10 {
		s.cells = nil // give back what one very long line needed
	}
	s.newLine()
}

// newLine starts a new last line for the cursor, its predecessor ended and
// stored, dropping the oldest lines if that put the scrollback over its
// bound.
func (s *settler) newLine() {
	if s.charge > s.max {
		s.evict()
	}
	s.addLine()
	s.cur++
	s.cells, s.clusters, s.col, s.plain = s.cells[:0], s.clusters[:0], 0, true
}

// addLine appends an empty line, reusing the room evicted lines left at the
// front of the array before growing it.
func (s *settler) addLine() {
	if len(s.lines) == cap(s.lines) {
		if all := s.linesAt[:cap(s.linesAt)]; 2*len(s.lines) <= len(all) {
			s.lines = all[:copy(all, s.lines)]
		} else {
			s.linesAt = make([]settleLine, len(s.lines), 2*len(s.lines)+64)
			copy(s.linesAt, s.lines)
			s.lines = s.linesAt
		}
	}
	s.lines = append(s.lines, settleLine{})
	s.charge += settleLineCost
}

// wrap ends a line that reached settleMaxCells.
func (s *settler) wrap() { s.lineFeed() }

// up moves the cursor n rows up, in the column it is in, no further than
// settleMaxUp lines above the last line and never into evicted lines.
func (s *settler) up(n int) {
	s.unpend()
	row, c := s.col/s.w, s.col%s.w
	if n <= row {
		s.col -= n * s.w
		return
	}
	n -= row
	i, top := s.cur, max(s.lastLine()-settleMaxUp, s.base)
	for row = 0; n > 0 && i > top; {
		i--
		if rows := s.rows(i); n <= rows {
			row, n = rows-n, 0
		} else {
			n -= rows
		}
	}
	s.moveTo(i)
	s.col = row*s.w + c
}

// down moves the cursor n rows down among the lines there are.
func (s *settler) down(n int) {
	s.unpend()
	row, c := s.col/s.w, s.col%s.w
	rows := max(s.rows(s.cur), row+1)
	if n < rows-row {
		s.col += n * s.w
		return
	}
	n -= rows - 1 - row
	i, row := s.cur, rows-1
	for n > 0 && i < s.lastLine() {
		i++
		if rows := s.rows(i); n <= rows {
			row, n = n-1, 0
		} else {
			row, n = rows-1, n-rows
		}
	}
	s.moveTo(i)
	s.col = row*s.w + c
}

// rows returns the screen rows line i takes.
func (s *settler) rows(i int) int {
	n := int(s.line(i).width)
	if i == s.cur {
		n = settleExtent(s.cells)
	}
	return max((n+s.w-1)/s.w, 1)
}

// saveCursor applies DECSC and SCOSC.
func (s *settler) saveCursor() {
	s.saved, s.saveLine, s.saveCol, s.savePend = true, s.cur, s.col, s.pending
}

// restoreCursor applies DECRC and SCORC, back to a line only if the cursor
// may still go there.
func (s *settler) restoreCursor() {
	if !s.saved {
		return
	}
	if i := s.saveLine; i >= s.base && i >= s.lastLine()-settleMaxUp && i <= s.lastLine() {
		s.moveTo(i)
	}
	s.col, s.pending = s.saveCol, s.savePend
}

// moveTo makes line i the cursor's line.
func (s *settler) moveTo(i int) {
	if i == s.cur {
		return
	}
	s.flush()
	s.cur = i
	s.load()
}

// eraseBelow applies ED 0: the rest of the cursor's line is erased, and the
// lines below, now empty at the end of the text, are dropped.
func (s *settler) eraseBelow() {
	s.unpend()
	s.erase(s.col, settleMaxCells)
	last := s.lastLine()
	if s.cur == last {
		return
	}
	for i := s.cur + 1; i <= last; i++ {
		l := s.line(i)
		if l.epoch == s.epoch {
			s.unreadLines--
			s.unreadBytes -= int(l.n) + 1
			if l.flags&settleHit != 0 {
				s.mhits--
			}
		}
		s.charge -= int(l.n) + settleLineCost
		s.garbage += int(l.n)
	}
	s.lines = s.lines[:s.cur-s.base+1]
	s.pendBefore(s.cur) // text that ran on into the dropped lines ends here now
}

// pendBefore marks the last touched line at or before i pending, so a
// match spanning lines is checked again around it.
func (s *settler) pendBefore(i int) {
	if j := s.prevTouched(i + 1); j >= 0 {
		l := s.line(j)
		l.flags |= settlePend
		s.mfrom = min(s.mfrom, j)
	}
}

// evict drops the oldest lines while the scrollback is over its bound.
// Touched ones nobody read are counted as lost, for the next read to say so.
func (s *settler) evict() {
	k := 0
	for s.charge > s.max && s.base+k < s.cur {
		l := &s.lines[k]
		s.charge -= int(l.n) + settleLineCost
		s.garbage += int(l.n)
		if l.epoch == s.epoch {
			s.unreadLines--
			s.unreadBytes -= int(l.n) + 1
			s.lostLines++
			s.lostBytes += int(l.n) + 1
			if l.flags&settleHit != 0 {
				s.mhits--
			}
		}
		k++
	}
	s.lines = s.lines[k:]
	s.base += k
}

// flush stores the cursor's line in the arena, in place when it fits.
func (s *settler) flush() {
	if !s.changed {
		return
	}
	s.changed = false
	ext := settleExtent(s.cells)
	need := 0
	for _, c := range s.clusters {
		need += len(c)
	}
	s.reserve(4*ext + need)
	l := s.line(s.cur)
	start := len(s.arena)
	var holes bool
	if s.plain {
		s.arena = settleAppendPlain(s.arena, s.cells[:ext])
	} else {
		s.arena, holes = s.appendCells(s.arena, s.cells[:ext])
	}
	n := int32(len(s.arena) - start)
	switch {
	case l.n > 0 && int(l.off+l.n) == start: // last in the arena: grow or shrink in place
		s.arena = append(s.arena[:l.off], s.arena[start:]...)
	case n <= l.n: // fits where it was
		copy(s.arena[l.off:], s.arena[start:])
		s.arena = s.arena[:start]
		s.garbage += int(l.n - n)
	default:
		if s.cur != s.lastLine() {
			s.ordered = false
		}
		s.garbage += int(l.n)
		l.off = int32(start)
	}
	if l.epoch == s.epoch {
		s.unreadBytes += int(n - l.n)
	}
	s.charge += int(n - l.n)
	l.n, l.width = n, int32(ext)
	l.flags &^= settleHoles
	if holes {
		l.flags |= settleHoles
	}
}

// reserve makes room for need more arena bytes, compacting first so the
// arena stays within about twice the live text.
func (s *settler) reserve(need int) {
	if len(s.arena)+need <= cap(s.arena) {
		return
	}
	live := len(s.arena) - s.garbage
	size := max(cap(s.arena), 2*(live+need), 4096)
	if s.ordered && size == cap(s.arena) {
		w := int32(0)
		for i := range s.lines {
			l := &s.lines[i]
			copy(s.arena[w:], s.arena[l.off:l.off+l.n])
			l.off = w
			w += l.n
		}
		s.arena = s.arena[:w]
	} else {
		arena := make([]byte, 0, size)
		for i := range s.lines {
			l := &s.lines[i]
			arena = append(arena, s.arena[l.off:l.off+l.n]...)
			l.off = int32(len(arena)) - l.n
		}
		s.arena = arena
	}
	s.garbage = 0
	s.ordered = true
}

// load makes the cursor's line cells again, from its arena text.
func (s *settler) load() {
	l := s.line(s.cur)
	s.cells, s.clusters, s.changed = s.cells[:0], s.clusters[:0], false
	text := s.arena[l.off : l.off+l.n]
	s.plain = l.flags&settleHoles == 0
	for i := 0; i < len(text); {
		if b := text[i]; b < 0x80 {
			s.cells = append(s.cells, settleCell(b)) // NUL is settleEmpty
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		s.plain = false
		switch width.Rune(r) {
		case 0: // a combining mark: flush wrote it after its base
			k := len(s.cells) - 1
			for k > 0 && s.cells[k] == settleCont {
				k--
			}
			if k < 0 || s.cells[k] == settleEmpty {
				continue
			}
			b := utf8.AppendRune(s.appendCell(nil, s.cells[k], 0), r)
			s.clusters = append(s.clusters, string(b))
			s.cells[k] = settleGroup + settleCell(len(s.clusters)-1)
		case 2:
			s.cells = append(s.cells, settleCell(r), settleCont)
		default:
			s.cells = append(s.cells, settleCell(r))
		}
	}
}

// settleWidenASCII stores the bytes of run as cells, eight at a time.
func settleWidenASCII(dst []settleCell, run []byte) {
	dst = dst[:len(run)]
	k := 0
	for ; k+8 <= len(run); k += 8 {
		r, d := run[k:k+8:k+8], dst[k:k+8:k+8]
		d[0], d[1], d[2], d[3] = settleCell(r[0]), settleCell(r[1]), settleCell(r[2]), settleCell(r[3])
		d[4], d[5], d[6], d[7] = settleCell(r[4]), settleCell(r[5]), settleCell(r[6]), settleCell(r[7])
	}
	for ; k < len(run); k++ {
		dst[k] = settleCell(run[k])
	}
}

// settleAppendPlain appends the text of cells that are all printable ASCII, the
// hot path of every line feed.
func settleAppendPlain(dst []byte, cells []settleCell) []byte {
	n := len(dst)
	dst = dst[:n+len(cells)]
	out := dst[n:]
	// Eight at a time: the compiler keeps them in registers with one bounds
	// check, about twice the speed of the plain loop.
	i := 0
	for ; i+8 <= len(cells); i += 8 {
		c, o := cells[i:i+8:i+8], out[i:i+8:i+8]
		o[0], o[1], o[2], o[3] = byte(c[0]), byte(c[1]), byte(c[2]), byte(c[3])
		o[4], o[5], o[6], o[7] = byte(c[4]), byte(c[5]), byte(c[6]), byte(c[7])
	}
	for ; i < len(cells); i++ {
		out[i] = byte(cells[i])
	}
	return dst
}

// appendCells appends the text of cells, NUL for each empty cell, and
// reports whether there was one. Cells under 0x80 are their own byte, so
// the usual line is copied in one pass; one with other characters is
// written again, cell by cell.
func (s *settler) appendCells(dst []byte, cells []settleCell) ([]byte, bool) {
	n := len(dst)
	dst = dst[:n+len(cells)]
	out := dst[n:]
	var or settleCell
	holes := 0
	for i, v := range cells {
		out[i] = byte(v)
		or |= v
		if v == settleEmpty {
			holes++
		}
	}
	if or < 0x80 {
		return dst, holes > 0
	}
	dst = dst[:n]
	for _, v := range cells {
		dst = s.appendCell(dst, v, 0)
	}
	return dst, holes > 0
}

// appendCell appends the text of one cell, empty as the byte given.
func (s *settler) appendCell(dst []byte, v settleCell, empty byte) []byte {
	switch {
	case v == settleEmpty:
		return append(dst, empty)
	case v < 0x80:
		return append(dst, byte(v))
	case v < settleCont:
		return utf8.AppendRune(dst, rune(v))
	case v == settleCont:
		return dst
	}
	return append(dst, s.clusters[v-settleGroup]...)
}

// sync brings the cursor's line up to date in the arena.
func (s *settler) sync() {
	if s.lines != nil {
		s.flush()
	}
}

// text returns line i's text as read shows it, empty cells as spaces. The
// result may share memory the next call reuses.
func (s *settler) text(i int) []byte {
	l := s.line(i)
	t := s.arena[l.off : l.off+l.n]
	if l.flags&settleHoles == 0 {
		return t
	}
	s.buf = append(s.buf[:0], t...)
	for k, b := range s.buf {
		if b == 0 {
			s.buf[k] = ' '
		}
	}
	return s.buf
}

// touched reports whether line i changed or was ended since the last read.
func (s *settler) touched(i int) bool { return s.line(i).epoch == s.epoch }

// nextTouched returns the first touched line after i, or -1.
func (s *settler) nextTouched(i int) int {
	for i = max(i+1, s.base); i <= s.lastLine(); i++ {
		if s.touched(i) {
			return i
		}
	}
	return -1
}

// prevTouched returns the last touched line before i, or -1.
func (s *settler) prevTouched(i int) int {
	for i = min(i, s.lastLine()+1) - 1; i >= s.base; i-- {
		if s.touched(i) {
			return i
		}
	}
	return -1
}

// firstTouched returns the first touched line, or -1.
func (s *settler) firstTouched() int {
	if s.lines == nil || s.unreadLines == 0 {
		return -1
	}
	return s.nextTouched(max(s.dirtyFrom, s.base) - 1)
}

// Reading.

// read returns the text of every line touched since the last read, joined
// with "\n", and marks everything read. Over limit bytes (limit > 0), a
// head and a tail are kept around one marker line saying what was left out.
func (s *settler) read(limit int) string {
	if s.lines == nil {
		return ""
	}
	s.sync()
	defer s.markRead()
	if s.unreadLines == 0 && s.lostLines == 0 {
		return ""
	}
	total := max(s.unreadBytes-1, 0) // joined: no separator after the last line
	if s.lostLines == 0 && (limit <= 0 || total <= limit) {
		var b strings.Builder
		b.Grow(total)
		for i, first := s.firstTouched(), true; i >= 0; i, first = s.nextTouched(i), false {
			if !first {
				b.WriteByte('\n')
			}
			b.Write(s.text(i))
		}
		return b.String()
	}
	return s.elide(limit, total)
}

// elide builds a read's result when it is over limit, or lines were lost.
// Only the lines kept are visited; the figures come from the counters.
func (s *settler) elide(limit, total int) string {
	allBytes, allLines := s.lostBytes+total, s.lostLines+s.unreadLines
	room := total
	if limit > 0 {
		room = limit - len(settleMarker(allBytes, allLines)) - 2
	}
	headRoom := room / 2
	if s.lostLines > 0 { // the oldest text is gone: say so first, then the newest
		headRoom = 0
	}
	var b strings.Builder
	b.Grow(max(room, 0) + 64)
	h, headLines, stop := s.head(&b, headRoom)
	tail, t := s.tailPieces(room-headRoom, stop)
	tailLines := len(tail)
	if tailLines > 0 && tail[tailLines-1].from > 0 {
		tailLines--
	}
	if h > 0 || headLines > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(settleMarker(allBytes-h-t, allLines-headLines-tailLines))
	for k := len(tail) - 1; k >= 0; k-- {
		b.WriteByte('\n')
		b.Write(s.text(tail[k].line)[tail[k].from:])
	}
	return b.String()
}

// The cut rule for a read's head and tail: whole lines while they fit, then
// part of the next one, cut at a character, if a quarter of the room or
// more would otherwise go unused.

// head writes the oldest touched lines that fit in room to b, and returns
// the bytes written, the lines written whole, and the first line not.
func (s *settler) head(b *strings.Builder, room int) (n, lines, stop int) {
	for stop = s.firstTouched(); stop >= 0 && room > 0; stop = s.nextTouched(stop) {
		t := s.text(stop)
		sep := min(lines, 1)
		if n+sep+len(t) > room {
			if cut := room - n - sep; cut >= room/4 {
				for cut > 0 && !utf8.RuneStart(t[cut]) {
					cut--
				}
				if cut > 0 {
					b.WriteString("\n"[:sep])
					b.Write(t[:cut])
					n += sep + cut
				}
			}
			break
		}
		b.WriteString("\n"[:sep])
		b.Write(t)
		n += sep + len(t)
		lines++
	}
	return n, lines, stop
}

// settlePiece is a line a read's tail ends with, from a byte on.
type settlePiece struct{ line, from int }

// tailPieces returns the newest touched lines from stop on that fit in
// room, newest first, and their bytes.
func (s *settler) tailPieces(room, stop int) (pieces []settlePiece, n int) {
	for i := s.lastLine() + 1; room > 0; {
		if i = s.prevTouched(i); i < 0 || i < stop {
			break
		}
		t := s.text(i)
		sep := min(len(pieces), 1)
		if n+sep+len(t) > room {
			if cut := room - n - sep; cut >= room/4 {
				from := len(t) - cut
				for from < len(t) && !utf8.RuneStart(t[from]) {
					from++
				}
				if from < len(t) {
					pieces = append(pieces, settlePiece{i, from})
					n += sep + len(t) - from
				}
			}
			break
		}
		pieces = append(pieces, settlePiece{i, 0})
		n += sep + len(t)
	}
	return pieces, n
}

// settleMarker is the line that stands for text a read left out.
func settleMarker(bytes, lines int) string {
	return "[... " + strconv.Itoa(bytes) + " bytes in " + strconv.Itoa(lines) + " lines elided ...]"
}

// markRead starts a new epoch: nothing is touched, everything is seen.
func (s *settler) markRead() {
	s.epoch++
	s.unreadLines, s.unreadBytes = 0, 0
	s.lostLines, s.lostBytes = 0, 0
	s.dirtyFrom, s.mfrom = settleNone, settleNone
	s.mhits = 0
}

// unread reports whether read would return anything.
func (s *settler) unread() bool {
	switch {
	case s.lostLines > 0 || s.unreadLines > 1:
		return true
	case s.unreadLines == 0:
		return false
	}
	i := s.firstTouched() // the one touched line: is it empty?
	if i == s.cur {
		return settleExtent(s.cells) > 0
	}
	return i >= 0 && s.line(i).n > 0
}

// tail returns the last n lines of the settled scrollback, read or not; the
// last line is left out while it is empty.
func (s *settler) tail(n int) []string {
	if s.lines == nil || n <= 0 {
		return nil
	}
	s.sync()
	last := s.lastLine()
	if s.line(last).n == 0 {
		last--
	}
	var out []string
	for i := max(last-n+1, s.base); i <= last; i++ {
		out = append(out, string(s.text(i)))
	}
	return out
}

// scrollback returns every settled line kept, joined with "\n".
func (s *settler) scrollback() string {
	return strings.Join(s.tail(len(s.lines)), "\n")
}

// Matching.

// match reports whether lit occurs in the text read would return now, not
// counting an occurrence that lies wholly in what an earlier read returned.
// Occurrences are tracked per line, and a call rescans only what changed
// since the previous call for the same literal. An occurrence spanning
// lines is always new: no read returned that line break next to those lines.
func (s *settler) match(lit string) bool {
	if lit == "" {
		return s.unread()
	}
	if s.lines == nil {
		return false
	}
	if lit != s.mlit || s.mepoch != s.epoch {
		s.mlit, s.mlitb, s.mparts, s.mepoch, s.mhits = lit, []byte(lit), nil, s.epoch, 0
		if strings.Contains(lit, "\n") {
			s.mparts = bytes.Split(s.mlitb, []byte("\n"))
		}
		for i := s.firstTouched(); i >= 0; i = s.nextTouched(i) {
			l := s.line(i)
			l.flags &^= settleHit | settlePend
			l.mlo, l.mhi = math.MaxInt32, 0
			s.setHit(i, s.occurs(i, 0, settleMaxCells))
		}
		s.mfrom = settleNone
		return s.mhits > 0
	}
	checked := s.base - 1 // lines before this one are done, for literals spanning lines
	for i := s.nextTouched(max(s.mfrom, s.base) - 1); i >= 0; i = s.nextTouched(i) {
		l := s.line(i)
		if l.flags&settlePend == 0 {
			continue
		}
		lo, hi := int(l.mlo), int(l.mhi)
		l.flags &^= settlePend
		l.mlo, l.mhi = math.MaxInt32, 0
		if s.mparts == nil {
			if l.flags&settleHit != 0 {
				lo, hi = 0, settleMaxCells
			}
			s.setHit(i, s.occurs(i, lo, hi))
			continue
		}
		// An occurrence starting up to len(mparts)-1 touched lines back may have changed.
		j := i
		for k := 1; k < len(s.mparts); k++ {
			p := s.prevTouched(j)
			if p <= checked {
				break
			}
			j = p
		}
		for ; j >= 0 && j <= i; j = s.nextTouched(j) {
			s.setHit(j, s.spans(j))
		}
		checked = i
	}
	s.mfrom = settleNone
	return s.mhits > 0
}

// setHit records whether a new occurrence starts in line i, keeping mhits.
func (s *settler) setHit(i int, hit bool) {
	l := s.line(i)
	if was := l.flags&settleHit != 0; was != hit {
		l.flags ^= settleHit
		if hit {
			s.mhits++
		} else {
			s.mhits--
		}
	}
}

// occurs reports whether a new occurrence of a one-line literal lies in
// line i near cells [lo, hi); when it did not hold one before, any new
// one must be there.
func (s *settler) occurs(i, lo, hi int) bool {
	if s.mparts != nil {
		return s.spans(i)
	}
	lit := s.mlit
	if i == s.cur {
		return s.occursInCells(max(lo-len(lit), 0), min(hi+len(lit), settleMaxCells))
	}
	l := s.line(i)
	t := s.text(i)
	seen := settleSeenBytes(t, int(l.seen))
	for off := 0; ; off++ {
		k := bytes.Index(t[off:], s.mlitb)
		if k < 0 {
			return false
		}
		if off += k; off+len(lit) > seen {
			return true
		}
	}
}

// settleSeenBytes returns how many bytes of text the first n cells take,
// combining marks on the last of them included.
func settleSeenBytes(text []byte, n int) int {
	i := 0
	for i < len(text) && i < n && text[i] < 0x80 {
		i++
	}
	for cells := i; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		w := width.Rune(r)
		if r < 0x20 {
			w = 1 // NUL, an empty cell
		}
		if cells >= n && w > 0 {
			break
		}
		cells += w
		i += size
	}
	return i
}

// occursInCells looks for a new occurrence of the literal in cells [lo, hi)
// of the cursor's line, rendering only those.
func (s *settler) occursInCells(lo, hi int) bool {
	hi = min(hi, settleExtent(s.cells))
	for lo > 0 && lo < hi && s.cells[lo] == settleCont {
		lo--
	}
	if lo >= hi {
		return false
	}
	s.buf, s.cellOf = s.buf[:0], s.cellOf[:0]
	for c := lo; c < hi; c++ {
		s.buf = s.appendCell(s.buf, s.cells[c], ' ')
		for len(s.cellOf) < len(s.buf) {
			s.cellOf = append(s.cellOf, int32(c))
		}
	}
	seen := s.line(s.cur).seen
	for off := 0; ; off++ {
		k := bytes.Index(s.buf[off:], s.mlitb)
		if k < 0 {
			return false
		}
		if off += k; s.cellOf[off+len(s.mlit)-1] >= seen {
			return true
		}
	}
}

// spans reports whether an occurrence of a literal spanning lines starts
// in line i: it ends with the first part, the next touched lines are the
// middle parts, and the one after starts with the last part.
func (s *settler) spans(i int) bool {
	parts := s.mparts
	if !bytes.HasSuffix(s.lineText(i), parts[0]) {
		return false
	}
	for k, p := range parts[1:] {
		if i = s.nextTouched(i); i < 0 {
			return false
		}
		t := s.lineText(i)
		if k < len(parts)-2 && len(t) != len(p) || !bytes.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// lineText is text for any line, the cursor's rendered from its cells.
func (s *settler) lineText(i int) []byte {
	if i != s.cur || !s.changed {
		return s.text(i)
	}
	s.buf = s.buf[:0]
	for _, v := range s.cells[:settleExtent(s.cells)] {
		s.buf = s.appendCell(s.buf, v, ' ')
	}
	return s.buf
}
