package agentpty

import (
	"math"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

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

// newLine starts a new last line for the cursor, its predecessor ended and
// stored, dropping the oldest lines if that put the scrollback over its
// bound.
func (s *settler) newLine() {
	if s.charge > s.max {
		s.evict()
	}
	s.addLine()
	s.cur++
	s.addrLines++
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

// rows returns the screen rows line i takes.
func (s *settler) rows(i int) int {
	n := int(s.line(i).width)
	if i == s.cur {
		n = settleExtent(s.cells)
	}
	return max((n+s.w-1)/s.w, 1)
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
	s.dropBelow()
}

// dropBelow drops the lines below the cursor's, which are empty on the
// screen now.
func (s *settler) dropBelow() {
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
			v := settleCell(b) // NUL is settleEmpty
			if b == 1 {
				v = settleGap
			}
			s.cells = append(s.cells, v)
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
		if v == settleEmpty || v == settleGap {
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
	case v == settleGap:
		if empty == 0 { // the arena keeps it, as 0x01
			return append(dst, 1)
		}
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
	s.buf = s.buf[:0]
	for _, b := range t {
		switch b {
		case 0:
			s.buf = append(s.buf, ' ')
		case 1: // settleGap
		default:
			s.buf = append(s.buf, b)
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
