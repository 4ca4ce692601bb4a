package agentpty

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

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
