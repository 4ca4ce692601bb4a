package screen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// A tmux server for side-by-side checks: real programs run in its panes
// under script(1), which records exactly what they write; the recording is
// then replayed into a fresh pane and into a Screen, and the two screens
// are compared row by row. Synchronisation is by the terminal itself: after
// the replay the pane asks for the cursor position and signals only once
// tmux has answered, so every byte before it has been rendered.
type tmuxServer struct {
	t      *testing.T
	socket string
	dir    string
	n      int
}

func newTmux(t *testing.T) *tmuxServer {
	testkit.Need(t, "tmux", "script", "bash")
	// A socket of its own per test: a server another test killed may
	// still be exiting.
	dir := t.TempDir()
	x := &tmuxServer{t: t, socket: filepath.Join(dir, "tmux"), dir: dir}
	t.Cleanup(func() { exec.Command("tmux", "-S", x.socket, "kill-server").Run() })
	// A session that outlives the others, so the server never exits
	// between two panes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x.tmux(ctx, "new-session", "-d", "-s", "keep", "cat")
	return x
}

func (x *tmuxServer) tmux(ctx context.Context, args ...string) string {
	x.t.Helper()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-u", "-S", x.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// run runs shell in a new cols×rows pane, waits until it has rendered
// everything shell printed, and returns the pane's rows and cursor.
func (x *tmuxServer) run(cols, rows int, shell string) (lines []string, row, col int) {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x.n++
	ch := fmt.Sprintf("done-%d", x.n)
	name := fmt.Sprintf("w%d", x.n)
	cmd := fmt.Sprintf(`%s; stty -echo -icanon; printf '\033[6n'; read -rsdR _; tmux -S %s wait-for -S %s; exec cat >/dev/null`, shell, shellQuote(x.socket), ch)
	x.tmux(ctx, "new-session", "-d", "-s", name, "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "bash", "-c", cmd)
	x.tmux(ctx, "wait-for", ch)
	text := x.tmux(ctx, "capture-pane", "-p", "-t", name)
	fmt.Sscanf(x.tmux(ctx, "display-message", "-p", "-t", name, "#{cursor_y} #{cursor_x}"), "%d %d", &row, &col)
	x.tmux(ctx, "kill-session", "-t", name)
	lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return lines, row, col
}

// record runs command under script(1) in a pane and returns what it wrote.
func (x *tmuxServer) record(cols, rows int, command string) []byte {
	x.t.Helper()
	x.n++
	log := filepath.Join(x.dir, fmt.Sprintf("rec%d", x.n))
	x.run(cols, rows, fmt.Sprintf("script -q -c %s %s", shellQuote(command), log))
	b, err := os.ReadFile(log)
	if err != nil {
		x.t.Fatal(err)
	}
	// Drop script's header line and trailer.
	if i := bytes.IndexByte(b, '\n'); i >= 0 && bytes.HasPrefix(b, []byte("Script started")) {
		b = b[i+1:]
	}
	if i := bytes.LastIndex(b, []byte("\nScript done")); i >= 0 {
		b = b[:i]
	}
	return b
}

// replay shows p in a fresh pane, byte for byte (no onlcr), and returns
// the pane's rows and cursor.
func (x *tmuxServer) replay(cols, rows int, p []byte) ([]string, int, int) {
	x.t.Helper()
	x.n++
	f := filepath.Join(x.dir, fmt.Sprintf("replay%d", x.n))
	if err := os.WriteFile(f, p, 0o600); err != nil {
		x.t.Fatal(err)
	}
	return x.run(cols, rows, "stty -opost; cat "+f+"; stty opost")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestTmuxSideBySide records real programs and compares the screen they
// leave (and, for full-screen ones, the screen just before they leave the
// alternate screen) in tmux and in a Screen.
func TestTmuxSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real programs in tmux")
	}
	x := newTmux(t)
	file := filepath.Join(x.dir, "sample.txt")
	var sample strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&sample, "%d\tline %d: the quick brown fox\tjumps 日本語 e\u0301 ok\n", i, i)
	}
	os.WriteFile(file, []byte(sample.String()), 0o600)
	curses := filepath.Join(x.dir, "demo.py")
	os.WriteFile(curses, []byte(`import curses
def main(w):
    curses.use_default_colors()
    w.box()
    w.addstr(2, 4, "curses demo " + "=" * 30)
    for i in range(3, 15):
        w.addstr(i, 6, ("row %d " % i) * 5)
    win = curses.newwin(6, 30, 8, 20)
    win.box()
    win.addstr(2, 2, "a window ----------")
    w.refresh(); win.refresh()
    w.move(5, 10); w.deleteln(); w.move(6, 10); w.insertln()
    w.refresh()
curses.wrapper(main)
`), 0o600)
	env := "LANG=C.UTF-8 TERM=xterm-256color "
	progs := []struct{ name, cmd string }{
		{"vim", env + "vim -u NONE -i NONE -N -c 'set number' -c '20' -c redraw -c 'qa!' " + file},
		{"vim-split", env + "vim -u NONE -i NONE -N -c 'vsplit' -c 'set list' -c redraw -c 'qa!' " + file},
		{"less", env + "LESS= less -X -E +G " + file},
		{"ls-color", env + "ls --color=always -la /usr/bin | head -40"},
		{"top", env + "top -n 1 -w 80"},
		// tmux repeats (REP) only ASCII, so REP follows an ASCII x here.
		{"wide-and-combining", env + `printf '%079d日x\n%078d日本\ne\314\201\314\210 \360\237\221\215|\tz\n\033[4h\033[3;3H中\033[4l\033[5;79H\033[31m字x\033[2b'`},
		{"python-curses", env + "python3 " + curses},
	}
	if _, err := exec.LookPath("python3"); err != nil {
		progs = progs[:len(progs)-1]
	}
	const cols, rows = 80, 24
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			x.t = t
			rec := x.record(cols, rows, p.cmd)
			if len(rec) < 100 {
				t.Fatalf("recorded only %q", rec)
			}
			cuts := []int{len(rec)}
			if i := bytes.LastIndex(rec, []byte("\x1b[?1049l")); i > 0 {
				cuts = append(cuts, i)
			}
			for _, cut := range cuts {
				want, wr, wc := x.replay(cols, rows, rec[:cut])
				s := New(cols, rows)
				s.Write(nil, rec[:cut])
				got := s.Lines()
				for i := range got {
					got[i] = asACS(got[i])
				}
				var diffs []string
				for i := 0; i < rows; i++ {
					w := ""
					if i < len(want) {
						w = want[i]
					}
					if got[i] != w {
						diffs = append(diffs, fmt.Sprintf("row %d\n  tmux   %q\n  screen %q", i, w, got[i]))
					}
				}
				gr, gc := s.Cursor()
				if gr != wr || gc != wc {
					diffs = append(diffs, fmt.Sprintf("cursor: tmux %d,%d screen %d,%d", wr, wc, gr, gc))
				}
				if len(diffs) > 0 {
					t.Errorf("%d of %d bytes: the screens differ:\n%s", cut, len(rec), strings.Join(diffs, "\n"))
				}
			}
		})
	}
}

// asACS maps the DEC line-drawing characters back to the letters that
// select them: tmux keeps those letters (with a charset flag) and
// capture-pane prints the letters.
func asACS(s string) string {
	return acsReplacer.Replace(s)
}

var acsReplacer = strings.NewReplacer(
	"◆", "`", "▒", "a", "␉", "b", "␌", "c", "␍", "d", "␊", "e", "°", "f", "±", "g",
	"␤", "h", "␋", "i", "┘", "j", "┐", "k", "┌", "l", "└", "m", "┼", "n", "⎺", "o",
	"⎻", "p", "─", "q", "⎼", "r", "⎽", "s", "├", "t", "┤", "u", "┴", "v", "┬", "w",
	"│", "x", "≤", "y", "≥", "z", "π", "{", "≠", "|", "£", "}", "·", "~",
)
