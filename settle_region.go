package agentpty

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"unicode/utf8"
)

// What a byte of the text a wait looks in is, for deciding whether a match
// counts: only one holding a byte the program printed since the last read
// does.
const (
	byteOld  byte = iota // an earlier read returned it
	byteNew              // the program printed it since the last read
	byteEcho             // the echo of input this call typed
)

// region appends the text a wait looks in to text, and what each byte of it
// is to kinds: the lines from line from (or the first kept) to the last
// touched one, joined with "\n". Untouched lines are old, touched lines old in the cells
// an earlier read returned, and a line break is new before a line that came
// after the last read. It also returns where line echoLine starts in the
// text (0 when it lies before, the text's length when after), for the
// search for the echo of what the call typed. With ended, a line feed
// that ended the last touched line ends the text (a pattern's $ would not
// match before it).
func (s *settler) region(text, kinds []byte, from, echoLine int, ended bool) ([]byte, []byte, int) {
	last := s.prevTouched(s.lastLine() + 1)
	if last < 0 {
		return text, kinds, 0
	}
	from = max(from, s.base)
	echoFrom := -1
	for i := from; i <= last; i++ {
		if i > from {
			k := byteOld
			if i > s.readLast {
				k = byteNew
			}
			text, kinds = append(text, '\n'), append(kinds, k)
		}
		touched := s.touched(i)
		if i == echoLine {
			echoFrom = len(text)
		}
		t := s.lineText(i)
		old := len(t)
		if touched {
			old = settleSeenBytes(t, int(s.line(i).seen))
		}
		text = append(text, t...)
		kinds = appendKinds(kinds, byteOld, old)
		kinds = appendKinds(kinds, byteNew, len(t)-old)
	}
	if ended && last < s.cur {
		// The line feed that ended the last touched line is output too,
		// though no line after it holds text yet.
		k := byteOld
		if last+1 > s.readLast {
			k = byteNew
		}
		text, kinds = append(text, '\n'), append(kinds, k)
	}
	switch {
	case echoFrom >= 0:
	case echoLine > last:
		echoFrom = len(text)
	default:
		echoFrom = 0
	}
	return text, kinds, echoFrom
}

// takeChanges returns the first line changed or touched since the last
// call, or the last read (settleNone when none was), and starts counting
// anew. It uses the marks match keeps, so match starts its literal afresh.
func (s *settler) takeChanges() int {
	from := s.mfrom
	for i := s.nextTouched(max(from, s.base) - 1); i >= 0 && from != settleNone; i = s.nextTouched(i) {
		l := s.line(i)
		l.flags &^= settlePend
		l.mlo, l.mhi = math.MaxInt32, 0
	}
	s.mfrom, s.mlit = settleNone, ""
	return from
}

// appendKinds appends n bytes of kind k.
func appendKinds(kinds []byte, k byte, n int) []byte {
	kinds = slices.Grow(kinds, n)
	kinds = kinds[:len(kinds)+n]
	fillKinds(kinds, len(kinds)-n, len(kinds), k)
	return kinds
}

// echoPiece is a run of printable text the call typed, as a line editor or
// the terminal echoes it; enter says the Enter key followed it, whose echo
// is the line break after it.
type echoPiece struct {
	text  string
	enter bool
}

// echoPieces splits typed input into the runs of text its echo shows:
// Enter, Tab, other control keys and escape sequences (arrow keys) end a
// run, and Backspace and Ctrl-U edit it as a line editor would (what they
// do to text before the run is not followed).
func echoPieces(input []byte) []echoPiece {
	var out []echoPiece
	var cur []byte
	end := func(enter bool) {
		if len(cur) > 0 {
			out = append(out, echoPiece{string(cur), enter})
			cur = cur[:0]
		}
	}
	for i := 0; i < len(input); i++ {
		switch b := input[i]; {
		case b == '\r' || b == '\n':
			end(true)
		case b == 0x7f || b == '\b':
			_, size := utf8.DecodeLastRune(cur)
			cur = cur[:len(cur)-size]
		case b == 0x15: // Ctrl-U: the line so far is gone
			cur = cur[:0]
		case b == 0x1b:
			end(false)
			i = skipKeySequence(input, i)
		case b < 0x20:
			end(false)
		default:
			cur = append(cur, b)
		}
	}
	end(false)
	return out
}

// skipKeySequence returns the index of the last byte of the escape sequence
// that starts at input[i] (ESC): CSI up to its final byte, SS3 and Alt plus
// one byte.
func skipKeySequence(input []byte, i int) int {
	if i+1 >= len(input) {
		return i
	}
	switch input[i+1] {
	case '[':
		for j := i + 2; j < len(input); j++ {
			if c := input[j]; c >= 0x40 && c <= 0x7e {
				return j
			}
		}
		return len(input) - 1
	case 'O':
		return min(i+2, len(input)-1)
	}
	return i + 1
}

// markEcho marks in kinds the echo of pieces in text, searched from byte
// from on: each piece's first occurrence in new text after the one before,
// and its line break when Enter followed it. A piece not found whole is
// looked for as the start of one ending a line, echo still arriving, and
// ends the search.
func markEcho(text, kinds []byte, from int, pieces []echoPiece) {
	pos := from
	for _, p := range pieces {
		k := indexNew(text, kinds, pos, []byte(p.text))
		if k < 0 {
			if e, n := partialEcho(text, kinds, pos, p.text); n > 0 {
				fillKinds(kinds, e-n, e, byteEcho)
			}
			return
		}
		end := k + len(p.text)
		fillKinds(kinds, k, end, byteEcho)
		if p.enter && end < len(text) && text[end] == '\n' && kinds[end] == byteNew {
			kinds[end] = byteEcho
			end++
		}
		pos = end
	}
}

// indexNew returns the first occurrence of lit in text[from:] that lies
// wholly in new text, or -1.
func indexNew(text, kinds []byte, from int, lit []byte) int {
	for off := from; off <= len(text); off++ {
		k := bytes.Index(text[off:], lit)
		if k < 0 {
			return -1
		}
		off += k
		if allKind(kinds[off:off+len(lit)], byteNew) {
			return off
		}
	}
	return -1
}

// partialEcho finds the longest start of lit that ends a line (or the text)
// in new text after from, and returns where it ends and its length. It runs
// once over the text, as Knuth-Morris-Pratt does; lit holds no line break,
// so a line's end ends any partial match.
func partialEcho(text, kinds []byte, from int, lit string) (end, n int) {
	fail := make([]int, len(lit)+1)
	fail[0] = -1
	for i := 1; i <= len(lit); i++ {
		k := fail[i-1]
		for k >= 0 && lit[k] != lit[i-1] {
			k = fail[k]
		}
		fail[i] = k + 1
	}
	state := 0
	for i := from; i <= len(text); i++ {
		if i == len(text) || text[i] == '\n' {
			if state > n {
				end, n = i, state
			}
			state = 0
			continue
		}
		if kinds[i] != byteNew {
			state = 0
			continue
		}
		for state >= 0 && (state == len(lit) || lit[state] != text[i]) {
			state = fail[state]
		}
		state++
	}
	return end, n
}

// allKind reports whether every byte of kinds is k.
func allKind(kinds []byte, k byte) bool {
	for _, v := range kinds {
		if v != k {
			return false
		}
	}
	return true
}

// fillKinds sets kinds[lo:hi] to k.
func fillKinds(kinds []byte, lo, hi int, k byte) {
	for i := lo; i < hi; i++ {
		kinds[i] = k
	}
}

// counts reports whether the match text[lo:hi] holds a byte the program
// printed since the last read; an empty match counts when any such byte
// exists.
func counts(kinds []byte, lo, hi int) bool {
	if lo == hi {
		lo, hi = 0, len(kinds)
	}
	return bytes.IndexByte(kinds[lo:hi], byteNew) >= 0
}

// findCounted reports whether lit (or re, when set) matches text in a way
// that counts: holding a byte the program printed since the last read,
// neither old nor echo.
func findCounted(text, kinds []byte, lit []byte, re *regexp.Regexp) bool {
	if re != nil {
		for _, m := range re.FindAllIndex(text, -1) {
			if counts(kinds, m[0], m[1]) {
				return true
			}
		}
		return false
	}
	for off := 0; off+len(lit) <= len(text); off++ {
		k := bytes.Index(text[off:], lit)
		if k < 0 {
			return false
		}
		if off += k; counts(kinds, off, off+len(lit)) {
			return true
		}
	}
	return false
}
