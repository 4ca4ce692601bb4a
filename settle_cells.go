package agentpty

import (
	"slices"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

// hidden reports that printing and erasing record nothing: the alternate
// screen shows, or the cursor is in a row outside the scroll region.
func (s *settler) hidden() bool { return s.alt || s.margin }

// printASCII prints a run of printable ASCII bytes.
func (s *settler) printASCII(run []byte) {
	if s.hidden() {
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
		lo := c
		if c > old {
			clear(s.cells[old:c])
			s.plain = false
			lo = old // the empty cells before it join the text as spaces
		}
		settleWidenASCII(s.cells[c:end], run)
		s.modified(lo, end)
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
	if r >= 0x80 && r < 0xa0 || s.hidden() { // C1 controls print nothing
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
		if s.col >= len(s.cells) {
			s.extend(s.col + 1)
			s.cells[s.col] = settleGap // a column, but no space in the joined line
		}
		s.col++
	}
	if s.col+w > settleMaxCells {
		s.wrap()
	}
	c := s.col
	lo, hi := min(c, len(s.cells)), c+w // empty cells before it join the text as spaces
	s.extend(c + w)
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
	if c < 0 || s.cells[c] == settleEmpty || s.cells[c] == settleCont || s.cells[c] == settleGap {
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

// repeat prints the last character n more times (REP), no more than the
// cells left on the screen, so a REP's work is bounded by the screen's
// size: past them a terminal scrolls what it printed away.
func (s *settler) repeat(n int) {
	n = min(n, settleMaxCells)
	if s.h != settleTall {
		n = min(n, (s.h-1-s.row())*s.w+s.rowEnd()-s.col)
	}
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
	if s.pending { // xterm's and tmux's tab stays, the wrap still pending
		return
	}
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
	if s.pending {
		// The cursor waits past the character that filled the row, which
		// stays, as tmux, VTE, iTerm2 and Konsole keep it (xterm erases it);
		// 1 and 2 erase the whole row.
		if mode == 1 || mode == 2 {
			s.erase(s.col-s.w, s.col)
		}
		return
	}
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
	if s.pending { // as EL: nothing after the cursor in its row
		return
	}
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
