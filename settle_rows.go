package agentpty

// The screen rows: the cursor's row on the screen, vertical motion bounded
// by the screen and the scroll region, and the rows outside the region.
// Lines hold no rows of their own; the cursor's row is y0 (the screen row
// of its line's first row) plus its row within the line, and motion walks
// the lines row by row from there.

// settlePos is a cursor position: a line, a cell in it, a screen row.
type settlePos struct{ line, col, y int }

// curRow returns the row within its line the cursor is on, a pending wrap
// still on the row it filled.
func (s *settler) curRow() int {
	c := s.col
	if s.pending {
		c--
	}
	if c < s.w {
		return 0
	}
	return c / s.w
}

// row returns the cursor's screen row. A line that wrapped past the bottom
// of the scroll region scrolled it: its first row moved up.
func (s *settler) row() int {
	y := s.y0 + s.curRow()
	if y > s.bot && !s.margin {
		s.y0 -= y - s.bot
		y = s.bot
	}
	return y
}

// setRow records that the cursor is on screen row y.
func (s *settler) setRow(y int) { s.y0 = y - s.curRow() }

// setRows tells the settler the terminal's height (zero or less: unknown,
// as if endless). A resize resets the scroll region and keeps the cursor
// on the screen.
func (s *settler) setRows(n int) {
	if n <= 0 || n > maxRows {
		n = settleTall
	}
	s.resetRegion()
	y := s.row()
	s.h, s.bot = n, n-1
	s.setRow(min(y, n-1))
}

// resetRegion makes the scroll region the whole screen, returning the
// cursor from a row outside it to where it left the region.
func (s *settler) resetRegion() {
	if s.margin {
		s.leaveMargin()
	}
	s.top, s.bot = 0, s.h-1
}

// lineFeed applies LF, VT, FF and IND (keep: the column stays) and NEL:
// down a row, the scroll region scrolling at its bottom. On the last line
// that ends the line.
func (s *settler) lineFeed(keep bool) {
	at := s.row()
	s.unpend()
	c := s.col - s.rowStart()
	if !keep {
		c = 0
	}
	if s.margin {
		if at < s.h-1 {
			s.marginTo(at+1, c)
		} else {
			s.col = c
		}
		return
	}
	y := min(at+1, s.bot)
	if at == s.bot && s.cur < s.lastLine() && s.emptyBelow() {
		s.dropBelow() // blank rows outside the region: the region scrolls over them
	}
	if next := s.rowStart() + s.w; next < settleExtent(s.cells) { // the line goes on below: down a row of it
		s.col = next + c
		s.setRow(y)
		return
	}
	if s.cur < s.lastLine() {
		s.moveTo(s.cur + 1)
		s.col = c
		s.setRow(y)
		return
	}
	s.endLine()
	s.col = c
	s.setRow(y)
}

// endLine ends the last line, the cursor's, as a line feed does, and
// starts the next.
func (s *settler) endLine() {
	s.touch(s.cur) // ended by a line feed
	// The line feed is text a literal can end with (region's ended): a
	// wait looks again from here though the line's cells did not change.
	s.mfrom = min(s.mfrom, s.cur)
	s.flush()
	if cap(s.cells) > 8<<10 && len(s.cells) < 1<<10 {
		s.cells = nil // give back what one very long line needed
	}
	s.newLine()
}

// emptyBelow reports whether every line below the cursor's is empty.
func (s *settler) emptyBelow() bool {
	for i := s.cur + 1; i <= s.lastLine(); i++ {
		if s.line(i).n > 0 {
			return false
		}
	}
	return true
}

// wrap ends a line that reached settleMaxCells.
func (s *settler) wrap() { s.lineFeed(false) }

// up applies CUU: n rows up, stopping at the top of the scroll region if
// the cursor is below it, else at the screen's.
func (s *settler) up(n int) {
	y := s.row()
	if y >= s.top {
		n = min(n, y-s.top)
	} else {
		n = min(n, y)
	}
	s.upBy(n, y)
}

// down applies CUD: n rows down, stopping at the bottom of the scroll
// region if the cursor is above it, else at the screen's.
func (s *settler) down(n int) {
	y := s.row()
	if y <= s.bot {
		n = min(n, s.bot-y)
	} else {
		n = min(n, s.h-1-y)
	}
	s.downBy(n, y)
}

// upBy moves the cursor, on screen row y, n rows up in the column it is
// in, no further than settleMaxUp lines above the last line and never
// into evicted lines or above the screen's first line.
func (s *settler) upBy(n, y int) {
	if s.margin {
		s.marginTo(y-n, s.col)
		return
	}
	s.unpend()
	row, c := s.col/s.w, s.col%s.w
	if n <= row {
		s.col -= n * s.w
		s.setRow(y - n)
		return
	}
	want := n
	n -= row
	i, top := s.cur, max(s.lastLine()-settleMaxUp, s.base, s.floor)
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
	s.setRow(y - want + n)
}

// downBy moves the cursor, on screen row y, n rows down among the lines
// there are; while the height is known, rows below the last line are
// screen rows too, and become empty lines.
func (s *settler) downBy(n, y int) {
	if s.margin {
		s.marginTo(y+n, s.col)
		return
	}
	s.unpend()
	want := n
	row, c := s.col/s.w, s.col%s.w
	rows := max(s.rows(s.cur), row+1)
	if n < rows-row {
		s.col += n * s.w
		s.setRow(y + n)
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
	if n > 0 && s.h != settleTall {
		for ; n > 0; n-- {
			s.endLine()
		}
		row = 0
	}
	s.col = row*s.w + c
	s.setRow(y + want - n)
}

// moveRow moves the cursor to screen row t (CUP, VPA), which the scroll
// region does not bound; its column is left to the caller.
func (s *settler) moveRow(t int) {
	t = min(max(t, 0), s.h-1)
	if t < s.top || t > s.bot {
		if !s.margin {
			s.unpend()
			s.anchor = settlePos{s.cur, s.col, s.row()}
			s.margin = true
			s.col -= s.rowStart()
		}
		s.y0 = t
		return
	}
	if s.margin {
		s.marginTo(t, s.col)
		return
	}
	if y := s.row(); t < y {
		s.upBy(y-t, y)
	} else if t > y {
		s.downBy(t-y, y)
	}
}

// marginTo moves the cursor, on a row outside the scroll region, to row t
// and column c of the row; back inside the region, it goes there from
// where it left the region.
func (s *settler) marginTo(t, c int) {
	if t < s.top || t > s.bot {
		s.y0, s.col = t, c
		return
	}
	y := s.leaveMargin()
	if t < y {
		s.upBy(y-t, y)
	} else if t > y {
		s.downBy(t-y, y)
	}
	s.setCol(s.rowStart() + c)
}

// leaveMargin returns the cursor to where it left the scroll region, and
// returns its screen row there.
func (s *settler) leaveMargin() int {
	a := s.anchor
	s.margin = false
	s.pending = false
	if a.line < s.base || a.line > s.lastLine() {
		a = settlePos{s.lastLine(), 0, a.y}
	}
	s.moveTo(a.line)
	s.col = a.col
	s.y0 = a.y - s.curRow()
	return a.y
}

// clearScreen applies ED 2 (and RIS): what the screen showed stays in the
// settled text, as tmux moves it to its history, and the cursor, on screen
// row y, goes on below it on rows now blank.
func (s *settler) clearScreen(y int) {
	if s.margin {
		s.leaveMargin()
		y = min(max(y, s.top), s.bot)
	}
	c := s.col - s.rowStart()
	if s.blankScreen() {
		return // nothing to move to the history, as tmux moves nothing
	}
	// Blank rows below the last text are blank rows of the new screen.
	k := s.lastLine()
	for k > s.base && !s.hasText(k) {
		k--
	}
	s.moveTo(k)
	s.dropBelow()
	s.endLine()
	s.floor = s.cur
	for range y {
		s.endLine()
	}
	s.col, s.pending = c, false
	s.setRow(y)
}

// blankScreen reports whether no line since the last clear holds text, so
// clearing again adds no blank lines. It looks back from the last line and
// stops at the first with text.
func (s *settler) blankScreen() bool {
	for i := s.lastLine(); i >= max(s.floor, s.base); i-- {
		if s.hasText(i) {
			return false
		}
	}
	return true
}

// hasText reports whether line i holds any text.
func (s *settler) hasText(i int) bool {
	if i == s.cur {
		return settleExtent(s.cells) > 0
	}
	return s.line(i).n > 0
}

// saveCursor applies DECSC and SCOSC.
func (s *settler) saveCursor() {
	s.saved, s.saveLine, s.saveCol, s.savePend = true, s.cur, s.col, s.pending
	s.saveY, s.saveMargin, s.saveAnchor = s.row(), s.margin, s.anchor
}

// restoreCursor applies DECRC and SCORC, back to a line only if the cursor
// may still go there, and to a row outside the scroll region if that is
// where it was, or where it is now that the region changed.
func (s *settler) restoreCursor() {
	if !s.saved {
		return
	}
	s.margin = false
	if i := s.saveLine; i >= s.base && i >= s.lastLine()-settleMaxUp && i <= s.lastLine() {
		s.moveTo(i)
	}
	s.col, s.pending = s.saveCol, s.savePend
	switch {
	case s.saveMargin:
		s.anchor = s.saveAnchor
	case s.saveY < s.top || s.saveY > s.bot:
		s.unpend()
		s.anchor = settlePos{s.cur, s.col, s.saveY}
		s.col -= s.rowStart()
	default:
		s.setRow(s.saveY)
		return
	}
	s.margin = true
	s.y0 = s.saveY
}
