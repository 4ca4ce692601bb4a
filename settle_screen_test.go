package agentpty

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// The settled text against a terminal's own scrollback.
//
// testdata/settle/screen/NAME.COLSxROWS.in holds output streams: recordings
// of real programs (grep --color, gcc's coloured diagnostics, a top frame)
// and streams written in the patterns of others (apt's progress bar under
// a scroll region, docker's and pip's multi-line redraws, progress bars,
// spinners, colours, wrapping, tabs, wide text, line feeds that keep the
// column, clearing). Each is what the master of a COLS×ROWS terminal reads.
// NAME.golden is what reading it all returns.

// settleScreenStream is one stream and the size it was written for.
type settleScreenStream struct {
	name       string
	cols, rows int
	raw        []byte
}

// settleScreenStreams reads the streams of testdata/settle/screen, and
// those of testdata/settle, recorded at 80 columns, at 80x24.
func settleScreenStreams(t *testing.T) []settleScreenStream {
	t.Helper()
	var out []settleScreenStream
	ins, _ := filepath.Glob(filepath.Join("testdata", "settle", "screen", "*.in"))
	older, _ := filepath.Glob(filepath.Join("testdata", "settle", "*.in"))
	if len(ins) == 0 || len(older) == 0 {
		t.Fatal("no streams under testdata/settle")
	}
	for _, in := range append(ins, older...) {
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		st := settleScreenStream{name: name, cols: 80, rows: 24, raw: raw}
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			if _, err := fmt.Sscanf(name[i+1:], "%dx%d", &st.cols, &st.rows); err != nil {
				t.Fatalf("%s: the name must end in .COLSxROWS: %v", in, err)
			}
		}
		out = append(out, st)
	}
	return out
}

// settleAt feeds raw to a settler of a cols×rows terminal, as the session
// does, chunk bytes at a time.
func settleAt(cols, rows int, raw []byte, chunk int) *settler {
	s := newSettler(0)
	s.setCols(cols)
	s.setRows(rows)
	s.keepCol = true
	for len(raw) > 0 {
		n := min(chunk, len(raw))
		s.write(raw[:n])
		raw = raw[n:]
	}
	return s
}

// TestSettleScreenGolden replays every stream of testdata/settle/screen
// whole and at every chunk size against its golden file (-update rewrites
// them).
func TestSettleScreenGolden(t *testing.T) {
	testkit.Parallel(t)
	ins, _ := filepath.Glob(filepath.Join("testdata", "settle", "screen", "*.in"))
	streams := settleScreenStreams(t)[:len(ins)]
	for _, st := range streams {
		t.Run(st.name, func(t *testing.T) {
			got := settleAt(st.cols, st.rows, st.raw, len(st.raw)).read(0)
			path := filepath.Join("testdata", "settle", "screen", st.name+".golden")
			want := settleGolden(t, path, got)
			if got != want {
				t.Fatalf("settled text differs from %s:\n%s", path, settleDiff(want, got))
			}
			for chunk := 1; chunk < len(st.raw); chunk++ {
				if got := settleAt(st.cols, st.rows, st.raw, chunk).read(0); got != want {
					t.Fatalf("in chunks of %d:\n%s", chunk, settleDiff(want, got))
				}
			}
		})
	}
}

// settleTmuxDiffers lists where the settled text follows xterm, not tmux.
var settleTmuxDiffers = []struct{ stream, tmux, settled, why string }{
	{"wrap_width.10x8", "0123456789abcdefghiZ", "0123456789abcdefghZj",
		"BS with a wrap pending: tmux's cursor waits one past the last column, so BS lands on the last " +
			"column; xterm's is on the last column and BS goes to the one before (and the screen, which " +
			"matches xterm's corpus, agrees)"},
}

// TestSettleMatchesTmux runs each stream in a tmux pane of its size and
// compares the pane's history and screen, wrapped lines joined
// (capture-pane -p -J -S -), with the settled text, line by line: trailing
// blanks and trailing empty lines aside, they must agree, and the score is
// logged. Where tmux and xterm disagree the settled text follows xterm,
// and the differences allowed below say why.
func TestSettleMatchesTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tmux")
	}
	need(t, "tmux")
	x := startTmux(t)
	total, same := 0, 0
	for _, st := range settleScreenStreams(t) {
		theirs := settleLines(x.run(t, "capture-pane", "-p", "-J", "-S", "-", "-t", x.play(t, st.cols, st.rows, st.raw)))
		ours := settleLines(settleAt(st.cols, st.rows, st.raw, len(st.raw)).read(0))
		n := max(len(theirs), len(ours))
		total += n
		var diff strings.Builder
		for i := range n {
			var a, b string
			if i < len(theirs) {
				a = theirs[i]
			}
			if i < len(ours) {
				b = ours[i]
			}
			if a == b {
				same++
				continue
			}
			if settleFollowsXterm(st.name, a, b) {
				continue
			}
			fmt.Fprintf(&diff, "line %d:\n  tmux    %q\n  settled %q\n", i+1, a, b)
		}
		if diff.Len() > 0 {
			t.Errorf("%s (%dx%d) differs from tmux:\n%s", st.name, st.cols, st.rows, diff.String())
		}
	}
	t.Logf("settled text against tmux: %d of %d lines agree, %d differ where xterm does", same, total, len(settleTmuxDiffers))
	if same+len(settleTmuxDiffers) != total {
		t.Errorf("%d lines differ", total-same)
	}
}

// settleFollowsXterm reports whether the difference is a listed one.
func settleFollowsXterm(stream, tmux, settled string) bool {
	for _, d := range settleTmuxDiffers {
		if d.stream == stream && d.tmux == tmux && d.settled == settled {
			return true
		}
	}
	return false
}

// settleGolden returns the golden file at path, first rewritten with got
// under -update.
func settleGolden(t *testing.T, path, got string) string {
	t.Helper()
	if settleUpdate() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(want)
}

// settleLines splits text into lines without trailing blanks, dropping
// empty lines at the end.
func settleLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// settleScreenCases run on a terminal of the size given, as the session
// feeds the settler, whole and at every chunk size.
var settleScreenCases = []struct {
	name       string
	cols, rows int
	in, want   string
}{
	{"el with the wrap pending keeps the character", 6, 4, "needle\x1b[m\x1b[K\r\nnext", "needle\nnext"},
	{"ech with the wrap pending keeps it too", 6, 4, "needle\x1b[4X\r\n", "needle"},
	{"bare lf keeps the column", 10, 4, "ab\ncd\r\nx", "ab\n  cd\nx"},
	{"vt ff ind keep the column", 10, 6, "a\vb\fc\x1bDd\x1bEe", "a\n b\n  c\n   d\ne"},
	{"wide character leaves no space", 5, 4, "0123日本", "0123日本"},
	{"the gap survives an edit of the line", 5, 4, "0123日\r\nx\x1b[2A\rA", "A123日\nx"},
	{"status row under a scroll region", 20, 4, "one\r\n\x1b[1;3r\x1b[3;1Htwo\r\n\x1b7\x1b[4;1Hbar 50%\x1b8three\r\nfour\r\n", "one\n\ntwo\nthree\nfour"},
	{"cup into the status row and back", 20, 4, "\x1b[1;3ra\r\n\x1b[4;1Hbar\x1b[2;1Hb\r\nc", "a\nb\nc"},
	{"up stops at the top of the screen", 10, 3, "1\r\n2\r\n3\r\n4\r\n\x1b[9AX", "1\n2\nX\n4"},
	// What scrolls out of a region that starts below the top stays in the text.
	{"up stops at the top margin", 10, 5, "\x1b[2;5r\x1b[5;1H1\r\n2\r\n3\r\n4\r\n\x1b[9AX", "\n\n\n\n1\nX\n3\n4"},
	{"cup to a row below the text", 10, 5, "a\x1b[4;3Hb", "a\n\n\n  b"},
	{"ed 2 keeps what was on the screen", 10, 4, "a\r\nb\x1b[H\x1b[2Jc", "a\nb\nc"},
	{"ed 2 on a blank screen adds nothing", 10, 4, "a\r\n\r\n\x1b[2J\x1b[2J\x1b[2J\x1b[2Jb", "a\n\n\nb"},
	{"tab with the wrap pending stays", 4, 3, "abcd\tX", "abcdX"},
	{"rep stops at the screen's end", 4, 2, "x\x1b[1000b", "xxxxxxxx"},
}

func TestSettleScreenCases(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range settleScreenCases {
		t.Run(c.name, func(t *testing.T) {
			for chunk := 1; chunk <= len(c.in); chunk++ {
				if got := settleAt(c.cols, c.rows, []byte(c.in), chunk).read(0); got != c.want {
					t.Fatalf("%q in chunks of %d:\n got %q\nwant %q", c.in, chunk, got, c.want)
				}
			}
		})
	}
}

// TestSettleREPBounded floods the settler with REPs of the largest count
// it parses: each prints no more than the cells left on the screen.
func TestSettleREPBounded(t *testing.T) {
	testkit.Parallel(t)
	flood := []byte("x" + strings.Repeat("\x1b[65535b", 2000))
	s := settleAt(80, 24, flood, 4096)
	text := s.scrollback()
	// A screen from the first REP, then at most a row for each of the rest.
	if most := 80*24 + 80*2000 + 2000; len(text) > most {
		t.Fatalf("2000 REPs left %d bytes of text, over %d", len(text), most)
	}
	if strings.Trim(strings.ReplaceAll(text, "\n", ""), "x") != "" {
		t.Fatalf("the text holds more than x: %.80q", text)
	}
}

// TestScreenCells reads the attributes a program gave its output back from
// Session.Screen: what a host renders, and where highlights come from.
func TestScreenCells(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: `printf 'plain \033[1;4;32mbold\033[0m \033[7msel\033[0m \033[48;2;10;20;200mbg\033[0m 日x\n'; echo done; exec cat`, WaitFor: "done", Cols: 40, Rows: 5})
	s, _ := m.Session(res.ID)
	scr := s.Screen()
	if len(scr.Cells) != 5 || len(scr.Cells[0]) != 40 {
		t.Fatalf("Cells is %d rows", len(scr.Cells))
	}
	row := scr.Cells[0]
	var text strings.Builder
	for _, c := range row {
		text.WriteString(c.Text)
	}
	if got := strings.TrimRight(text.String(), " "); got != scr.Lines[0] {
		t.Fatalf("the cells read %q, the line %q", got, scr.Lines[0])
	}
	if c := row[0]; c.Bold || c.Reverse || c.FG != DefaultColor || c.BG != DefaultColor || c.Width != 1 {
		t.Errorf("plain: %+v", c)
	}
	if c := row[6]; c.Text != "b" || !c.Bold || !c.Underline || c.FG != 10 {
		t.Errorf("bold green underlined (bright 10 when bold): %+v", c)
	}
	if c := row[11]; c.Text != "s" || !c.Reverse || c.Bold {
		t.Errorf("reverse: %+v", c)
	}
	if c := row[15]; c.Text != "b" || c.BG != RGBFlag|0x0a14c8 {
		t.Errorf("background: %+v", c)
	}
	if c := row[18]; c.Text != "日" || c.Width != 2 || row[19].Width != 0 || row[20].Text != "x" {
		t.Errorf("wide: %+v %+v %+v", c, row[19], row[20])
	}
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
}

// TestSettleRawLineFeed runs a program that turns output processing off:
// its bare line feeds keep the column, as on the terminal, and once it is
// back on the line discipline's CR LF starts lines at the left again.
func TestSettleRawLineFeed(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: `stty -opost; printf 'raw\nmode\n'; stty opost; printf 'cooked\nagain\n'; echo done`, WaitFor: "done"})
	want := "raw\n   mode\n       cooked\nagain\ndone"
	if !strings.Contains(res.Output, want) {
		t.Fatalf("output %q does not hold %q", res.Output, want)
	}
}
