package screen

import (
	"strconv"

	"github.com/hinshun/vt10x"
)

// maxParams is how many CSI parameters are kept; xterm keeps about as many.
const maxParams = 32

// maxParam saturates parameter values so no arithmetic on them overflows
// and no loop in vt10x runs long; each use clamps further to its meaning.
const maxParam = 9999

// csiArgs is a parsed CSI sequence.
type csiArgs struct {
	prefix byte // one of < = > ? or 0
	inter  byte // the one intermediate byte, or 0
	n      int
	v      [maxParams]int // -1 when empty
	sub    [maxParams]bool
}

// parseCSI parses seq (everything between CSI and the final byte). It
// reports false for malformed sequences, which xterm ignores.
func parseCSI(seq []byte, a *csiArgs) bool {
	*a = csiArgs{}
	i := 0
	if len(seq) > 0 && seq[0] >= 0x3c && seq[0] <= 0x3f {
		a.prefix = seq[0]
		i = 1
	}
	cur, any, sub := -1, false, false
	push := func() {
		if a.n < maxParams {
			a.v[a.n] = cur
			a.sub[a.n] = sub
			a.n++
		}
	}
	for ; i < len(seq); i++ {
		c := seq[i]
		switch {
		case c >= '0' && c <= '9':
			if a.inter != 0 {
				return false
			}
			if cur < 0 {
				cur = 0
			}
			cur = min(cur*10+int(c-'0'), maxParam)
			any = true
		case c == ';' || c == ':':
			if a.inter != 0 {
				return false
			}
			push()
			cur, any, sub = -1, true, c == ':'
		case c >= 0x3c && c <= 0x3f:
			return false
		default: // intermediate 0x20-0x2f
			if a.inter != 0 {
				return false
			}
			a.inter = c
		}
	}
	if any {
		push()
	}
	return true
}

// arg returns parameter i, or -1 when absent or empty.
func (a *csiArgs) arg(i int) int {
	if i >= a.n {
		return -1
	}
	return a.v[i]
}

// count returns parameter i as a count: absent, empty and 0 all mean 1.
func (a *csiArgs) count(i int) int { return max(a.arg(i), 1) }

func (a *csiArgs) hasSub() bool {
	for i := 0; i < a.n; i++ {
		if a.sub[i] {
			return true
		}
	}
	return false
}

// csiDispatch handles CSI seq final: it rewrites what vt10x handles into a
// canonical form with clamped parameters, does what vt10x gets wrong
// itself, answers queries, and drops the rest.
func (s *Screen) csiDispatch(f byte) {
	var a csiArgs
	lastOK, phantom := s.lastOK, s.phantom
	s.lastOK, s.phantom = false, false
	if !parseCSI(s.seq, &a) {
		return
	}
	if f == 'm' && a.prefix == 0 && a.inter == 0 {
		s.phantom = phantom
		s.sgr(&a)
		return
	}
	if a.hasSub() {
		return
	}
	if a.inter != 0 {
		s.csiInter(&a, f)
		return
	}
	switch a.prefix {
	case '?':
		switch f {
		case 'h', 'l':
			for i := 0; i < a.n; i++ {
				s.decset(a.v[i], f == 'h')
			}
		case 'J', 'K': // DECSED, DECSEL
			s.selectiveErase(f, a.arg(0))
		case 'n':
			if a.arg(0) == 6 {
				row, col := s.cpr()
				s.reply("\x1b[?" + strconv.Itoa(row) + ";" + strconv.Itoa(col) + "R")
			}
		}
		return
	case '>':
		if f == 'c' && a.arg(0) <= 0 {
			s.reply(da2)
		}
		return
	case 0:
	default:
		return
	}
	cols, rows := s.cols, s.rows
	switch f {
	case '@': // ICH
		s.clearWrap()
		s.out = appendCSI(s.out, '@', min(a.count(0), cols))
	case 'A': // CUU
		s.vmove(-min(a.count(0), rows), false)
	case 'B': // CUD
		s.vmove(min(a.count(0), rows), false)
	case 'e': // VPR: not held by the margins
		s.out = appendCSI(s.out, 'B', min(a.count(0), rows))
	case 'C', 'a': // CUF, HPR
		s.out = appendCSI(s.out, 'C', min(a.count(0), cols))
	case 'D': // CUB
		if s.revWrap && s.autowrap {
			s.cursorBack(min(a.count(0), cols*rows))
		} else {
			s.out = appendCSI(s.out, 'D', min(a.count(0), cols))
		}
	case 'E': // CNL
		s.vmove(min(a.count(0), rows), true)
	case 'F': // CPL
		s.vmove(-min(a.count(0), rows), true)
	case 'G', '`': // CHA, HPA
		s.out = appendCSI(s.out, 'G', min(a.count(0), cols))
	case 'H', 'f': // CUP, HVP
		s.out = appendCSI(s.out, 'H', min(a.count(0), rows), min(a.count(1), cols))
	case 'd': // VPA
		s.out = appendCSI(s.out, 'd', min(a.count(0), rows))
	case 'I': // CHT: like HT, nothing while a wrap is pending
		s.phantom = phantom
		if !phantom && !s.pendingWrap() {
			s.out = appendCSI(s.out, f, min(a.count(0), cols))
		}
	case 'Z': // CBT
		// xterm moves back but keeps a pending wrap: the next character
		// still goes to the start of the next line.
		s.phantom = phantom || s.pendingWrap()
		s.out = appendCSI(s.out, f, min(a.count(0), cols))
	case 'J', 'K':
		s.erase(f, a.arg(0))
	case 'L', 'M': // IL, DL: xterm also moves to the first column
		c := s.cursor()
		if c.Y >= s.top && c.Y <= s.bottom {
			s.out = appendCSI(s.out, f, min(a.count(0), rows))
			s.out = append(s.out, '\r')
		}
	case 'P': // DCH
		s.clearWrap()
		s.out = appendCSI(s.out, 'P', min(a.count(0), cols))
	case 'X': // ECH
		s.clearWrap()
		s.out = appendCSI(s.out, 'X', min(a.count(0), cols))
	case 'S', 'T': // SU, SD (with more parameters, T is mouse tracking)
		if a.n <= 1 {
			s.out = appendCSI(s.out, f, min(a.count(0), rows))
		}
	case 'b': // REP
		if lastOK {
			s.lastOK = true
			s.rep(a.count(0))
		}
	case 'c': // DA1
		if a.arg(0) <= 0 {
			s.reply(da1)
		}
	case 'g': // TBC
		switch a.arg(0) {
		case -1, 0:
			s.out = appendCSI(s.out, 'g', 0)
		case 3:
			s.out = appendCSI(s.out, 'g', 3)
		}
	case 'h', 'l':
		for i := 0; i < a.n; i++ {
			switch a.v[i] {
			case 4: // IRM: vt10x only records it; done in put
				s.insert = f == 'h'
			case 20: // LNM
				s.lnm = f == 'h'
				s.out = appendCSI(s.out, f, 20)
			}
		}
	case 'n':
		switch a.arg(0) {
		case 5:
			s.reply("\x1b[0n")
		case 6:
			row, col := s.cpr()
			s.reply("\x1b[" + strconv.Itoa(row) + ";" + strconv.Itoa(col) + "R")
		}
	case 'r': // DECSTBM; xterm ignores a region of fewer than two rows
		top := a.count(0)
		bot := a.arg(1)
		if bot <= 0 || bot > rows {
			bot = rows
		}
		if top < bot {
			s.out = appendCSI(s.out, 'r', top, bot)
			s.top, s.bottom = top-1, bot-1
		}
	case 's':
		if a.n == 0 {
			s.saveCursor()
		}
	case 'u':
		if a.n == 0 {
			s.restoreCursor()
		}
	case 't':
		if a.arg(0) == 18 {
			s.reply("\x1b[8;" + strconv.Itoa(rows) + ";" + strconv.Itoa(cols) + "t")
		}
	}
}

// csiInter handles the few sequences with an intermediate byte that change
// the screen: scroll left/right and insert/delete columns, which vt10x
// would misread as ICH or CUU.
func (s *Screen) csiInter(a *csiArgs, f byte) {
	if a.inter == '$' && f == 'p' && (a.prefix == 0 || a.prefix == '?') {
		s.decrqm(a.arg(0), a.prefix == '?')
		return
	}
	if a.prefix != 0 {
		return
	}
	n := min(a.count(0), s.cols)
	switch {
	case a.inter == ' ' && f == '@': // SL
		s.shiftColumns(n, false, 'P')
	case a.inter == ' ' && f == 'A': // SR
		s.shiftColumns(n, false, '@')
	case a.inter == '\'' && f == '}': // DECIC
		s.shiftColumns(n, true, '@')
	case a.inter == '\'' && f == '~': // DECDC
		s.shiftColumns(n, true, 'P')
	case a.inter == '!' && f == 'p': // DECSTR
		s.softReset()
	case a.inter == '"' && f == 'q': // DECSCA: 1 protects, 0 and 2 do not
		s.protect = a.arg(0) == 1
	}
}

// decrqm answers a mode query (DECRQM): 1 set, 2 reset, 0 for modes this
// screen doesn't know. Libraries probing for features wait for the answer.
func (s *Screen) decrqm(mode int, private bool) {
	state := 0
	set := func(b bool) {
		state = 2
		if b {
			state = 1
		}
	}
	if private {
		switch mode {
		case 1, 25:
			s.flush()
			var m vt10x.ModeFlag
			s.guard(func() {
				s.vt.Lock()
				defer s.vt.Unlock()
				m = s.vt.Mode()
			})
			if mode == 1 {
				set(m&vt10x.ModeAppCursor != 0)
			} else {
				set(m&vt10x.ModeHide == 0)
			}
		case 6:
			set(s.origin)
		case 7:
			set(s.autowrap)
		case 47, 1047, 1049:
			set(s.alt)
		}
		s.reply("\x1b[?" + strconv.Itoa(mode) + ";" + strconv.Itoa(state) + "$y")
		return
	}
	switch mode {
	case 4:
		set(s.insert)
	case 20:
		set(s.lnm)
	}
	s.reply("\x1b[" + strconv.Itoa(mode) + ";" + strconv.Itoa(state) + "$y")
}

// shiftColumns inserts ('@') or deletes ('P') n columns at the cursor's
// column (or the first) on every row of the scroll region, when the cursor
// is inside it.
func (s *Screen) shiftColumns(n int, atCursor bool, op byte) {
	c := s.cursor()
	if c.Y < s.top || c.Y > s.bottom {
		return
	}
	x := 0
	if atCursor {
		x = c.X
	}
	for y := s.top; y <= s.bottom; y++ {
		s.moveAbs(y, x)
		s.out = appendCSI(s.out, op, n)
	}
	s.moveAbs(c.Y, c.X)
}

// moveAbs queues a move to the zero-based screen position, whatever the
// origin mode.
func (s *Screen) moveAbs(y, x int) {
	if s.origin {
		y -= s.top
	}
	s.out = appendCSI(s.out, 'H', y+1, x+1)
}

// cursorBack is BS and CUB with reverse wraparound (and autowrap) on, as
// the xterm that recorded the corpus does it: a pending wrap takes one
// step, and the cursor moves back through the rows, from the top-left
// corner to the bottom-right one.
func (s *Screen) cursorBack(n int) {
	c := s.cursor()
	if c.State&cursorWrapNext != 0 {
		n--
	}
	if n == 0 {
		s.clearWrap()
		return
	}
	i := c.Y*s.cols + c.X - n
	if k := s.cols * s.rows; i < 0 {
		i = (i%k + k) % k
	}
	s.moveAbs(i/s.cols, i%s.cols)
	s.mayWrap = false
}

// vmove moves the cursor n rows (up when negative), stopping at the scroll
// region's margin when it starts inside it, as xterm does; vt10x stops only
// at the screen's edge.
func (s *Screen) vmove(n int, firstCol bool) {
	if !s.origin && (s.top > 0 || s.bottom < s.rows-1) {
		c := s.cursor()
		switch {
		case n < 0 && c.Y >= s.top:
			n = max(n, s.top-c.Y)
		case n > 0 && c.Y <= s.bottom:
			n = min(n, s.bottom-c.Y)
		}
	}
	if n < 0 {
		s.out = appendCSI(s.out, 'A', -n)
	} else if n > 0 {
		s.out = appendCSI(s.out, 'B', n)
	}
	if firstCol {
		s.out = append(s.out, '\r')
	}
}

// erase handles ED and EL. vt10x's ED 1 forgets row 0 when the cursor is
// on row 1; ED 3 (scrollback) has nothing to erase here.
func (s *Screen) erase(f byte, mode int) {
	mode = max(mode, 0)
	if mode > 2 {
		return
	}
	s.clearWrap()
	s.out = appendCSI(s.out, f, mode)
	if f == 'J' && mode == 1 {
		c := s.cursor()
		if c.Y == 1 && (!s.origin || s.top == 0) {
			s.out = append(s.out, "\x1b[A\x1b[2K\x1b[B"...)
			s.out = appendCSI(s.out, 'G', c.X+1)
		}
	}
}

// cpr returns the 1-based cursor position a CPR reports: relative to the
// scroll region in origin mode.
func (s *Screen) cpr() (row, col int) {
	c := s.cursor()
	row = c.Y + 1
	if s.origin {
		row -= s.top
	}
	return row, c.X + 1
}

// rep expands REP (xterm repeats only a character printed just before):
// the last graphic character again, n times. n is capped at what can still
// change the screen: the characters that fit from the cursor to the end
// of the scroll region, then at most one pass over the region, cut so the
// last row ends as it would (past that, every row of the region shows only
// the character). A REP costs at most two screens, whatever its count.
func (s *Screen) rep(n int) {
	n = min(n, s.repCap(n))
	r, w := s.last, s.lastW
	if w == 1 && !s.insert && r < 0x80 {
		for k := 0; k < n; k++ {
			s.out = append(s.out, byte(r))
		}
		return
	}
	for k := 0; k < n; k++ {
		s.put(r, w)
	}
}

// repCap returns the count that leaves the same screen as repeating the
// last character n times.
func (s *Screen) repCap(n int) int {
	c := s.cursor()
	w := max(s.lastW, 1)
	perRow := max(s.cols/w, 1)
	if !s.autowrap {
		return (s.cols-c.X+w-1)/w + 1
	}
	left := (s.cols - c.X) / w // on the cursor's row
	if c.State&cursorWrapNext != 0 || s.phantom {
		left = 0
	}
	bottom, height := s.bottom, s.bottom-s.top+1
	if c.Y > s.bottom { // below the region nothing scrolls: the last row is written over
		bottom, height = s.rows-1, 1
	}
	left += max(bottom-c.Y, 0) * perRow
	if n <= left {
		return n
	}
	m := n - left            // these scroll the region a row every perRow
	last := (m-1)%perRow + 1 // on the row the cursor ends on
	return left + min(m, (height-1)*perRow+last)
}

// decset handles one DEC private mode.
func (s *Screen) decset(mode int, set bool) {
	f := byte('l')
	if set {
		f = 'h'
	}
	switch mode {
	case 1: // DECCKM
		s.setKeyModes(set, s.appKeypad)
	case 5, 9, 25, 1000, 1002, 1003, 1004, 1006, 1034:
		s.out = append(s.out, "\x1b[?"...)
		s.out = strconv.AppendInt(s.out, int64(mode), 10)
		s.out = append(s.out, f)
	case 6: // DECOM
		s.origin = set
		s.out = append(s.out, "\x1b[?6"...)
		s.out = append(s.out, f)
	case 45: // reverse wraparound, done in cursorBack
		s.revWrap = set
	case 7: // DECAWM
		s.autowrap = set
		s.out = append(s.out, "\x1b[?7"...)
		s.out = append(s.out, f)
	case 47, 1047:
		s.switchKeeping(set, mode == 47)
	case 1048:
		if set {
			s.saveCursor()
		} else {
			s.restoreCursor()
		}
	case 1049:
		// xterm saves the cursor on the main screen, then switches and
		// clears; on reset it switches back and restores, even when the
		// main screen was showing (vt10x would switch to the alternate).
		if set {
			if !s.alt {
				s.saveCursor()
			}
			s.switchScreen(true)
			s.out = append(s.out, "\x1b[2J"...)
		} else {
			s.switchScreen(false)
			s.restoreCursor()
		}
	}
}

// switchScreen shows the alternate (or main) screen; vt10x toggles instead
// of setting, so only a real change is passed on.
func (s *Screen) switchScreen(alt bool) {
	if alt == s.alt {
		return
	}
	s.alt = alt
	s.lastOK = false
	s.altKeep = nil
	if alt {
		s.out = append(s.out, "\x1b[?1047h"...)
	} else {
		s.out = append(s.out, "\x1b[?1047l"...)
	}
}

func (s *Screen) screenIndex() int {
	if s.alt {
		return 1
	}
	return 0
}

// saveCursor is DECSC, kept per screen buffer as xterm does.
func (s *Screen) saveCursor() {
	c := s.cursor()
	s.saved[s.screenIndex()] = savedCursor{
		set: true, x: c.X, y: c.Y, attr: c.Attr,
		origin: c.State&cursorOrigin != 0,
	}
	s.lastOK = false
}

// restoreCursor is DECRC: position, origin mode, attributes and charset.
func (s *Screen) restoreCursor() {
	sc := s.saved[s.screenIndex()]
	if !sc.set {
		sc.attr = vt10x.Glyph{FG: vt10x.DefaultFG, BG: vt10x.DefaultBG}
	}
	if sc.origin != s.origin {
		s.decset(6, sc.origin)
	}
	s.moveAbs(clamp(sc.y, 0, s.rows-1), clamp(sc.x, 0, s.cols-1))
	s.out = appendGlyphSGR(s.out, sc.attr)
	if sc.attr.Mode&attrGfx != 0 {
		s.out = append(s.out, "\x1b(0"...)
	} else {
		s.out = append(s.out, "\x1b(B"...)
	}
	// A pending wrap is not restored: the xterm the corpus comes from
	// drops it too (t0060-DECSC, t0061-CSI_s, t0090-alt_screen), though
	// tmux and VTE keep it.
	s.lastOK = false
}

// appendGlyphSGR appends the SGR that sets vt10x's attributes to g's.
func appendGlyphSGR(b []byte, g vt10x.Glyph) []byte {
	b = append(b, "\x1b[0"...)
	for _, m := range [...]struct {
		bit int16
		s   string
	}{{attrBold, ";1"}, {attrItalic, ";3"}, {attrUnderline, ";4"}, {attrBlink, ";5"}, {attrReverse, ";7"}} {
		if g.Mode&m.bit != 0 {
			b = append(b, m.s...)
		}
	}
	b = appendColor(b, 38, g.FG)
	b = appendColor(b, 48, g.BG)
	return append(b, 'm')
}

func appendColor(b []byte, sel int, c vt10x.Color) []byte {
	switch {
	case c < 256:
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(sel), 10)
		b = append(b, ";5;"...)
		b = strconv.AppendInt(b, int64(c), 10)
	case c < 1<<24:
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(sel), 10)
		b = append(b, ";2;"...)
		b = strconv.AppendInt(b, int64(c>>16&0xff), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(c>>8&0xff), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(c&0xff), 10)
	}
	return b
}

// softReset is DECSTR: modes, margins, attributes and saved cursors back
// to their defaults, the screen and the cursor's place left alone.
func (s *Screen) softReset() {
	c := s.cursor()
	s.out = append(s.out, "\x1b[?6l\x1b[r\x1b[m\x1b(B\x1b[?7h\x1b>\x1b[?1l\x1b[?25h"...)
	s.out = appendCSI(s.out, 'H', c.Y+1, c.X+1)
	s.insert, s.origin, s.autowrap, s.revWrap, s.protect = false, false, true, false, false
	s.appCursor, s.appKeypad = false, false
	s.top, s.bottom = 0, s.rows-1
	s.saved = [2]savedCursor{}
}

// ris is a full reset. vt10x's own leaves the alternate screen's rows in
// place and clears only part of the screen.
func (s *Screen) ris() {
	if s.alt {
		s.out = append(s.out, "\x1b[?1047l"...)
	}
	s.out = append(s.out, "\x1bc\x1b[2J"...)
	s.alt, s.insert, s.origin, s.autowrap, s.lnm, s.revWrap = false, false, false, true, false, false
	s.appCursor, s.appKeypad = false, false
	s.top, s.bottom = 0, s.rows-1
	s.saved = [2]savedCursor{}
	s.lastOK = false
	s.protect, s.altKeep = false, nil
}

// sgr rewrites SGR for vt10x: colon sub-parameters (which make vt10x reset
// all attributes) become their semicolon forms or are dropped, and
// incomplete colour selections are dropped instead of misread.
func (s *Screen) sgr(a *csiArgs) {
	if a.n == 0 {
		s.out = append(s.out, "\x1b[m"...)
		return
	}
	var p [maxParams + 8]int
	np := 0
	emit := func(v ...int) {
		for _, x := range v {
			if np < len(p) {
				p[np] = x
				np++
			}
		}
	}
	for i := 0; i < a.n; {
		v := max(a.v[i], 0)
		j := i + 1 // end of this parameter's colon group
		for j < a.n && a.sub[j] {
			j++
		}
		grp := a.v[i+1 : j]
		switch {
		case v == 38 || v == 48 || v == 58:
			var col []int
			col, i = extColour(a, i, j)
			if col == nil || v == 58 || !colourBytes(col[1:]) {
				continue
			}
			emit(v)
			emit(col...)
			continue
		case v == 4 && len(grp) > 0: // 4:0 is no underline, 4:n a style
			if grp[0] <= 0 {
				emit(24)
			} else {
				emit(4)
			}
		default:
			emit(v)
		}
		i = j
	}
	if np == 0 {
		return // nothing vt10x should see; "CSI m" would reset
	}
	s.out = appendCSI(s.out, 'm', p[:np]...)
}

// extColour reads the colour selection of the 38, 48 or 58 at a.v[i],
// whose colon group ends at j: 38:5:n, 38:2:r:g:b, 38:2:cs:r:g:b, or the
// same with semicolons (38;5;n, 38;2;r;g;b). It returns the selection as
// 5,n or 2,r,g,b (nil if none) and where the next parameter starts; an
// incomplete semicolon selection ends the sequence.
func extColour(a *csiArgs, i, j int) (col []int, next int) {
	if grp := a.v[i+1 : j]; len(grp) > 0 {
		switch {
		case grp[0] == 5 && len(grp) >= 2:
			col = []int{5, grp[1]}
		case grp[0] == 2 && len(grp) >= 4:
			rgb := grp[len(grp)-3:]
			col = []int{2, rgb[0], rgb[1], rgb[2]}
		}
		return col, j
	}
	rest := a.v[j:a.n]
	switch {
	case len(rest) >= 2 && rest[0] == 5:
		col = []int{5, rest[1]}
	case len(rest) >= 4 && rest[0] == 2:
		col = []int{2, rest[1], rest[2], rest[3]}
	default:
		return nil, a.n
	}
	return col, j + len(col)
}

// colourBytes reports whether every value is a byte, as vt10x needs.
func colourBytes(v []int) bool {
	for _, x := range v {
		if x < 0 || x > 255 {
			return false
		}
	}
	return true
}
