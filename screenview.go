package agentpty

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentpty/agentpty/internal/screen"
)

// Screen modes of a result (the screen argument of pty-start and
// pty-write).
const (
	// ScreenFull makes a result's output the rendered screen.
	ScreenFull = "full"
	// ScreenDiff makes a result's output a unified diff of the screen
	// before and after the call.
	ScreenDiff = "diff"
)

// maxHighlights is the most highlights a result lists: a menu has one
// selected item and one focused button, and a program that colours half
// its screen in small spans (htop) says nothing more useful in the
// seventeenth.
const maxHighlights = 16

// modeView is what a screen mode shows of the display at one moment.
type modeView struct {
	lines      []string
	cursor     Cursor
	highlights []Highlight // every one, top to bottom
	alt        bool        // the alternate screen
	cols       int
}

// litMemory remembers the highlights the reads of one screen returned, so
// a result lists what moved and leaves out fixtures (nano's shortcut bar,
// mc's function-key labels) that would otherwise take its places on every
// read. A screen is one alternate or primary screen at one size: entering
// or leaving a full-screen program, or a resize, begins a new one.
type litMemory struct {
	reads  int // reads of this screen so far
	alt    bool
	cols   int
	rows   int
	always map[Highlight]bool // on every read of this screen
	last   map[Highlight]bool // on the previous read
	// moved: the highlights of some read differed from the one before,
	// so those that stayed (always) are fixtures, not a selection that
	// has not been moved yet.
	moved bool
}

// pick chooses the highlights a result lists from all of v's (top to
// bottom). Until the highlights of a screen have changed, every read lists
// them all. After that, a read lists those the previous read did not have
// (what moved or appeared) first, then those on the cursor's row (the item
// being edited or chosen), then the rest, and leaves out the fixtures:
// those that have been on every read of the screen. At most
// maxHighlights, top to bottom within each group. record makes this read
// count for later ones.
func (m *litMemory) pick(v modeView, record bool) []Highlight {
	hs := v.highlights
	first := m.reads == 0 || m.alt != v.alt || m.cols != v.cols || m.rows != len(v.lines)
	var out []Highlight
	changed := !first && (m.moved || len(hs) != len(m.last) || slices.ContainsFunc(hs, func(h Highlight) bool { return !m.last[h] }))
	if first {
		out = hs
	} else {
		var moved, cursor, rest []Highlight
		for _, h := range hs {
			switch {
			case !m.last[h]:
				moved = append(moved, h)
			case changed && m.always[h]:
				// a fixture: it stayed while others changed
			case h.Row == v.cursor.Row:
				cursor = append(cursor, h)
			default:
				rest = append(rest, h)
			}
		}
		out = append(append(moved, cursor...), rest...)
	}
	out = out[:min(len(out), maxHighlights):min(len(out), maxHighlights)]
	if !record {
		return out
	}
	now := make(map[Highlight]bool, len(hs))
	for _, h := range hs {
		now[h] = true
	}
	if first {
		*m = litMemory{alt: v.alt, cols: v.cols, rows: len(v.lines), always: now}
	} else {
		for h := range m.always {
			if !now[h] {
				delete(m.always, h)
			}
		}
	}
	m.reads++
	m.last, m.moved = now, changed
	return out
}

// A highlight's style: what it is drawn on.
type highlightKey struct {
	reverse bool
	bg      screen.Color // the colour shown behind the text: FG under reverse video
}

func keyOf(c screen.Cell) highlightKey {
	if c.Reverse {
		return highlightKey{true, c.FG}
	}
	return highlightKey{false, c.BG}
}

// highlights finds the spans drawn apart from what surrounds them: a
// region of cells of one style (reverse video, or a background other than
// the terminal's default), joined row to row and column to column, that
// covers less than an eighth of the screen. A larger region is a ground
// (a dialog's window, its coloured backdrop); a selected item drawn in the
// backdrop's colour inside the window is still its own small region. A
// span is the part of such a region on one row, when it holds some text:
// a coloured shadow or border of blanks is decoration, not a highlight.
// Nor is a row of key labels (htop's and mc's function-key bars, nano's
// shortcuts): labelRun or more spans of one style on one row are labels
// the screen's text shows anyway, and would take the places of what is
// selected; a span of another style on that row (the chosen tab) stays.
func highlights(rows [][]screen.Cell) []Highlight {
	spans, keys := styledSpans(rows)
	type rowKey struct {
		row int
		key highlightKey
	}
	runs := map[rowKey]int{}
	for i, h := range spans {
		runs[rowKey{h.Row, keys[i]}]++
	}
	out := spans[:0]
	for i, h := range spans {
		if runs[rowKey{h.Row, keys[i]}] < labelRun {
			out = append(out, h)
		}
	}
	return out
}

// labelRun is how many spans of one style make a row of labels.
const labelRun = 4

// styledSpans is the spans highlights considers, top to bottom, and the
// style of each.
func styledSpans(rows [][]screen.Cell) ([]Highlight, []highlightKey) {
	label, area := regions(rows)
	total := 0
	for _, row := range rows {
		total += len(row)
	}
	var out []Highlight
	var keys []highlightKey
	for y, row := range rows {
		for x := 0; x < len(row); {
			l := label[y][x]
			end := x + 1
			for end < len(row) && label[y][end] == l {
				end++
			}
			if k := keyOf(row[x]); k != (highlightKey{false, screen.DefaultColor}) && 8*area[l] < total {
				var b strings.Builder
				for _, c := range row[x:end] {
					b.WriteString(c.Text)
				}
				if t := strings.TrimSpace(b.String()); t != "" {
					out = append(out, Highlight{Row: y, Col: x, Len: end - x, Text: t})
					keys = append(keys, k)
				}
			}
			x = end
		}
	}
	return out, keys
}

// regions labels each cell with its region: the cells of one style
// reachable from it through neighbours above, below, left and right. It
// returns the labels and each region's size in cells.
func regions(rows [][]screen.Cell) (label [][]int32, area []int) {
	label = make([][]int32, len(rows))
	for y, row := range rows {
		label[y] = make([]int32, len(row))
		for x := range label[y] {
			label[y][x] = -1
		}
	}
	type pos struct{ y, x int }
	var stack []pos
	for y, row := range rows {
		for x := range row {
			if label[y][x] >= 0 {
				continue
			}
			l, k := int32(len(area)), keyOf(row[x])
			area = append(area, 0)
			label[y][x] = l
			stack = append(stack[:0], pos{y, x})
			for len(stack) > 0 {
				p := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				area[l]++
				for _, q := range [4]pos{{p.y - 1, p.x}, {p.y + 1, p.x}, {p.y, p.x - 1}, {p.y, p.x + 1}} {
					if q.y >= 0 && q.y < len(rows) && q.x >= 0 && q.x < len(rows[q.y]) && label[q.y][q.x] < 0 && keyOf(rows[q.y][q.x]) == k {
						label[q.y][q.x] = l
						stack = append(stack, q)
					}
				}
			}
		}
	}
	return label, area
}

// viewDiff is a unified diff of the screen, rows as lines, without
// context: each run of rows whose text or highlights changed is a hunk
// whose header gives 1-based rows as any unified diff does (@@ -5 +5 @@,
// or @@ -5,3 +5,3 @@ for three). A row whose text changed is a "-" line
// and a "+" line; a row whose highlights alone changed is a context line
// (a space, then the row), and the header of a hunk with highlights ends
// with the highlighted text after the call. The file header lines say
// where the cursor was before and after (1-based, as the hunks count).
// Nothing changed, cursor included, is an empty diff.
func viewDiff(before, after modeView) string {
	b, a := before.lines, after.lines
	if len(b) == 0 {
		b = make([]string, len(a)) // a new screen: everything against blank rows
	}
	changed := func(i int) bool {
		if i >= len(b) || i >= len(a) || b[i] != a[i] {
			return true
		}
		return !sameSpans(rowSpans(before.highlights, i), rowSpans(after.highlights, i))
	}
	var out strings.Builder
	n := max(len(b), len(a))
	for i := 0; i < n; i++ {
		if !changed(i) {
			continue
		}
		j := i
		for j+1 < n && changed(j+1) {
			j++
		}
		writeHunk(&out, before, after, b, a, i, j)
		i = j
	}
	if out.Len() == 0 && before.cursor == after.cursor {
		return ""
	}
	head := fmt.Sprintf("--- screen before, cursor at row %d col %d\n+++ screen after, cursor at row %d col %d\n",
		before.cursor.Row+1, before.cursor.Col+1, after.cursor.Row+1, after.cursor.Col+1)
	return strings.TrimSuffix(head+out.String(), "\n")
}

// writeHunk writes rows i..j of the diff as one hunk.
func writeHunk(out *strings.Builder, before, after modeView, b, a []string, i, j int) {
	olds, news := 0, 0
	for r := i; r <= j; r++ {
		if r < len(b) {
			olds++
		}
		if r < len(a) {
			news++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@", hunkRange(i, olds), hunkRange(i, news))
	var lit []string
	for r := i; r <= j; r++ {
		for _, h := range rowSpans(after.highlights, r) {
			lit = append(lit, strconv.Quote(h.Text))
		}
	}
	switch {
	case len(lit) > 0:
		out.WriteString(" highlighted: " + strings.Join(lit, ", "))
	case len(rowsSpans(before.highlights, i, j)) > 0:
		out.WriteString(" no highlight")
	}
	out.WriteByte('\n')
	for r := i; r <= j; r++ {
		if r < len(b) && r < len(a) && b[r] == a[r] {
			out.WriteString(" " + a[r] + "\n")
			continue
		}
		if r < len(b) {
			out.WriteString("-" + b[r] + "\n")
		}
		if r < len(a) {
			out.WriteString("+" + a[r] + "\n")
		}
	}
}

// hunkRange is one side of a hunk header for count rows from zero-based
// row i: "5", "5,3", or "4,0" for no rows (after row 4), as diff writes it.
func hunkRange(i, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(i) + ",0"
	case 1:
		return strconv.Itoa(i + 1)
	}
	return strconv.Itoa(i+1) + "," + strconv.Itoa(count)
}

// rowSpans returns the highlights on row r.
func rowSpans(hs []Highlight, r int) []Highlight { return rowsSpans(hs, r, r) }

// rowsSpans returns the highlights on rows i..j; hs is in row order.
func rowsSpans(hs []Highlight, i, j int) []Highlight {
	lo := 0
	for lo < len(hs) && hs[lo].Row < i {
		lo++
	}
	hi := lo
	for hi < len(hs) && hs[hi].Row <= j {
		hi++
	}
	return hs[lo:hi]
}

func sameSpans(x, y []Highlight) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].Col != y[i].Col || x[i].Len != y[i].Len {
			return false
		}
	}
	return true
}
