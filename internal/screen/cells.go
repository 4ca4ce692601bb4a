package screen

import (
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
	"github.com/hinshun/vt10x"
)

// Color is a cell's colour as the program selected it: DefaultColor, a
// palette index 0-255 (SGR 30-37, 90-97, 38;5;N and their backgrounds), or
// a 24-bit colour RGBFlag|0xRRGGBB (SGR 38;2;R;G;B). vt10x stores both
// kinds in one number, so a 24-bit colour with red and green 0 reads as
// the palette index of its blue. Bold text in colours 0-7 is stored as
// 8-15, the bright colour xterm draws it in.
type Color int32

// Colour values that are not palette indexes.
const (
	DefaultColor Color = -1
	RGBFlag      Color = 1 << 24
)

// Cell is one cell of the screen, with what a host needs to draw it or to
// tell it from its neighbours (a highlight is reverse video or a
// background other than the default).
type Cell struct {
	// Text is the character with its combining marks: " " for a blank,
	// "" for the right half of a wide character. Rune is its first rune
	// (' ' for a blank, 0 for a right half).
	Text string
	Rune rune
	// Width is 2 for a wide character, 0 for its right half, else 1. Half
	// of a wide character whose other half was overwritten or deleted is
	// a blank, as xterm shows it.
	Width                                   int
	Bold, Italic, Underline, Blink, Reverse bool
	// FG and BG are the colours selected, before Reverse swaps them.
	FG, BG Color
}

// Cells returns every cell of the screen, row by row.
func (s *Screen) Cells() [][]Cell {
	s.catchUp()
	s.flush()
	rows := make([][]Cell, s.rows)
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		cols, n := s.vt.Size()
		for y := 0; y < n && y < len(rows); y++ {
			row := make([]Cell, cols)
			for x := 0; x < cols; x++ {
				g := s.vt.Cell(x, y)
				c := &row[x]
				c.Bold, c.Italic, c.Underline = g.Mode&attrBold != 0, g.Mode&attrItalic != 0, g.Mode&attrUnderline != 0
				c.Blink, c.Reverse = g.Mode&attrBlink != 0, g.Mode&attrReverse != 0
				g = unswap(g)
				c.FG, c.BG = cellColor(g.FG), cellColor(g.BG)
				w := s.cellWidth(g.Char)
				switch {
				case g.Char == wideTail || g.Char == 0 || w == 2 && (x+1 >= cols || s.vt.Cell(x+1, y).Char != wideTail):
					c.Text, c.Rune, c.Width = " ", ' ', 1 // blank, or an orphaned half
				case w == 2:
					c.Text, c.Width = s.clusters.str(g.Char), 2
					c.Rune, _ = utf8.DecodeRuneInString(c.Text)
					t := &row[x+1]
					*t = *c
					t.Text, t.Rune, t.Width = "", 0, 0
					x++
				default:
					c.Text, c.Width = s.clusters.str(g.Char), 1
					c.Rune, _ = utf8.DecodeRuneInString(c.Text)
				}
			}
			rows[y] = row
		}
	})
	return rows
}

// cellWidth is the width of a vt10x cell's rune, clusters included.
func (s *Screen) cellWidth(ch rune) int {
	if ch >= sentinelBase {
		if i := int(ch - sentinelBase); i < len(s.clusters.list) {
			return s.clusters.list[i].w
		}
		return 1
	}
	return width.Rune(ch)
}

func cellColor(c vt10x.Color) Color {
	switch {
	case c < 256:
		return Color(c)
	case c < 1<<24:
		return RGBFlag | Color(c)
	}
	return DefaultColor
}

// unswap undoes the swap vt10x makes when it stores a reverse-video cell.
func unswap(g vt10x.Glyph) vt10x.Glyph {
	if g.Mode&attrReverse != 0 {
		g.FG, g.BG = g.BG, g.FG
	}
	return g
}

// glyphs copies the cells of the buffer showing now.
func (s *Screen) glyphs() [][]vt10x.Glyph {
	s.flush()
	var rows [][]vt10x.Glyph
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		cols, n := s.vt.Size()
		rows = make([][]vt10x.Glyph, n)
		for y := range rows {
			rows[y] = make([]vt10x.Glyph, cols)
			for x := range rows[y] {
				rows[y][x] = s.vt.Cell(x, y)
			}
		}
	})
	return rows
}

// cell returns the vt10x cell at x, y after flushing what is queued.
func (s *Screen) cell(x, y int) (g vt10x.Glyph) {
	s.flush()
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		g = s.vt.Cell(x, y)
	})
	return g
}

// putGlyph queues g printed at x, y with its own attributes; the caller
// puts the cursor and the attributes back.
func (s *Screen) putGlyph(x, y int, g vt10x.Glyph) {
	s.moveAbs(y, x)
	s.out = appendGlyphSGR(s.out, unswap(g))
	s.out = utf8.AppendRune(s.out, g.Char)
}

// restorePen puts the cursor back where c is, with its attributes and
// character set.
func (s *Screen) restorePen(c vt10x.Cursor) {
	if c.State&cursorWrapNext != 0 {
		// Printing the last column again is what leaves vt10x's wrap pending.
		g := s.cell(c.X, c.Y)
		if g.Char == 0 {
			g.Char = ' '
		}
		s.putGlyph(c.X, c.Y, g)
	} else {
		s.moveAbs(c.Y, c.X)
	}
	s.out = appendGlyphSGR(s.out, c.Attr)
	if c.Attr.Mode&attrGfx != 0 {
		s.out = append(s.out, "\x1b(0"...)
	}
}

// switchKeeping is ?47 and ?1047: xterm shows the alternate screen again
// as it was left by ?47l (?1047l clears it), where vt10x always clears it.
func (s *Screen) switchKeeping(alt, keep47 bool) {
	if alt == s.alt {
		return
	}
	if !alt {
		var kept [][]vt10x.Glyph
		if keep47 {
			kept = s.glyphs()
		}
		s.switchScreen(false)
		s.altKeep = kept
		return
	}
	kept := s.altKeep
	s.switchScreen(true)
	if kept == nil || len(kept) != s.rows || len(kept[0]) != s.cols {
		return
	}
	c := s.cursor()
	s.out = append(s.out, "\x1b(B"...) // the cells hold characters already translated
	for y, row := range kept {
		for x, g := range row {
			if g.Char != 0 && (g.Char != ' ' || g.Mode != 0 || g.FG != vt10x.DefaultFG || g.BG != vt10x.DefaultBG) {
				s.putGlyph(x, y, g)
			}
		}
	}
	s.restorePen(c)
}

// combineBefore attaches a combining mark that follows a move or a
// sequence to the character before the cursor, as xterm does; with a
// blank there it is dropped.
func (s *Screen) combineBefore(mark rune) {
	c := s.cursor()
	wrap := c.State&cursorWrapNext != 0
	x := c.X - 1
	if wrap {
		x = c.X
	}
	if x < 0 {
		return
	}
	g := s.cell(x, c.Y)
	if g.Char == wideTail && x > 0 {
		x--
		g = s.cell(x, c.Y)
	}
	if g.Char == 0 || g.Char == ' ' || g.Char == wideTail {
		return
	}
	w := s.cellWidth(g.Char)
	cl, ok := s.clusters.add(g.Char, mark, w)
	if !ok {
		return
	}
	g.Char = cl
	s.putGlyph(x, c.Y, g)
	s.restorePen(c)
}

// selectiveErase is DECSED (f 'J') and DECSEL ('K'): like ED and EL, but
// characters DECSCA protected stay.
func (s *Screen) selectiveErase(f byte, mode int) {
	mode = max(mode, 0)
	if mode > 2 {
		return
	}
	if !s.anyProt {
		s.erase(f, mode)
		return
	}
	c := s.cursor()
	at, lo, hi := c.Y*s.cols+c.X, c.Y*s.cols, (c.Y+1)*s.cols
	if f == 'J' {
		lo, hi = 0, s.rows*s.cols
	}
	switch mode {
	case 0:
		lo = at
	case 1:
		hi = at + 1
	}
	kept := s.glyphs()
	for i := lo; i < hi; {
		y, x := i/s.cols, i%s.cols
		if s.clusters.protected(kept[y][x].Char) || kept[y][x].Char == wideTail && x > 0 && s.clusters.protected(kept[y][x-1].Char) {
			i++
			continue
		}
		n := 1
		for x+n < s.cols && i+n < hi {
			g := kept[y][x+n]
			if s.clusters.protected(g.Char) || g.Char == wideTail && s.clusters.protected(kept[y][x+n-1].Char) {
				break
			}
			n++
		}
		s.moveAbs(y, x)
		s.out = appendCSI(s.out, 'X', n)
		i += n
	}
	s.moveAbs(c.Y, c.X)
}
