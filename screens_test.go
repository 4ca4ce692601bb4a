package agentpty

import (
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/screen"

	"github.com/agentpty/agentpty/internal/testkit"
)

// endsBlank reports whether text's last line is blank while text holds
// more than that line: a trailing blank row.
func endsBlank(text string) bool {
	i := strings.LastIndexByte(text, '\n')
	return i >= 0 && strings.TrimSpace(text[i+1:]) == ""
}

// Rows a program reserves below its prompt (cleared, then the cursor moved
// back up) are not part of a read; the prompt's line and blank lines the
// program printed above the cursor are.
func TestReadLeavesOutBlankRowsBelowTheCursor(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range []struct{ in, want string }{
		{"In [1]: \n\n\n\n \x1b[4A\r\x1b[8C", "In [1]: "},
		{"a\n\n\nb\n\n\n\x1b[3A", "a\n\n\nb"},
		{"a\n\n\n", "a\n\n"}, // the cursor is on the last line: nothing below it
		{"a\n\nx\x1b[A\r", "a\n\nx"},
	} {
		s := newSettler(0)
		s.write([]byte(c.in))
		if got, _ := s.readWhole(0, false, false); got != c.want {
			t.Errorf("read of %q = %q, want %q", c.in, got, c.want)
		}
	}
}

// ipython (prompt_toolkit) reserves about 28 blank rows below its prompt;
// its results carry none of them.
func TestIPythonResultsEndAtThePrompt(t *testing.T) {
	need(t, "ipython3")
	m := newManager(t, Options{Shell: []string{"bash", "-c"}})
	res := mustStart(t, m, StartRequest{Command: "exec ipython3 --no-banner --HistoryManager.enabled=False", WaitUntil: WaitUntilInput, WaitMS: ms(30000)})
	if !strings.Contains(res.Output, "In [1]:") || endsBlank(res.Output) || strings.Count(res.Output, "\n") > 3 {
		t.Fatalf("ipython's first result: %q", res.Output)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "2**64", Submit: true, WaitFor: "In [2]:"})
	if !strings.Contains(w.Output, "18446744073709551616") || endsBlank(w.Output) || strings.Count(w.Output, "\n") > 4 {
		t.Fatalf("the result of 2**64: %q", w.Output)
	}
	full := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "1+1", Submit: true, WaitFor: "In [3]:", Screen: ScreenFull})
	if endsBlank(full.Output) || full.Cursor == nil || full.Cursor.Row != strings.Count(full.Output, "\n") {
		t.Fatalf("the full screen ends at the prompt, where the cursor is: %q, cursor %+v", full.Output, full.Cursor)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "exit", Submit: true, WaitMS: ms(10000)})
}

// blankGrid is a screen of blanks on bg.
func blankGrid(cols, rows int, bg screen.Color) [][]screen.Cell {
	grid := make([][]screen.Cell, rows)
	for y := range grid {
		grid[y] = make([]screen.Cell, cols)
		for x := range grid[y] {
			grid[y][x] = screen.Cell{Text: " ", Rune: ' ', Width: 1, FG: screen.DefaultColor, BG: bg}
		}
	}
	return grid
}

// A row of key labels (a function-key bar) is not listed as highlights; a
// span of another style on the same row is, and so is the content.
func TestHighlightsLeaveOutKeyLabels(t *testing.T) {
	testkit.Parallel(t)
	grid := blankGrid(40, 4, screen.DefaultColor)
	paint := func(y, x0 int, text string, bg screen.Color) {
		for i := range len(text) {
			grid[y][x0+i] = screen.Cell{Text: text[i : i+1], Rune: rune(text[i]), Width: 1, FG: screen.DefaultColor, BG: bg}
		}
	}
	paint(1, 0, "selected", 2)
	for i, l := range []string{"Help", "Save", "Find", "Quit", "More"} {
		paint(3, 1+7*i, l, 6)
	}
	paint(3, 36, "Tab", 1)
	got := highlightTexts(highlights(grid))
	if got != "selected|Tab" {
		t.Fatalf("highlights %s, want the selected item and the tab", got)
	}
}

// htop's first diff lists the column header and the selected process, not
// the ten labels of its function-key bar.
func TestHtopHighlightsFavourContent(t *testing.T) {
	need(t, "htop")
	m := newManager(t, Options{Shell: []string{"bash", "-c"}})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read; exec htop", WaitFor: "ready"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitFor: "PID", Screen: ScreenDiff})
	got := highlightTexts(w.Highlights)
	if !strings.Contains(got, "PID") {
		t.Fatalf("htop's highlights lack the column header: %s", got)
	}
	for _, label := range []string{"Help", "Setup", "Search", "SortBy", "Quit"} {
		if strings.Contains("|"+got+"|", "|"+label+"|") {
			t.Errorf("htop's highlights list the key label %q: %s", label, got)
		}
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "q", WaitMS: ms(10000)})
}
