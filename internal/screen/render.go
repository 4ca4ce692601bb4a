package screen

import (
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/width"
)

// Runes the screen stores in vt10x cells for what one rune can't say. They
// lie in Supplementary Private Use Area-B, which programs almost never
// print; a program that does gets U+FFFD instead.
const (
	sentinelBase = 0x100000
	// wideTail fills the second cell of a wide character.
	wideTail = 0x10fffd
	// maxClusters bounds the cluster table (and its runes below wideTail).
	maxClusters = 0xfff0
	// maxClusterRunes bounds a base and its combining marks.
	maxClusterRunes = 8
)

// clusterTable interns grapheme clusters (a base and its combining marks)
// as runes sentinelBase+i, so one vt10x cell can hold one.
type clusterTable struct {
	ids  map[string]rune
	list []cluster
}

type cluster struct {
	s    string
	w    int
	prot bool // printed while DECSCA protected it from selective erase
}

// protected reports whether r is a character DECSCA protected.
func (t *clusterTable) protected(r rune) bool {
	return r >= sentinelBase && int(r-sentinelBase) < len(t.list) && t.list[r-sentinelBase].prot
}

// protect returns the rune that stands for r, w cells wide, marked
// protected, or r itself when the table is full.
func (t *clusterTable) protect(r rune, w int) rune {
	if t.protected(r) {
		return r
	}
	if p, ok := t.intern(t.str(r), w, true); ok {
		return p
	}
	return r
}

func (t *clusterTable) str(r rune) string {
	if r >= sentinelBase && int(r-sentinelBase) < len(t.list) {
		return t.list[r-sentinelBase].s
	}
	return string(r)
}

// add returns the rune for base followed by mark, w cells wide, or false
// when the cluster is too long or the table is full (the mark is dropped).
func (t *clusterTable) add(base, mark rune, w int) (rune, bool) {
	s := t.str(base) + string(mark)
	if utf8.RuneCountInString(s) > maxClusterRunes {
		return 0, false
	}
	return t.intern(s, w, t.protected(base))
}

// intern returns the rune for the cluster s, w cells wide, protected or
// not, or false when the table is full.
func (t *clusterTable) intern(s string, w int, prot bool) (rune, bool) {
	key := s
	if prot {
		key = "\x00" + s // no cluster starts with NUL
	}
	if r, ok := t.ids[key]; ok {
		return r, true
	}
	if len(t.list) >= maxClusters {
		return 0, false
	}
	if t.ids == nil {
		t.ids = make(map[string]rune)
	}
	r := rune(sentinelBase + len(t.list))
	t.ids[key] = r
	t.list = append(t.list, cluster{s, w, prot})
	return r, true
}

// Lines returns each row's text with trailing blanks trimmed. A wide
// character appears once, and combining marks stay with their base.
func (s *Screen) Lines() []string {
	s.catchUp()
	s.flush()
	return s.readLines()
}

// readLines reads the rows from vt10x without flushing.
func (s *Screen) readLines() []string {
	lines := make([]string, s.rows)
	s.guard(func() {
		s.vt.Lock()
		defer s.vt.Unlock()
		cols, rows := s.vt.Size()
		var b []byte
		for y := 0; y < rows && y < len(lines); y++ {
			b = b[:0]
			for x := 0; x < cols; x++ {
				var wide bool
				b, wide = s.appendCell(b, x, y, cols)
				if wide {
					x++ // one rune for both cells
				}
			}
			lines[y] = strings.TrimRight(string(b), " ")
		}
	})
	return lines
}

// appendCell appends the text of cell (x, y) to b, and reports a wide
// character that covers the next cell too. Call with vt10x locked.
func (s *Screen) appendCell(b []byte, x, y, cols int) ([]byte, bool) {
	ch := s.vt.Cell(x, y).Char
	w := 1
	switch {
	case ch == wideTail:
		// The right half of a wide character whose left half was
		// overwritten: xterm shows a blank.
		return append(b, ' '), false
	case ch == 0:
		ch = ' '
	case ch >= sentinelBase:
		if i := int(ch - sentinelBase); i < len(s.clusters.list) {
			w = s.clusters.list[i].w
		}
	default:
		w = width.Rune(ch)
	}
	wide := false
	if w == 2 {
		if x+1 < cols && s.vt.Cell(x+1, y).Char == wideTail {
			wide = true
		} else {
			ch = ' ' // its right half was overwritten
		}
	}
	if ch >= sentinelBase {
		return append(b, s.clusters.str(ch)...), wide
	}
	return utf8.AppendRune(b, ch), wide
}

// Text returns Lines joined with newlines, without trailing empty rows.
func (s *Screen) Text() string {
	lines := s.Lines()
	n := len(lines)
	for n > 0 && lines[n-1] == "" {
		n--
	}
	return strings.Join(lines[:n], "\n")
}

// Changed returns the rows whose text differs from the last call (the
// first call compares with a blank screen), so a waiter can match only
// what a full-screen program redrew. After a resize every row counts as
// changed.
func (s *Screen) Changed() []int {
	lines := s.Lines()
	prev := s.prevLines
	if prev == nil {
		prev = make([]string, len(lines))
	}
	var rows []int
	for y, l := range lines {
		if len(prev) != len(lines) || prev[y] != l {
			rows = append(rows, y)
		}
	}
	s.prevLines = lines
	return rows
}
