package screen

import "github.com/hinshun/vt10x"

// Redraw appends to dst the bytes that paint the screen as it is now onto
// a terminal of the same size, whatever it showed before: the alternate
// screen when it is active, every cell with its colours and attributes,
// the scroll region, the cursor's place, pen and visibility, and the
// cursor-key and keypad modes (which decide what the keys send). Other
// modes (mouse reporting, bracketed paste) and the primary screen hidden
// behind the alternate one are not part of it.
func (s *Screen) Redraw(dst []byte) []byte {
	s.catchUp()
	s.flush()
	dst = append(dst, "\x1b[0m"...)
	if s.alt {
		dst = append(dst, "\x1b[?1049h"...)
	} else {
		dst = append(dst, "\x1b[?1049l"...)
	}
	dst = append(dst, "\x1b[r\x1b[H\x1b[2J"...)
	var cur vt10x.Cursor
	var mode vt10x.ModeFlag
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		cur, mode = s.vt.Cursor(), s.vt.Mode()
		cols, rows := s.vt.Size()
		for y := 0; y < rows; y++ {
			dst = s.redrawRow(dst, y, cols)
		}
	})
	if s.top != 0 || s.bottom != s.rows-1 {
		dst = appendCSI(dst, 'r', s.top+1, s.bottom+1)
	}
	dst = appendGlyphSGR(dst, cur.Attr)
	dst = appendCSI(dst, 'H', clamp(cur.Y, 0, s.rows-1)+1, clamp(cur.X, 0, s.cols-1)+1)
	for _, m := range [...]struct {
		on       bool
		set, off string
	}{
		{mode&vt10x.ModeAppCursor != 0, "\x1b[?1h", ""},
		{mode&vt10x.ModeAppKeypad != 0, "\x1b=", ""},
		{mode&vt10x.ModeHide != 0, "\x1b[?25l", "\x1b[?25h"},
	} {
		if m.on {
			dst = append(dst, m.set...)
		} else {
			dst = append(dst, m.off...)
		}
	}
	return dst
}

// redrawRow appends row y, from its first cell to its last one that is not
// a default blank. Call with vt10x locked.
func (s *Screen) redrawRow(dst []byte, y, cols int) []byte {
	blank := vt10x.Glyph{Char: ' ', FG: vt10x.DefaultFG, BG: vt10x.DefaultBG}
	last := cols - 1
	for ; last >= 0; last-- {
		g := s.vt.Cell(last, y)
		if g.Char == 0 {
			g.Char = ' '
		}
		if g != blank {
			break
		}
	}
	if last < 0 {
		return dst
	}
	dst = appendCSI(dst, 'H', y+1, 1)
	pen := blank
	dst = append(dst, "\x1b[0m"...)
	for x := 0; x <= last; x++ {
		g := s.vt.Cell(x, y)
		if g.Mode != pen.Mode || g.FG != pen.FG || g.BG != pen.BG {
			dst = appendGlyphSGR(dst, unswap(g)) // vt10x keeps reverse cells swapped
			pen = g
		}
		var wide bool
		if dst, wide = s.appendCell(dst, x, y, cols); wide {
			x++
		}
	}
	return append(dst, "\x1b[0m"...)
}
