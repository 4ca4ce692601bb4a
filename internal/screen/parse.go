package screen

import (
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

// pstate is where the pre-parser stands between bytes; everything it needs
// to resume lives in parser, so input may be split anywhere.
type pstate uint8

const (
	sGround pstate = iota
	sEsc           // after ESC, intermediates collected in seq
	sCSI           // after CSI, parameters and intermediates in seq
	sOSC           // inside an OSC string
	sStr           // inside a DCS, SOS, PM or APC string: ignored
	sStrEsc        // ESC inside a string: ST if '\' follows
)

// Bounds on what one sequence may collect; a longer one is consumed whole
// and dropped.
const (
	maxSeq = 256
	// maxHeld bounds the plain text a Write may hold back.
	maxHeld = 64 << 10
	maxOSC  = 512
)

type parser struct {
	st     pstate
	oscStr bool   // sStrEsc: the string is an OSC
	seq    []byte // the sequence being collected
	over   bool   // seq outgrew its bound: drop the sequence
	u      [utf8.UTFMax]byte
	un     int // bytes of a partial UTF-8 rune carried to the next byte
	// scanEnd is the index in the current input up to which no plain-text
	// run is worth scanning for again.
	scanEnd int
}

// feed runs p through the pre-parser, queueing what vt10x should see.
func (s *Screen) feed(p []byte) {
	s.scanEnd = 0
	for i := 0; i < len(p); {
		if s.st == sGround {
			i = s.ground(p, i)
			continue
		}
		if s.seqByte(p[i]) {
			i++
		}
	}
}

// ground handles text and controls from p[i], returning where it stopped.
func (s *Screen) ground(p []byte, i int) int {
	b := p[i]
	if s.un > 0 {
		if b >= 0x80 {
			s.u[s.un] = b
			s.un++
			s.drainRune(false)
			return i + 1
		}
		s.drainRune(true)
	}
	if i >= s.scanEnd && (b >= 0x20 && b < 0x7f || b == '\r' || b == '\n') {
		s.scanEnd = i
		j := s.skipPlain(p, i)
		if s.holding && s.scanEnd == len(p) && len(p)-j <= maxHeld {
			// The run reaches the end of the input: what is left may
			// scroll away in the next Write, so parse it only when that
			// comes or someone looks.
			s.held = append(s.held[:0], p[j:]...)
			return len(p)
		}
		if j != i {
			return j
		}
	}
	switch {
	case b >= 0x20 && b < 0x7f:
		j := i + 1
		for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
			j++
		}
		if s.insert || s.phantom || s.protect {
			for _, c := range p[i:j] {
				s.put(rune(c), 1)
			}
		} else {
			s.out = append(s.out, p[i:j]...)
			s.last, s.lastW, s.lastOK = rune(p[j-1]), 1, true
			s.mayWrap = true
		}
		return j
	case b < 0x20 || b == 0x7f:
		s.control(b)
		return i + 1
	}
	r, n := utf8.DecodeRune(p[i:])
	if r != utf8.RuneError || n > 1 {
		s.printRune(r)
		return i + n
	}
	if utf8.FullRune(p[i:]) {
		s.printRune(utf8.RuneError)
		return i + 1
	}
	// The rune continues in a later Write: carry it.
	s.u[0] = b
	s.un = 1
	return i + 1
}

// drainRune decodes the carried bytes as the unsplit input would have been
// decoded: each undecodable byte becomes one U+FFFD. With end set, nothing
// more can complete the rune.
func (s *Screen) drainRune(end bool) {
	for s.un > 0 {
		if !end && !utf8.FullRune(s.u[:s.un]) {
			return
		}
		r, n := utf8.DecodeRune(s.u[:s.un])
		s.printRune(r)
		copy(s.u[:], s.u[n:s.un])
		s.un -= n
	}
}

// control executes a C0 control in ground state or inside a sequence.
func (s *Screen) control(b byte) {
	switch b {
	case '\t':
		// At the last column with a wrap pending, xterm's tab stays put
		// and keeps the wrap; vt10x's would cancel it.
		if !s.pendingWrap() {
			s.out = append(s.out, b)
		}
		s.lastOK = false
	case '\b':
		if s.revWrap && s.autowrap {
			s.cursorBack(1)
		} else {
			s.out = append(s.out, b)
		}
		s.lastOK, s.mayWrap, s.phantom = false, false, false
	case '\n', '\v', '\f', '\r':
		s.out = append(s.out, b)
		s.lastOK, s.mayWrap, s.phantom = false, false, false
	case 0x1b:
		// lastOK survives until the sequence is known: REP needs it.
		s.st = sEsc
		s.seq = s.seq[:0]
		s.over = false
	case 0x18, 0x1a: // CAN, SUB: abort any sequence
		s.st = sGround
		s.lastOK, s.phantom = false, false
	case 0x07, 0x00, 0x7f:
		// BEL, NUL and DEL change nothing on screen.
	default:
		// SO/SI would select G1, which is never designated here; the
		// rest are not terminal functions.
		s.lastOK = false
	}
}

// seqByte handles one byte inside an escape sequence or string. It returns
// false when the byte must be processed again in ground state.
func (s *Screen) seqByte(b byte) bool {
	switch s.st {
	case sEsc:
		switch {
		case b < 0x20:
			s.control(b)
		case b < 0x30:
			s.collect(b, 4)
		case b < 0x7f:
			s.st = sGround
			s.escDispatch(b)
		case b == 0x7f:
		default:
			s.st = sGround
			return false
		}
	case sCSI:
		switch {
		case b < 0x20:
			s.control(b)
		case b < 0x40:
			s.collect(b, maxSeq)
		case b < 0x7f:
			s.st = sGround
			if !s.over {
				s.csiDispatch(b)
			}
		case b == 0x7f:
		default:
			s.st = sGround
			return false
		}
	case sOSC, sStr:
		switch b {
		case 0x1b:
			s.oscStr = s.st == sOSC
			s.st = sStrEsc
		case 0x18, 0x1a:
			s.st = sGround
		case 0x07:
			if s.st == sOSC {
				s.st = sGround
				s.oscDispatch()
			}
		default:
			if s.st == sOSC && b >= 0x20 {
				s.collect(b, maxOSC)
			}
		}
	case sStrEsc:
		s.st = sGround
		if b == '\\' {
			if s.oscStr {
				s.oscDispatch()
			}
			return true
		}
		// Any other ESC ends the string unfinished (dropped) and starts a
		// new sequence, as in xterm.
		s.seq = s.seq[:0]
		s.over = false
		s.st = sEsc
		return false
	}
	return true
}

func (s *Screen) collect(b byte, limit int) {
	if len(s.seq) >= limit {
		s.over = true
		return
	}
	s.seq = append(s.seq, b)
}

// escDispatch handles ESC [intermediates] final. Only what vt10x handles
// correctly is passed on; the rest is consumed here.
func (s *Screen) escDispatch(f byte) {
	inter := s.seq
	if s.over {
		s.lastOK, s.phantom = false, false
		return
	}
	if len(inter) == 0 && f == '[' {
		s.st = sCSI
		s.seq = s.seq[:0]
		return
	}
	s.lastOK, s.phantom = false, false
	if len(inter) == 0 {
		switch f {
		case ']':
			s.st = sOSC
			s.seq = s.seq[:0]
		case 'P', 'X', '^', '_':
			s.st = sStr
		case '7':
			s.saveCursor()
		case '8':
			s.restoreCursor()
		case 'D':
			// IND: vt10x keeps a pending wrap when it scrolls; a line
			// feed (without LNM) is the same move and cancels it.
			if s.lnm {
				s.clearWrap()
				s.out = append(s.out, 0x1b, f)
			} else {
				s.out = append(s.out, '\n')
			}
			s.mayWrap = false
		case 'M':
			s.clearWrap()
			s.out = append(s.out, 0x1b, f)
		case 'E', 'H':
			s.out = append(s.out, 0x1b, f)
		case '=', '>': // DECKPAM, DECKPNM
			s.setKeyModes(s.appCursor, f == '=')
		case 'c':
			s.ris()
		case 'Z':
			s.reply(da1)
		}
		return
	}
	if len(inter) != 1 {
		return
	}
	switch inter[0] {
	case '(':
		// G0 is the only set vt10x uses; any set but DEC graphics is shown
		// as ASCII.
		if f != '0' {
			f = 'B'
		}
		s.out = append(s.out, 0x1b, '(', f)
	case '#':
		if f == '8' {
			// DECALN also resets the margins and homes the cursor.
			s.out = append(s.out, "\x1b#8\x1b[r"...)
			s.top, s.bottom = 0, s.rows-1
		}
	}
}

// oscDispatch passes the OSC commands vt10x implements (titles, colours and
// their queries); others (hyperlinks, clipboard, shell marks) are dropped.
func (s *Screen) oscDispatch() {
	s.lastOK = false
	if s.over {
		return
	}
	ps := 0
	i := 0
	for ; i < len(s.seq) && s.seq[i] >= '0' && s.seq[i] <= '9' && i < 4; i++ {
		ps = ps*10 + int(s.seq[i]-'0')
	}
	if i == 0 || i < len(s.seq) && s.seq[i] != ';' {
		return
	}
	switch ps {
	case 0, 1, 2, 4, 10, 11, 104:
		s.out = append(s.out, 0x1b, ']')
		s.out = append(s.out, s.seq...)
		s.out = append(s.out, 0x07)
	}
}

func (s *Screen) reply(r string) {
	s.flush() // replies vt10x owes for earlier bytes come first
	s.dst = append(s.dst, r...)
}

// Replies to device attribute queries: a VT220-class terminal with ANSI
// colour (DA1), and a VT220 of firmware 10 (DA2) — claiming to be a
// particular xterm would invite xterm-only queries nobody answers.
const (
	da1 = "\x1b[?62;22c"
	da2 = "\x1b[>1;10;0c"
)

// printRune prints a decoded rune of any width.
func (s *Screen) printRune(r rune) {
	switch {
	case r >= 0x80 && r < 0xa0:
		// C1 controls arrive here only UTF-8 encoded; like other modern
		// terminals, ignore them rather than print or obey them.
		s.lastOK = false
		return
	case r >= sentinelBase:
		r = utf8.RuneError // the range is ours: never let a program forge it
	}
	w := width.Rune(r)
	if w == 0 {
		s.combine(r)
		return
	}
	s.put(r, w)
}

// put prints r, w cells wide, at the cursor. A wide rune is followed by the
// wideTail placeholder so vt10x, which has no widths, advances two cells.
func (s *Screen) put(r rune, w int) {
	if s.phantom {
		s.out = append(s.out, '\r', '\n')
		s.phantom = false
	}
	tail := w == 2
	if s.insert || w == 2 {
		c := s.cursor()
		wrapNext := c.State&cursorWrapNext != 0
		if w == 2 && c.X >= s.cols-1 {
			switch {
			case !s.autowrap:
				tail = false
			case !wrapNext:
				// xterm wraps a wide character that doesn't fit in the
				// last column, leaving that column blank.
				s.out = append(s.out, ' ')
				wrapNext = true
			}
		}
		if s.insert {
			if wrapNext && s.autowrap {
				s.out = append(s.out, '\r', '\n')
			}
			s.out = appendCSI(s.out, '@', w)
		}
	}
	if s.protect {
		r = s.clusters.protect(r, w)
		s.anyProt = true
	}
	s.out = utf8.AppendRune(s.out, r)
	if tail {
		s.out = utf8.AppendRune(s.out, wideTail)
	}
	s.last, s.lastW, s.lastOK = r, w, true
	s.mayWrap = true
}

// pendingWrap reports whether vt10x has a wrap pending: the last column was
// just written and the next character goes to the next line.
func (s *Screen) pendingWrap() bool {
	if !s.mayWrap {
		return false
	}
	c := s.cursor()
	s.mayWrap = c.State&cursorWrapNext != 0
	return s.mayWrap
}

// clearWrap cancels a pending wrap without moving the cursor, as xterm's
// erase, insert and index functions do and vt10x's don't.
func (s *Screen) clearWrap() {
	if s.pendingWrap() {
		s.out = append(s.out, "\x1b[C"...) // at the last column: stays
		s.mayWrap = false
	}
}

// combine attaches a zero-width rune to the character printed just before
// it by re-printing that cell as a cluster rune.
func (s *Screen) combine(mark rune) {
	if !s.lastOK {
		s.combineBefore(mark) // after a move or a sequence: the character before the cursor
		return
	}
	cl, ok := s.clusters.add(s.last, mark, s.lastW)
	if !ok {
		return
	}
	c := s.cursor()
	back := s.lastW
	if c.State&cursorWrapNext != 0 {
		back--
	}
	if c.X-back < 0 {
		return
	}
	for k := 0; k < back; k++ {
		s.out = append(s.out, '\b')
	}
	if back == 0 {
		// The cell is under the cursor at the last column: CUF clears the
		// pending wrap without moving.
		s.out = append(s.out, "\x1b[C"...)
	}
	s.out = utf8.AppendRune(s.out, cl)
	if s.lastW == 2 {
		s.out = utf8.AppendRune(s.out, wideTail)
	}
	s.last = cl
	s.mayWrap = true
}
