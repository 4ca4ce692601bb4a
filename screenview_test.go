package agentpty

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentpty/agentpty/internal/screen"

	"github.com/agentpty/agentpty/internal/testkit"
)

// In a whiptail menu the screen's text is the same before and after an
// arrow or Tab; the diff and the highlights show what moved.
func TestScreenDiffShowsAMenuHighlightMoving(t *testing.T) {
	need(t, "whiptail")
	m := newManager(t, Options{})
	st := mustStart(t, m, StartRequest{Command: "whiptail --menu 'Pick one' 15 50 4 alpha 'first item' beta 'second item' gamma 'third item'; echo rc=$?",
		Cols: 80, Rows: 24, WaitFor: "<Cancel>"})
	raw, err := m.Call(context.Background(), ToolWrite, json.RawMessage(`{"id":"`+st.ID+`","screen":"full","wait_ms":300}`))
	if err != nil || !strings.Contains(string(raw), `"cursor":{"row":7,"col":31}`) || !strings.Contains(string(raw), `"highlights":[{"row":7,"col":31,"len":17,"text":"alpha first item"}]`) {
		t.Fatalf("pty-write with screen full: %s %v", raw, err)
	}
	var res WriteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "alpha first item ") || !strings.Contains(res.Output, "<Cancel>") {
		t.Fatalf("full screen at start: %q", res.Output)
	}
	if len(res.Highlights) != 1 || res.Highlights[0].Text != "alpha first item" || res.Cursor == nil {
		t.Fatalf("at start the highlight is the first item: %+v, cursor %v", res.Highlights, res.Cursor)
	}
	first := res.Highlights[0]
	lines := strings.Split(res.Output, "\n")
	if got := string([]rune(lines[first.Row])[first.Col : first.Col+first.Len]); strings.TrimSpace(got) != first.Text {
		t.Fatalf("highlight %+v covers %q in row %q", first, got, lines[first.Row])
	}

	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\e[B`, Screen: ScreenDiff, WaitUntil: WaitUntilInput})
	if len(w.Highlights) != 1 || w.Highlights[0].Text != "beta  second item" || w.Highlights[0].Row != first.Row+1 {
		t.Fatalf("after arrow down: highlights %+v", w.Highlights)
	}
	if w.Cursor == nil || w.Cursor.Row != first.Row+1 {
		t.Fatalf("after arrow down: cursor %v", w.Cursor)
	}
	wantHunk := "@@ -8,2 +8,2 @@ highlighted: \"beta  second item\"\n "
	if !strings.HasPrefix(w.Output, "--- screen before, cursor at row 8 ") || !strings.Contains(w.Output, wantHunk) ||
		strings.Count(w.Output, "\n") != 4 || strings.Contains(w.Output, "\n-") || strings.Contains(w.Output, "\n+ ") {
		t.Fatalf("after arrow down the diff is the two rows whose highlight changed, as context:\n%s", w.Output)
	}

	// Tab takes the focus to <Ok>, then to <Cancel>: the list keeps its
	// selected item highlighted, listed after the button that changed,
	// and each diff is the buttons' row.
	for _, button := range []string{"<Ok>", "<Cancel>"} {
		tab := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\t`, Screen: ScreenDiff, WaitUntil: WaitUntilInput})
		if texts := highlightTexts(tab.Highlights); texts != button+"|beta  second item" || !strings.Contains(tab.Output, "@@ -17 +17 @@ highlighted: \""+button+"\"\n ") ||
			strings.Count(tab.Output, "@@") != 2 {
			t.Fatalf("Tab should focus %s: highlights %+v, diff\n%s", button, tab.Highlights, tab.Output)
		}
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\r`, WaitFor: "rc="})
	if !strings.Contains(w.Output, "rc=1") {
		t.Fatalf("Enter on <Cancel> should exit 1: %q", w.Output)
	}
}

// dialog draws its selected item and focused button in the backdrop's
// colour inside its window.
func TestHighlightsInADialogMenu(t *testing.T) {
	need(t, "dialog")
	m := newManager(t, Options{})
	st := mustStart(t, m, StartRequest{Command: "dialog --menu 'Pick one' 15 50 4 alpha 'first item' beta 'second item'; echo rc=$?",
		Cols: 80, Rows: 24, WaitFor: "Cancel"})
	w := mustWrite(t, m, WriteRequest{ID: st.ID, Screen: ScreenFull, WaitUntil: WaitUntilInput})
	if got := highlightTexts(w.Highlights); got != "alpha|first item|<  OK  >" {
		t.Fatalf("dialog's highlights at start: %q\n%s", got, w.Output)
	}
	// The item has stayed as the first read listed it while the focus
	// moved: like a fixture, it is not listed again.
	w = mustWrite(t, m, WriteRequest{ID: st.ID, Input: `\t`, Screen: ScreenDiff, WaitUntil: WaitUntilInput})
	if got := highlightTexts(w.Highlights); got != "<Cancel>" || !strings.Contains(w.Output, `highlighted: "<Cancel>"`) {
		t.Fatalf("after Tab: %q\n%s", got, w.Output)
	}
	w = mustWrite(t, m, WriteRequest{ID: st.ID, Input: `\r`, WaitFor: "rc="})
	if !strings.Contains(w.Output, "rc=1") {
		t.Fatalf("Enter on <Cancel> should exit 1: %q", w.Output)
	}
}

func highlightTexts(hs []Highlight) string {
	var texts []string
	for _, h := range hs {
		texts = append(texts, h.Text)
	}
	return strings.Join(texts, "|")
}

// top redraws the primary screen in place: a read that saw several frames
// is one frame, the screen, not their text run together.
func TestInPlaceRedrawReadsAsTheScreen(t *testing.T) {
	need(t, "top")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "top -d 0.2 -n 5; echo top-done", Cols: 100, Rows: 30, WaitFor: "load average"})
	s, _ := m.Session(res.ID)
	if s.Screen().AltScreen {
		t.Fatal("top is on the alternate screen here; this test needs it on the primary one")
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: "top-done"})
	// top's exit scrolls its last frame up a row or two, as on any
	// terminal: the column header is what is left of each frame.
	if n := strings.Count(w.Output, "PID USER"); n != 1 {
		t.Fatalf("a read of four frames should be one frame, has %d column headers:\n%s", n, w.Output)
	}
	if got := strings.Count(w.Output, "\n") + 1; got > 30 || !strings.HasSuffix(w.Output, "top-done") {
		t.Fatalf("one frame is at most the screen's 30 rows, then top-done; got %d rows:\n%s", got, w.Output)
	}
}

// A clear and a listing longer than the screen reads as text: only a
// redraw that stays on the screen reads as the screen.
func TestClearThenScrollingReadsAsText(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read x; clear; seq 1 60; echo done", Rows: 20, WaitFor: "ready"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitFor: "done"})
	if !strings.Contains(w.Output, "\n1\n2\n3\n") || !strings.Contains(w.Output, "60\ndone") {
		t.Fatalf("a listing past a screenful should read whole: %q", w.Output)
	}
	res = mustStart(t, m, StartRequest{Command: "echo ready; read x; for i in 1 2 3; do clear; echo frame $i; done; echo end; read x", Rows: 20, WaitFor: "ready"})
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitFor: "end"})
	if w.Output != "frame 3\nend" {
		t.Fatalf("a clear-and-print loop should read as its screen, got %q", w.Output)
	}
}

func TestScreenModesInVim(t *testing.T) {
	need(t, "vim")
	m := newManager(t, Options{})
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustStart(t, m, StartRequest{Command: "vim -u NONE -N --cmd 'set ttimeout ttimeoutlen=10' " + file, Cols: 60, Rows: 12, WaitFor: "beta", Screen: ScreenFull})
	if !strings.HasPrefix(res.Output, "alpha\nbeta\n~") || res.Cursor == nil {
		t.Fatalf("vim's full screen at start: %q %v", res.Output, res.Cursor)
	}
	// Once vim has drawn its screen, the cursor is back on the file's start.
	if w := mustWrite(t, m, WriteRequest{ID: res.ID, Screen: ScreenFull, WaitUntil: WaitUntilInput}); !strings.HasSuffix(w.Output, "2L, 11B") || *w.Cursor != (Cursor{0, 0}) {
		t.Fatalf("vim's full screen and cursor: %q %v", w.Output, w.Cursor)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "j$", Screen: ScreenDiff, WaitUntil: WaitUntilInput})
	want := "--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 2 col 4"
	if w.Output != want || *w.Cursor != (Cursor{1, 3}) {
		t.Fatalf("a cursor move is a diff of its header alone: %q, cursor %v", w.Output, w.Cursor)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `a!\e`, WaitUntil: WaitUntilInput})
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "x", Screen: ScreenDiff, WaitUntil: WaitUntilInput})
	want = "--- screen before, cursor at row 2 col 5\n+++ screen after, cursor at row 2 col 4\n@@ -2 +2 @@\n-beta!\n+beta"
	if w.Output != want || *w.Cursor != (Cursor{1, 3}) {
		t.Fatalf("one changed row is one small hunk: %q, cursor %v", w.Output, w.Cursor)
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Screen: ScreenDiff, WaitMS: ms(0)})
	if w.Output != "" {
		t.Fatalf("nothing changed is an empty diff: %q", w.Output)
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `:set hlsearch\r/alpha\r`, Screen: ScreenFull, WaitUntil: WaitUntilInput})
	if !strings.HasPrefix(w.Output, "alpha\nbeta\n~") || *w.Cursor != (Cursor{0, 0}) {
		t.Fatalf("full screen after a search: %q, cursor %v", w.Output, w.Cursor)
	}
	if len(w.Highlights) == 0 || w.Highlights[0] != (Highlight{Row: 0, Col: 0, Len: 5, Text: "alpha"}) {
		t.Fatalf("the search match is highlighted: %+v", w.Highlights)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `:q!\r`, WaitMS: ms(500)})
}

// A peek returns output without consuming it, and waits and matches as
// any read does.
func TestPeekLeavesOutputForTheNextRead(t *testing.T) {
	testkit.Parallel(t)
	need(t, "python3")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "python3", WaitFor: ">>> "})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "print(6*7)", Submit: true, WaitFor: "42", Peek: true})
	if !strings.Contains(w.Output, "42") {
		t.Fatalf("peek: %q", w.Output)
	}
	again := mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: ">>> "})
	if !strings.Contains(again.Output, "print(6*7)\n42\n>>> ") {
		t.Fatalf("the read after a peek returns what it saw again: %q", again.Output)
	}
	if w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)}); strings.Contains(w.Output, "42") {
		t.Fatalf("control: a read consumes, yet the next read has %q", w.Output)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "exit()", Submit: true, WaitMS: ms(3000)})
}

func TestPeekOnAShellSeesNewOutputToo(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read x; echo one; read x; echo two; read x", WaitFor: "ready"})
	mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitFor: "one", Peek: true})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitFor: "two", Peek: true})
	if !strings.Contains(w.Output, "one") || !strings.Contains(w.Output, "two") {
		t.Fatalf("a second peek holds the first one's output and the new: %q", w.Output)
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if !strings.Contains(w.Output, "one") || !strings.Contains(w.Output, "two") {
		t.Fatalf("the read after two peeks: %q", w.Output)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Submit: true, WaitMS: ms(1000)})
}

func TestSendSignalInterruptsTheForeground(t *testing.T) {
	testkit.Parallel(t)
	for _, name := range []string{"SIGINT", "int", "2"} {
		t.Run(name, func(t *testing.T) {
			m := newManager(t, Options{})
			res := mustStart(t, m, StartRequest{Command: "echo ready; sleep 30", WaitFor: "ready"})
			if w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(200)}); w.Exited {
				t.Fatalf("control: sleep ended without a signal: %+v", w)
			}
			w := mustWrite(t, m, WriteRequest{ID: res.ID, SendSignal: name, WaitMS: ms(5000)})
			if !w.Exited || !(w.Signal == "SIGINT" || w.ExitCode != nil && *w.ExitCode == 130) {
				t.Fatalf("send_signal %q: %+v", name, w)
			}
			if _, err := m.Write(context.Background(), WriteRequest{ID: res.ID, SendSignal: name}); !isErr(err, ErrExited) {
				t.Fatalf("a signal to an exited session: %v", err)
			}
		})
	}
}

func TestColsRowsResizeBeforeTyping(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; while read x; do stty size; done", WaitFor: "ready"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Cols: 90, Rows: 20, Submit: true, WaitFor: "20 90"})
	if strings.Contains(w.Output, "32 120") {
		t.Fatalf("stty ran before the resize: %q", w.Output)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Rows: 25, Submit: true, WaitFor: "25 90"})
	s, _ := m.Session(res.ID)
	if scr := s.Screen(); scr.Cols != 90 || scr.Rows != 25 {
		t.Fatalf("screen is %dx%d, want 90x25", scr.Cols, scr.Rows)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\x04`, WaitMS: ms(1000)})
}

func TestParseSignal(t *testing.T) {
	testkit.Parallel(t)
	for in, want := range map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "int": syscall.SIGINT, " TERM ": syscall.SIGTERM, "9": syscall.SIGKILL, "sigwinch": syscall.SIGWINCH} {
		if got, ok := parseSignal(in); !ok || got != want {
			t.Errorf("parseSignal(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "SIG", "FOO", "-1", "0", "999", "1.5"} {
		if got, ok := parseSignal(in); ok {
			t.Errorf("parseSignal(%q) = %v, want no signal", in, got)
		}
	}
}

func TestScreenDiffForm(t *testing.T) {
	testkit.Parallel(t)
	v := func(cur Cursor, lines ...string) modeView { return modeView{lines: lines, cursor: cur} }
	cases := []struct {
		name          string
		before, after modeView
		want          string
	}{
		{"nothing", v(Cursor{1, 2}, "a", "b"), v(Cursor{1, 2}, "a", "b"), ""},
		{"cursor", v(Cursor{0, 0}, "a", "b"), v(Cursor{1, 2}, "a", "b"),
			"--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 2 col 3"},
		{"one row", v(Cursor{0, 0}, "a", "b", "c", "d", "e"), v(Cursor{0, 0}, "a", "b", "c", "d", "E"),
			"--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 1 col 1\n@@ -5 +5 @@\n-e\n+E"},
		{"runs", v(Cursor{}, "a", "b", "c", "d"), v(Cursor{}, "A", "B", "c", "D"),
			"--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 1 col 1\n@@ -1,2 +1,2 @@\n-a\n+A\n-b\n+B\n@@ -4 +4 @@\n-d\n+D"},
		{"fewer rows", v(Cursor{}, "a", "b", "c"), v(Cursor{}, "a"),
			"--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 1 col 1\n@@ -2,2 +1,0 @@\n-b\n-c"},
		{"new screen", modeView{}, v(Cursor{1, 0}, "", "$"),
			"--- screen before, cursor at row 1 col 1\n+++ screen after, cursor at row 2 col 1\n@@ -2 +2 @@\n-\n+$"},
	}
	for _, c := range cases {
		if got := viewDiff(c.before, c.after); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	hl := viewDiff(modeView{lines: []string{"[ok] [no]"}, highlights: []Highlight{{0, 0, 4, "[ok]"}}},
		modeView{lines: []string{"[ok] [no]"}, highlights: []Highlight{{0, 5, 4, "[no]"}}})
	if want := "@@ -1 +1 @@ highlighted: \"[no]\"\n [ok] [no]"; !strings.HasSuffix(hl, want) {
		t.Errorf("a moved highlight:\n%s\nwant it to end\n%s", hl, want)
	}
}

// Highlights are small regions of their own style: a dialog window covering
// much of the screen is a ground, its blank shadow is decoration; the
// reverse-video item, an item in the backdrop's colour inside the window
// and the coloured button are highlights.
func TestHighlightsSkipGroundsAndBlankDecoration(t *testing.T) {
	testkit.Parallel(t)
	grid := blankGrid(20, 6, 4) // a blue backdrop
	paint := func(y, x0, x1 int, text string, f func(*screen.Cell)) {
		for x := x0; x < x1; x++ {
			c := &grid[y][x]
			f(c)
			if i := x - x0; i < len(text) {
				c.Text, c.Rune = text[i:i+1], rune(text[i])
			}
		}
	}
	for y := 1; y < 5; y++ {
		paint(y, 2, 16, "", func(c *screen.Cell) { c.BG = 7 })  // the window: 56 of 120 cells
		paint(y, 16, 17, "", func(c *screen.Cell) { c.BG = 0 }) // its shadow, blank
	}
	paint(2, 3, 10, " item ", func(c *screen.Cell) { c.Reverse = true })
	paint(3, 3, 9, "pick", func(c *screen.Cell) { c.BG = 4 }) // the backdrop's colour, inside the window
	paint(4, 4, 8, "<Ok>", func(c *screen.Cell) { c.BG = 1 })
	got := highlights(grid)
	want := []Highlight{{2, 3, 7, "item"}, {3, 3, 6, "pick"}, {4, 4, 4, "<Ok>"}}
	if b1, b2 := mustJSON(t, got), mustJSON(t, want); b1 != b2 {
		t.Fatalf("highlights %s, want %s", b1, b2)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScreenArgumentsInTheSchemas(t *testing.T) {
	testkit.Parallel(t)
	m := NewManager(Options{})
	defer m.Close()
	for _, tool := range m.Tools() {
		var in, out struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(tool.OutputSchema, &out); err != nil {
			t.Fatal(err)
		}
		var args, results []string
		switch tool.Name {
		case ToolStart:
			args, results = []string{"screen"}, []string{"cursor", "highlights"}
		case ToolWrite:
			args, results = []string{"screen", "peek", "send_signal", "cols", "rows"}, []string{"cursor", "highlights"}
		}
		for _, a := range args {
			if !strings.Contains(string(in.Properties[a]), `"description"`) {
				t.Errorf("%s: argument %s has no described schema: %s", tool.Name, a, in.Properties[a])
			}
		}
		for _, r := range results {
			if in.Properties == nil || out.Properties[r] == nil {
				t.Errorf("%s: result %s is not in the output schema", tool.Name, r)
			}
		}
	}
	var hl struct {
		Items struct {
			Properties map[string]any `json:"properties"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(outputSchemaProp(t, WriteResult{}, "highlights")), &hl); err != nil || len(hl.Items.Properties) != 4 {
		t.Fatalf("highlights schema: %+v %v", hl, err)
	}
}

func outputSchemaProp(t *testing.T, v any, name string) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(outputSchema(v), &s); err != nil {
		t.Fatal(err)
	}
	return string(s.Properties[name])
}

// What a result lists of the highlights: everything until they change;
// then what changed first, then the cursor's row, then the rest, and not
// the fixtures that stayed through every read; a peek changes nothing;
// another screen starts over.
func TestHighlightsLeaveOutFixtures(t *testing.T) {
	testkit.Parallel(t)
	label := func(i int) Highlight { return Highlight{Row: 9, Col: 5 * i, Len: 4, Text: "F" + strconv.Itoa(i)} }
	var labels []Highlight
	for i := range 20 {
		labels = append(labels, label(i))
	}
	item := func(row int) Highlight { return Highlight{Row: row, Col: 1, Len: 6, Text: "item " + strconv.Itoa(row)} }
	view := func(cursorRow int, alt bool, hs ...Highlight) modeView {
		return modeView{lines: make([]string, 10), cursor: Cursor{Row: cursorRow}, alt: alt, cols: 100, highlights: hs}
	}
	texts := func(hs []Highlight) string { return highlightTexts(hs) }
	var m litMemory
	all := append([]Highlight{item(2)}, labels...)
	if got := m.pick(view(0, true, all...), true); len(got) != maxHighlights || got[0] != item(2) {
		t.Fatalf("the first read lists the first %d top to bottom: %s", maxHighlights, texts(got))
	}
	if got := m.pick(view(0, true, all...), true); len(got) != maxHighlights || got[0] != item(2) {
		t.Fatalf("nothing changed yet: every one again: %s", texts(got))
	}
	moved := append([]Highlight{item(1), item(3)}, labels...)
	if got := m.pick(view(0, true, moved...), false); texts(got) != "item 1|item 3" {
		t.Fatalf("a peek after the item moved: %s", texts(got))
	}
	if got := m.pick(view(3, true, moved...), true); texts(got) != "item 1|item 3" {
		t.Fatalf("after the item moved: %s", texts(got))
	}
	withCursor := append([]Highlight{item(1), item(3), item(5)}, labels...)
	if got := m.pick(view(3, true, withCursor...), true); texts(got) != "item 5|item 3|item 1" {
		t.Fatalf("what changed, then the cursor's row, then the rest: %s", texts(got))
	}
	if got := m.pick(view(3, false, all...), true); len(got) != maxHighlights {
		t.Fatalf("another screen lists every one again: %s", texts(got))
	}
}
