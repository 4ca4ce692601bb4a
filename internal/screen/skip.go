package screen

import (
	"bytes"
	"encoding/binary"
)

// Skipping plain text that cannot be seen.
//
// The session catches the screen up lazily, so one Write may carry hundreds
// of KiB, most of it long scrolled away. vt10x costs about 125 ns a byte, so
// the part of a run of plain text that cannot reach the final screen is not
// fed at all.
//
// A plain run holds only printable text, CR, LF (and VT, FF), BS, HT, BEL,
// NUL, DEL, complete SGR sequences and the line-local sequences that
// progress output is full of: EL, ECH, DCH, ICH and moves within the row
// (CHA, HPA, CUF, HPR, CUB). Such bytes change only cells, the cursor and
// the current attributes; no mode, margin, tab stop, charset or saved
// cursor. With the scroll region the whole screen on the main screen
// (and reverse wraparound off), nothing in a plain run moves the cursor up, and the only moves down are
// line feeds and wraps.
//
// Split a run R into R1 R2 where R2 starts at a CR and holds at least
// 2·rows−1 line feeds. Count lines as an endless sheet: each line feed or
// wrap advances the cursor's line L by one, and the window shows lines
// S..S+rows−1 with S = max(S, L−rows+1). If R2 starts with the cursor on
// screen row y (0 ≤ y < rows) at line L0 = S0+y, after n ≥ 2·rows−1
// advances S ≥ L0+n−rows+1 ≥ S0+rows: every line on screen at the end was
// scrolled in, blank, during R2, and its content is what R2 wrote on it.
// R2 starts at a CR, so column 0 with no wrap pending, whatever R1 did; it
// writes the same cells relative to its start, and its final window sits at
// the same offset from its start, whether R1 ran or not. What R1 leaves
// behind beyond cells and the cursor is the current attributes, and those
// come from its SGRs after the last one that resets them (a reset SGR sets
// everything SGR can set); those are replayed. REP and combining marks only
// look at the character just before them, and a CR stands between R1 and
// anything after it.
//
// Fewer line feeds suffice when the cursor's row is known in both cases:
// if R1 holds rows−1 line feeds, R2 starts on the bottom row when R1 is
// fed, and if the cursor is now on row y it starts on row y when R1 is
// skipped; R2 then needs max(rows, 2·rows−1−y) line feeds.
//
// So feeding SGRs(R1) R2 leaves the same screen, cursor
// and attributes as feeding R1 R2; TestSkipInvisible checks it on random
// streams.

// skipPlain looks for a plain run starting at p[i] and, when part of it
// cannot be seen, replays that part's attributes and returns the index to
// go on from; otherwise it returns i.
func (s *Screen) skipPlain(p []byte, i int) int {
	if s.noSkip || s.alt || s.top != 0 || s.bottom != s.rows-1 || s.un != 0 || s.phantom || s.revWrap {
		return i
	}
	k := 2*s.rows - 1
	if cap(s.lfRing) < k {
		s.lfRing = make([]lfMark, k)
	}
	ring := s.lfRing[:k]
	nLF, next := s.scanPlain(p, i, ring)
	if nLF < s.rows {
		return i
	}
	// The oldest of the last k marks: its CR has k line feeds after it.
	m := ring[next]
	if nLF < k {
		m.cr = -1
	}
	// Fewer will do when this run already brings the cursor to the bottom
	// row before the CR (then rows line feeds clear the screen) and the
	// cursor starts low enough now (skipping) too.
	y0 := s.cursor().Y
	if k2 := max(s.rows, 2*s.rows-1-y0); nLF >= k2 {
		if m2 := ring[(next-k2+k)%k]; m2.lfs >= s.rows-1 && m2.cr > m.cr {
			m = m2
		}
	}
	if m.cr <= i {
		return i
	}
	s.replaySGR(p, m)
	s.lastOK = false
	s.mayWrap = true
	s.skipped += m.cr - i
	return m.cr
}

// scanPlain reads the plain run starting at p[i] (text, CR, line feeds,
// harmless controls, SGRs and line-local sequences) up to s.scanEnd. For
// each of the last len(ring) line feeds, ring holds the mark of the latest
// CR before it; it returns how many line feeds the run holds and where in
// ring the oldest mark is.
func (s *Screen) scanPlain(p []byte, i int, ring []lfMark) (nLF, next int) {
	k := len(ring)
	// At the latest CR and as of now: where the last resetting SGR and
	// the first SGR of the run start (-1: none yet).
	cr, reset, first := lfMark{-1, -1, -1, 0}, -1, -1
	j := i
scan:
	for j < len(p) {
		// Eight bytes at a time while none is a control.
		for j+8 <= len(p) && !hasControl(binary.LittleEndian.Uint64(p[j:])) {
			j += 8
		}
		if j >= len(p) {
			break
		}
		b := p[j]
		if b >= 0x20 {
			j++
			continue
		}
		switch b {
		case '\r':
			cr = lfMark{j, reset, first, nLF}
		case '\n', '\v', '\f':
			ring[next] = cr
			if next++; next == k {
				next = 0
			}
			nLF++
		case '\b', '\t', 0x07, 0x00:
		case 0x1b:
			e, sgr := plainSeqEnd(p, j)
			if e < 0 {
				break scan
			}
			if sgr && first < 0 {
				first = j
			}
			if sgr && sgrResets(p[j+2:]) {
				reset = j
			}
			j = e
			continue
		default:
			break scan
		}
		j++
	}
	s.scanEnd = j
	return nLF, next
}

// lfMark describes the skippable prefix ending at a CR: the CR's index,
// the starts of the last resetting SGR and the first SGR before it, and the
// number of line feeds before it.
type lfMark struct{ cr, reset, first, lfs int }

// plainSeqEnd returns the index after the complete SGR or line-local
// sequence at p[j] (an ESC), and whether it is an SGR; or -1 if there is
// none: other sequences end a plain run.
func plainSeqEnd(p []byte, j int) (int, bool) {
	e := j + 1
	if e >= len(p) || p[e] != '[' {
		return -1, false
	}
	for e++; e < len(p) && p[e] >= '0' && p[e] <= ';'; e++ {
	}
	// One too long for the parser is dropped there, so it isn't plain.
	if e >= len(p) || e-(j+2) > maxSeq {
		return -1, false
	}
	switch p[e] {
	case 'm':
		return e + 1, true
	case 'K', 'X', 'P', '@', 'G', '`', 'C', 'a', 'D':
		if bytes.IndexByte(p[j+2:e], ':') < 0 { // sub-parameters only belong to SGR
			return e + 1, false
		}
	}
	return -1, false
}

// replaySGR feeds the SGR sequences before m.cr from the last one that
// resets all attributes on: they leave the attributes the skipped text
// would have.
func (s *Screen) replaySGR(p []byte, m lfMark) {
	from := m.reset
	if from < 0 {
		from = m.first
	}
	if from < 0 {
		return
	}
	for from < m.cr {
		e := bytes.IndexByte(p[from:m.cr], 0x1b)
		if e < 0 {
			return
		}
		e += from
		end, sgr := plainSeqEnd(p, e)
		if sgr {
			s.seq = append(s.seq[:0], p[e+2:end-1]...)
			s.csiDispatch('m')
		}
		from = end
	}
}

// sgrResets reports whether the SGR whose parameters start q resets all
// attributes first: no parameters, or a first one that is 0 or empty.
func sgrResets(q []byte) bool {
	for _, b := range q {
		switch b {
		case '0':
		case ';', ':', 'm':
			return true
		default:
			return false
		}
	}
	return true
}

// hasControl reports whether any of the eight bytes in x is below 0x20
// (bytes of 0x80 and up never count).
func hasControl(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x-0x20*ones)&^x&highs != 0
}

// WritePlain is Write for output the caller has already seen to be plain:
// printable text, CR, LF, VT, FF, BS, HT, BEL, NUL, SGR and line-local
// sequences only.
// Instead of scanning it forward, it finds from the end the last 2·rows−1
// line feeds and the CR before them, which by the argument above leaves
// everything earlier invisible but for its attributes; it costs about what
// finding those lines costs. If p turns out not to be plain, or the screen
// is not in a state where skipping holds, it is an ordinary Write.
func (s *Screen) WritePlain(dst, p []byte) []byte {
	// Text held back from the last Write comes before p; when p alone holds
	// the cut, the held text is skipped with the rest and never copied.
	if c := s.plainCut(p, s.held); c > 0 {
		s.held = s.held[:0]
		p = p[c:]
	} else if len(s.held) > 0 {
		s.joined = append(append(s.joined[:0], s.held...), p...)
		s.held = s.held[:0]
		p = s.joined
		if c := s.plainCut(p, nil); c > 0 {
			p = p[c:]
		}
	}
	return s.Write(dst, p)
}

// plainCut returns where the visible part of plain p starts, replaying the
// attributes of what comes before it (including before, plain text that
// precedes p), or 0 when nothing can be skipped.
func (s *Screen) plainCut(p, before []byte) int {
	if s.noSkip || s.alt || s.top != 0 || s.bottom != s.rows-1 || s.un != 0 || s.phantom || s.revWrap || s.st != sGround {
		return 0
	}
	// Only LF is counted: VT and FF feed lines too, so this errs on the
	// side of skipping less.
	q := len(p)
	for n := 2*s.rows - 1; n > 0; n-- {
		if q = bytes.LastIndexByte(p[:q], '\n'); q < 0 {
			return 0
		}
	}
	c := bytes.LastIndexByte(p[:q], '\r')
	if c <= 0 {
		return 0
	}
	// The attributes at c come from the SGRs since the last one that
	// resets them, looking back through before too if p has none.
	from, reset, ok := lastSGRs(p[:c])
	if !ok {
		return 0
	}
	if !reset && len(before) > 0 {
		bfrom, _, ok := lastSGRs(before)
		if !ok {
			return 0
		}
		s.replaySGR(before, lfMark{cr: len(before), reset: bfrom, first: bfrom})
	}
	s.replaySGR(p, lfMark{cr: c, reset: from, first: from})
	s.lastOK = false
	s.mayWrap = true
	s.skipped += c + len(before)
	return c
}

// lastSGRs returns where the SGRs that decide the attributes at the end of
// plain p start (-1: none), whether the first of them resets everything,
// and false if p holds an escape that is not a complete SGR or line-local
// sequence.
func lastSGRs(p []byte) (from int, reset, ok bool) {
	from = -1
	for e := len(p); ; {
		i := lastESC(p[:e])
		if i < 0 {
			return from, false, true
		}
		end, sgr := plainSeqEnd(p, i)
		if end < 0 {
			return 0, false, false
		}
		if sgr {
			from = i
			if sgrResets(p[i+2:]) {
				return from, true, true
			}
		}
		e = i
	}
}

// lastESC is bytes.LastIndexByte(p, ESC) for plain text that can run for
// hundreds of kilobytes without one: it looks back a block at a time with
// bytes.IndexByte, which is many times faster than LastIndexByte.
func lastESC(p []byte) int {
	const block = 4 << 10
	for end := len(p); end > 0; {
		start := max(end-block, 0)
		if bytes.IndexByte(p[start:end], 0x1b) >= 0 {
			return start + bytes.LastIndexByte(p[start:end], 0x1b)
		}
		end = start
	}
	return -1
}
