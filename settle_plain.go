package agentpty

import (
	"encoding/binary"
	"math/bits"
)

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
		if rest[j] == '\n' && !s.keepCol {
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
	s.plainEnded(arena, start)
	return i + k
}

// plainEnded leaves what printing the plain line now at arena[start:],
// CR and LF would: the line holds the text, and the cursor is at the start
// of a new last line below the row the CR LF left.
func (s *settler) plainEnded(arena []byte, start int) {
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
	r := 0 // the row of the line the CR LF leaves
	if n > s.w {
		r = (n - 1) / s.w
	}
	y := min(s.y0+r, s.bot)
	s.newLine() // as LF would, on the last line
	s.y0 = min(y+1, s.bot)
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
