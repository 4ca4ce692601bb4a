package agentpty

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading.

// read returns the text of every line touched since the last read, joined
// with "\n", and marks everything read. Over limit bytes (limit > 0), a
// head and a tail are kept around one marker line saying what was left out.
func (s *settler) read(limit int) string {
	out := s.peek(limit)
	if s.lines != nil {
		s.markRead()
	}
	return out
}

// peek is read without marking anything read: the next read returns the
// same text and more.
func (s *settler) peek(limit int) string {
	if s.lines == nil {
		return ""
	}
	s.sync()
	if s.unreadLines == 0 && s.lostLines == 0 {
		return ""
	}
	total := max(s.unreadBytes-1, 0) // joined: no separator after the last line
	if s.lostLines == 0 && (limit <= 0 || total <= limit) {
		return s.joinTouched(total)
	}
	return s.elide(limit, total)
}

// joinTouched returns the touched lines joined with "\n"; total is their
// length.
func (s *settler) joinTouched(total int) string {
	var b strings.Builder
	b.Grow(total)
	for i, first := s.firstTouched(), true; i >= 0; i, first = s.nextTouched(i), false {
		if !first {
			b.WriteByte('\n')
		}
		b.Write(s.text(i))
	}
	return b.String()
}

// readWhole is read (peek: peek), and also (when whole is asked for and
// the limit cut the text) everything read would have returned without the
// limit: the lines still held, after a marker for any that were lost.
//
// Touched lines below the cursor's that are all blank are left out: rows a
// program reserved below its prompt (prompt_toolkit reserves about 28)
// say nothing and cost a model tokens. The cursor's own line stays.
func (s *settler) readWhole(limit int, whole, peek bool) (out, all string) {
	below := s.blankBelowCursor()
	out, all = s.readAll(limit, whole, peek)
	return dropBlankLines(out, below), dropBlankLines(all, below)
}

// blankBelowCursor counts the touched lines below the cursor's when every
// line there is blank (spaces or nothing), else 0.
func (s *settler) blankBelowCursor() int {
	if s.lines == nil || s.cur >= s.lastLine() {
		return 0
	}
	s.sync()
	n := 0
	for i := max(s.cur+1, s.base); i <= s.lastLine(); i++ {
		if len(bytes.TrimLeft(s.text(i), " ")) > 0 {
			return 0
		}
		if s.touched(i) {
			n++
		}
	}
	return n
}

// dropBlankLines removes up to n blank lines from the end of t.
func dropBlankLines(t string, n int) string {
	for ; n > 0 && t != ""; n-- {
		i := strings.LastIndexByte(t, '\n')
		if strings.TrimLeft(t[i+1:], " ") != "" {
			break
		}
		t = t[:max(i, 0)]
	}
	return t
}

// readAll is readWhole before blank lines are dropped.
func (s *settler) readAll(limit int, whole, peek bool) (out, all string) {
	if whole && s.lines != nil && limit > 0 {
		s.sync()
		if total := max(s.unreadBytes-1, 0); s.unreadLines > 0 && total > limit {
			all = s.joinTouched(total)
			if s.lostLines > 0 {
				all = settleMarker(s.lostBytes, s.lostLines) + "\n" + all
			}
		}
	}
	if peek {
		return s.peek(limit), all
	}
	return s.read(limit), all
}

// elide builds a read's result when it is over limit, or lines were lost.
// Only the lines kept are visited; the figures come from the counters.
func (s *settler) elide(limit, total int) string {
	return elide(s, limit, total, s.lostBytes, s.lostLines, s.unreadLines)
}

// lineSource is text in numbered lines, as elide reads it: a settler's
// touched lines, or a run's output (runLines).
type lineSource interface {
	firstTouched() int     // the first line, or -1
	nextTouched(i int) int // the line after i, or -1
	prevTouched(i int) int // the line before i, or -1
	lastLine() int         // prevTouched(lastLine()+1) is the last line
	text(i int) []byte
}

// elide keeps a head and a tail of total bytes in lines lines of s around
// one marker line, within limit; lostBytes in lostLines lines that came
// before s are gone, and the marker counts them too.
func elide(s lineSource, limit, total, lostBytes, lostLines, lines int) string {
	allBytes, allLines := lostBytes+total, lostLines+lines
	room := total
	if limit > 0 {
		room = limit - len(settleMarker(allBytes, allLines)) - 2
	}
	headRoom := room / 2
	if lostLines > 0 { // the oldest text is gone: say so first, then the newest
		headRoom = 0
	}
	var b strings.Builder
	b.Grow(max(room, 0) + 64)
	h, headLines, stop := elideHead(s, &b, headRoom)
	tail, t := elideTail(s, room-headRoom, stop)
	tailLines := len(tail)
	if tailLines > 0 && tail[tailLines-1].from > 0 {
		tailLines--
	}
	if h > 0 || headLines > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(settleMarker(allBytes-h-t, allLines-headLines-tailLines))
	for k := len(tail) - 1; k >= 0; k-- {
		b.WriteByte('\n')
		b.Write(s.text(tail[k].line)[tail[k].from:])
	}
	return b.String()
}

// The cut rule for a read's head and tail: whole lines while they fit, then
// part of the next one, cut at a character, if a quarter of the room or
// more would otherwise go unused.

// elideHead writes the oldest lines that fit in room to b, and returns
// the bytes written, the lines written whole, and the first line not.
func elideHead(s lineSource, b *strings.Builder, room int) (n, lines, stop int) {
	for stop = s.firstTouched(); stop >= 0 && room > 0; stop = s.nextTouched(stop) {
		t := s.text(stop)
		sep := min(lines, 1)
		if n+sep+len(t) > room {
			if cut := room - n - sep; cut >= room/4 {
				for cut > 0 && !utf8.RuneStart(t[cut]) {
					cut--
				}
				if cut > 0 {
					b.WriteString("\n"[:sep])
					b.Write(t[:cut])
					n += sep + cut
				}
			}
			break
		}
		b.WriteString("\n"[:sep])
		b.Write(t)
		n += sep + len(t)
		lines++
	}
	return n, lines, stop
}

// settlePiece is a line a read's tail ends with, from a byte on.
type settlePiece struct{ line, from int }

// elideTail returns the newest lines from stop on that fit in
// room, newest first, and their bytes.
func elideTail(s lineSource, room, stop int) (pieces []settlePiece, n int) {
	for i := s.lastLine() + 1; room > 0; {
		if i = s.prevTouched(i); i < 0 || i < stop {
			break
		}
		t := s.text(i)
		sep := min(len(pieces), 1)
		if n+sep+len(t) > room {
			if cut := room - n - sep; cut >= room/4 {
				from := len(t) - cut
				for from < len(t) && !utf8.RuneStart(t[from]) {
					from++
				}
				if from < len(t) {
					pieces = append(pieces, settlePiece{i, from})
					n += sep + len(t) - from
				}
			}
			break
		}
		pieces = append(pieces, settlePiece{i, 0})
		n += sep + len(t)
	}
	return pieces, n
}

// settleMarker is the line that stands for text a read left out.
func settleMarker(bytes, lines int) string {
	return "[... " + strconv.Itoa(bytes) + " bytes in " + strconv.Itoa(lines) + " lines elided ...]"
}

// markRead starts a new epoch: nothing is touched, everything is seen.
func (s *settler) markRead() {
	s.epoch++
	s.readLast = s.lastLine()
	s.unreadLines, s.unreadBytes = 0, 0
	s.lostLines, s.lostBytes = 0, 0
	s.dirtyFrom, s.mfrom = settleNone, settleNone
	s.mhits = 0
}

// unread reports whether read would return anything.
func (s *settler) unread() bool {
	switch {
	case s.lostLines > 0 || s.unreadLines > 1:
		return true
	case s.unreadLines == 0:
		return false
	}
	i := s.firstTouched() // the one touched line: is it empty?
	if i == s.cur {
		return settleExtent(s.cells) > 0
	}
	return i >= 0 && s.line(i).n > 0
}

// tail returns the last n lines of the settled scrollback, read or not; the
// last line is left out while it is empty.
func (s *settler) tail(n int) []string {
	if s.lines == nil || n <= 0 {
		return nil
	}
	s.sync()
	last := s.lastLine()
	if s.line(last).n == 0 {
		last--
	}
	var out []string
	for i := max(last-n+1, s.base); i <= last; i++ {
		out = append(out, string(s.text(i)))
	}
	return out
}

// scrollback returns every settled line kept, joined with "\n".
func (s *settler) scrollback() string {
	return strings.Join(s.tail(len(s.lines)), "\n")
}

// settlePre is a line kept by keepBeforeRedraw: its number, and where its
// text ends in preText.
type settlePre struct{ line, end int }

// keepBeforeRedraw keeps the touched lines as they are now, before the
// program begins to redraw in place: a clear moves them off the screen,
// and a redraw writes over them.
func (s *settler) keepBeforeRedraw() {
	s.preText, s.preLines = s.preText[:0], s.preLines[:0]
	if cap(s.preText) > 64<<10 {
		s.preText = nil // an earlier flood's copy is not kept
	}
	s.sync()
	for i := s.firstTouched(); i >= 0; i = s.nextTouched(i) {
		s.preText = append(s.preText, s.text(i)...)
		s.preLines = append(s.preLines, settlePre{line: i, end: len(s.preText)})
	}
}

// textBeforeRedraw is what a read returns before the screen of a redraw in
// place (redrawn): the lines keepBeforeRedraw kept that are no longer on
// the screen (echo, then clear: the echo's text), joined with "\n"; over
// limit bytes (limit > 0) only the newest of them, after a marker line.
func (s *settler) textBeforeRedraw(limit int) string {
	top := s.screenTop()
	var lines [][]byte
	start := 0
	for _, p := range s.preLines {
		if p.line < top {
			lines = append(lines, s.preText[start:p.end])
		}
		start = p.end
	}
	for len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	n, keep := 0, len(lines)
	for ; keep > 0 && (limit <= 0 || n+len(lines[keep-1])+1 <= limit); keep-- {
		n += len(lines[keep-1]) + 1
	}
	var b strings.Builder
	if keep > 0 {
		cut := 0
		for _, l := range lines[:keep] {
			cut += len(l) + 1
		}
		b.WriteString(settleMarker(cut, keep))
	}
	for _, l := range lines[keep:] {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.Write(l)
	}
	return b.String()
}

// screenTop is the first line on the screen: the lines above the cursor's
// that fill the rows above it, none before the last clear.
func (s *settler) screenTop() int {
	i, y := s.cur, s.y0
	for y > 0 && i > max(s.base, s.floor) {
		i--
		y -= s.rows(i)
	}
	return i
}

// addressed notes that the program placed the cursor on a row of the
// primary screen or erased all of it.
func (s *settler) addressed() {
	if s.addrEpoch != s.epoch {
		s.keepBeforeRedraw() // the first redraw since the last read
	}
	s.addrEpoch, s.addrLines = s.epoch, 0
}

// redrawn reports a redraw in place since the last read: the program
// addressed the primary screen by row (CUP, HVP, VPA) or erased it whole
// (ED 2), and began no more lines since than the screen has rows, so what
// it drew is still on the screen. Its frames' text would read mixed
// together (top, watch, a clear-and-print loop): the screen says it. Text
// that scrolled on past a screenful after the last such move (clear, then
// a long listing) reads as text.
func (s *settler) redrawn(rows int) bool {
	return !s.alt && s.addrEpoch == s.epoch && s.addrLines <= rows
}
