package agentpty

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// TestScreenMatchesTmux holds Session.Screen up against tmux, a terminal
// emulator that owes nothing to ours, on real programs at 80x24.
//
// Replay: each program runs in a session until a known string is on the
// screen; exactly the bytes the session's screen has parsed are then played
// into a tmux pane of the same size, and the two screens must agree row by
// row, with the cursor and the alternate-screen flag. The same again after
// each of the keys some programs are then given (scrolling, searching,
// editing, quitting).
//
// Live: deterministic programs also run in tmux itself, from the same
// command and environment. They say when they have drawn by setting the
// window title to $AGENTPTY_MARK-1 (and, after the key Q if they take one,
// to $AGENTPTY_MARK-2): on both sides the test waits for that, not a delay.
func TestScreenMatchesTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real programs in tmux")
	}
	need(t, "tmux", "bash")
	x := startTmux(t)
	dir := t.TempDir()

	file := filepath.Join(dir, "sample.txt")
	var sample strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&sample, "%d\tline %d: the quick brown fox jumps over the lazy dog\n", i, i)
		switch i {
		case 3:
			sample.WriteString("wide: 日本語のテキスト | end\n")
		case 5:
			sample.WriteString("combining: cafe\u0301 na\u0303o | end\n")
		case 7:
			sample.WriteString(strings.Repeat("a long line that wraps ", 8) + "end\n")
		}
	}
	writeFile(t, file, sample.String())

	// Q arms a SafeState autocommand, so the second mark follows whatever
	// vim draws once it has handled the key.
	markVim := filepath.Join(dir, "mark.vim")
	writeFile(t, markVim, `func s:Mark(n)
  call echoraw("\e]2;" .. $AGENTPTY_MARK .. "-" .. a:n .. "\x07")
endfunc
au SafeState * ++once call s:Mark(1)
nnoremap Q <Cmd>au SafeState * ++once call <SID>Mark(2)<CR>
`)

	curses := filepath.Join(dir, "box.py")
	writeFile(t, curses, `import curses, os, sys
def main(w):
    curses.use_default_colors()
    curses.init_pair(1, curses.COLOR_YELLOW, curses.COLOR_BLUE)
    w.box()
    w.addstr(0, 3, " agentpty curses ")
    w.addstr(2, 4, "Hello from curses", curses.A_BOLD)
    for i in range(4, 11):
        w.addstr(i, 4, "row %2d " % i + "=" * (3 * i), curses.color_pair(1))
    w.hline(20, 2, curses.ACS_HLINE, 30)
    win = curses.newwin(7, 34, 12, 30)
    win.keypad(True)
    win.box()
    win.addstr(2, 2, "a window: 日本語 ok")
    win.addstr(4, 2, "cafe\u0301 done")
    w.noutrefresh()
    win.noutrefresh()
    curses.doupdate()
    sys.stdout.write("\033]2;" + os.environ.get("AGENTPTY_MARK", "") + "-1\007")
    sys.stdout.flush()
    win.getch()
curses.wrapper(main)
`)

	repo := filepath.Join(dir, "repo")
	if _, err := exec.LookPath("git"); err == nil {
		gitRepo(t, repo, 12)
	}

	progs := []struct {
		name    string
		need    []string
		cmd     string
		cwd     string
		waitFor string
		// live, when set, is the command run in both terminals: the
		// program sets the title as above. key is typed after the first
		// mark; empty means compare at the first mark.
		live, key string
		// steps are keys typed after the start, each followed by a
		// comparison once its string is on the screen (an empty string:
		// once the program has exited).
		steps []step
	}{
		{
			name: "vim", need: []string{"vim"}, cmd: "vim -u NONE -i NONE -N -n " + file, waitFor: "line 18:",
			steps: []step{
				{`\x05\x05\x05`, "line 21:"},               // Ctrl-E: scroll up a line at a time
				{`:set number\r`, "  4 wide:"},             // a full redraw
				{`\x04`, "line 30:"},                       // Ctrl-D: half a page
				{`ggOhello 世界 cafe\u0301\x1b`, "hello 世界"}, // insert a line above the first
				{`3j3dd`, "3 fewer lines"},                 // delete three
				{`G`, "line 60:"},
			},
			// Live without the terminal queries: tmux and our terminal
			// identify themselves differently (DA2), and vim answers
			// tmux's reply with more queries and, under tmux 3.3a, then
			// scrolls as if keys had been typed. The replay covers vim's
			// queries.
			live: "vim -u NONE -i NONE -N -n --cmd 'set t_RV= t_u7= t_RF= t_RB= t_RC= t_RS=' -S " + markVim + " " + file, key: "Q",
		},
		{name: "less", need: []string{"less"}, cmd: "less " + file, waitFor: "sample.txt", steps: []step{
			{" ", "line 35:"},   // a page forward
			{"jjj", "line 38:"}, // three lines
			{"G", "(END)"},
			{"?line 20\r", "line 21:"}, // search backwards
			{"q", ""},
		}},
		{name: "htop", need: []string{"htop"}, cmd: "htop", waitFor: "Quit", steps: []step{
			{`\e[17~`, "Sort by"}, // F6: a panel beside the list
		}},
		{name: "top", need: []string{"top"}, cmd: "top", waitFor: "PID"},
		// LESS unset, so git sets it (FRX) as it does for everyone.
		{name: "git-log", need: []string{"git", "less"}, cmd: "env -u LESS git -c core.pager=less -c color.ui=always log", cwd: repo, waitFor: "commit 10 of 12", steps: []step{
			{" ", "commit 7 of 12"},
			{"q", ""}, // less -X leaves the log on the primary screen
		}},
		{name: "whiptail", need: []string{"whiptail"}, cmd: "whiptail --title agentpty --msgbox 'Hello from whiptail' 10 40", waitFor: "Hello from whiptail"},
		{name: "dialog", need: []string{"dialog"}, cmd: "dialog --title agentpty --msgbox 'Hello from dialog' 10 40", waitFor: "Hello from dialog"},
		{name: "python-curses", need: []string{"python3"}, cmd: "python3 " + curses, waitFor: "Hello from curses", live: "python3 " + curses},
	}
	env := []string{"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LESSHISTFILE=-", "XDG_CONFIG_HOME=" + dir}
	const cols, rows = 80, 24
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			need(t, p.need...)
			m := newManager(t, Options{})
			res := mustStart(t, m, StartRequest{Command: p.cmd, Cols: cols, Rows: rows, Cwd: p.cwd, Env: env, WaitFor: p.waitFor})
			s, _ := m.Session(res.ID)
			what, waitFor := "started", p.waitFor
			for i := 0; ; i++ {
				ours, raw := parsedScreen(t, s)
				theirs := x.replay(t, cols, rows, raw)
				if waitFor != "" {
					showing(t, theirs, waitFor)
				}
				compareScreens(t, fmt.Sprintf("%s %s, %d bytes replayed", p.name, what, len(raw)), theirs, ours)
				if i == len(p.steps) {
					break
				}
				st := p.steps[i]
				what, waitFor = fmt.Sprintf("after %q", st.keys), st.waitFor
				mustWrite(t, m, WriteRequest{ID: res.ID, Input: st.keys, WaitFor: st.waitFor})
				if st.waitFor == "" {
					if _, err := s.Wait(waitCtx(t)); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
		if p.live == "" {
			continue
		}
		t.Run(p.name+"-live", func(t *testing.T) {
			need(t, p.need...)
			m := newManager(t, Options{})
			mark := "agentpty-session"
			res := mustStart(t, m, StartRequest{Command: p.live, Cols: cols, Rows: rows, Cwd: p.cwd, Env: slices.Concat(env, []string{"AGENTPTY_MARK=" + mark}), WaitFor: p.waitFor})
			s, _ := m.Session(res.ID)
			awaitTitle(t, s, mark+"-1")
			if p.key != "" {
				if err := s.Send(p.key); err != nil {
					t.Fatal(err)
				}
				awaitTitle(t, s, mark+"-2")
			}
			ours := s.Screen()
			theirs := x.live(t, cols, rows, p.cwd, env, p.live, p.key)
			showing(t, theirs, p.waitFor)
			compareScreens(t, p.name+" run in both", theirs, ours)
		})
	}
}

// step is keys typed into a program and what to wait for after them.
type step struct{ keys, waitFor string }

// parsedScreen returns the session's screen together with exactly the
// bytes it has parsed, from the first. While those end inside an escape
// sequence or a character it waits for more, so that the mark the replay
// appends is read as a sequence of its own.
func parsedScreen(t *testing.T, s *Session) (Screen, []byte) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		ch, _ := nextChange(s)
		scr, off, raw, start := parsedSnapshot(s)
		if start != 0 {
			t.Fatalf("the ring dropped the first %d bytes; the replay needs them all", start)
		}
		raw = raw[:off]
		if endsClean(raw) {
			return scr, raw
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("the output still ends inside a sequence: %q", raw[max(0, len(raw)-40):])
		}
	}
}

// awaitTitle waits until the program has set the window title to title,
// which never reaches the settled text that wait_for matches.
func awaitTitle(t *testing.T, s *Session, title string) {
	t.Helper()
	ctx := waitCtx(t)
	seq := []byte("\x1b]2;" + title + "\a")
	for {
		ch, drained := nextChange(s)
		raw, _ := rawOutput(s)
		if bytes.Contains(raw, seq) {
			return
		}
		if drained {
			t.Fatalf("the program exited before setting the title %q; it wrote %q", title, raw)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("the title %q was not set; the output is %q", title, raw)
		}
	}
}

// completeEscape matches an escape sequence that has ended: a CSI, a
// string ended by BEL (one ended by ESC \ has that ESC last), or an ESC
// with intermediates and a final byte that does not open a string.
var completeEscape = regexp.MustCompile(`^\x1b(\[[0-?]*[ -/]*[@-~]|[]P_^X][^\x07\x1b]*\x07|[ -/]*[0-OQ-WYZ\x5c\x60-\x7e])`)

// endsClean reports whether p ends outside any escape sequence and UTF-8
// character.
func endsClean(p []byte) bool {
	j := len(p)
	for k := 0; k < 3 && j > 0 && !utf8.RuneStart(p[j-1]); k++ {
		j--
	}
	if j > 0 && p[j-1] >= 0xc0 && !utf8.FullRune(p[j-1:]) {
		return false
	}
	i := bytes.LastIndexByte(p, 0x1b)
	return i < 0 || completeEscape.Match(p[i:])
}

// showing fails the test unless tmux shows lit: two blank screens agree
// too.
func showing(t *testing.T, theirs tmuxScreen, lit string) {
	t.Helper()
	for _, l := range theirs.lines {
		if strings.Contains(l, lit) {
			return
		}
	}
	t.Fatalf("tmux does not show %q:\n%s", lit, strings.Join(theirs.lines, "\n"))
}

// compareScreens reports every row, and the cursor and alternate-screen
// flag, where ours differs from tmux's.
func compareScreens(t *testing.T, what string, theirs tmuxScreen, ours Screen) {
	t.Helper()
	var diffs []string
	if ours.Rows != len(theirs.lines) || ours.Cols != theirs.cols {
		diffs = append(diffs, fmt.Sprintf("size: tmux %dx%d, ours %dx%d", theirs.cols, len(theirs.lines), ours.Cols, ours.Rows))
	}
	for i := 0; i < max(len(theirs.lines), len(ours.Lines)); i++ {
		var want, got string
		if i < len(theirs.lines) {
			want = theirs.lines[i]
		}
		if i < len(ours.Lines) {
			got = strings.TrimRight(ours.Lines[i], " ")
		}
		if got != want {
			diffs = append(diffs, fmt.Sprintf("row %2d  tmux %q\n        ours %q", i, want, got))
		}
	}
	if ours.Cursor != (Cursor{Row: theirs.row, Col: theirs.col}) {
		diffs = append(diffs, fmt.Sprintf("cursor: tmux row %d col %d, ours row %d col %d", theirs.row, theirs.col, ours.Cursor.Row, ours.Cursor.Col))
	}
	if ours.AltScreen != theirs.alt {
		diffs = append(diffs, fmt.Sprintf("alternate screen: tmux %v, ours %v", theirs.alt, ours.AltScreen))
	}
	if len(diffs) > 0 {
		t.Errorf("%s: the screens differ:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// lineDrawing maps the letters that select DEC line-drawing characters to
// the characters, as our screen draws them.
var lineDrawing = func() map[rune]rune {
	m := map[rune]rune{}
	drawn := []rune("◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·")
	for i, r := range "`abcdefghijklmnopqrstuvwxyz{|}~" {
		m[r] = drawn[i]
	}
	return m
}()

// sgr matches what capture-pane -e adds for colours and attributes.
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// plainRows turns what capture-pane -e prints into the rows' text. tmux
// keeps a line-drawing character as the letter that selects it and prints
// it between SO and SI, which it does not repeat on the rows that follow;
// colours and attributes are dropped.
func plainRows(text string) []string {
	var rows []string
	var b strings.Builder
	acs := false
	for _, r := range sgr.ReplaceAllString(strings.TrimSuffix(text, "\n"), "") {
		switch {
		case r == '\n':
			rows = append(rows, strings.TrimRight(b.String(), " "))
			b.Reset()
		case r == '\x0e':
			acs = true
		case r == '\x0f':
			acs = false
		case acs && lineDrawing[r] != 0:
			b.WriteRune(lineDrawing[r])
		default:
			b.WriteRune(r)
		}
	}
	return append(rows, strings.TrimRight(b.String(), " "))
}

// tmuxServer is a tmux server of the test's own, on its own socket.
//
// A pane says it is ready to be read by setting its title to a name
// starting agentpty-sync-: a hook then signals the wait-for channel of that
// name. tmux runs hooks after it has parsed what the pane wrote, so by then
// the title is the last one set; the @synced pane option keeps a title from
// signalling twice (two signals before anyone waits cancel out in tmux).
type tmuxServer struct {
	socket string
	dir    string
	n      int
}

type tmuxScreen struct {
	lines    []string // right-trimmed
	cols     int
	row, col int
	alt      bool
}

func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	dir := t.TempDir()
	x := &tmuxServer{socket: filepath.Join(dir, "tmux"), dir: dir}
	t.Cleanup(func() { _ = x.command(context.Background(), "kill-server").Run() })
	// A session that outlives the panes, so the server never exits between
	// two of them.
	x.run(t, "new-session", "-d", "-s", "keep", "cat")
	x.run(t, "set-hook", "-g", "pane-title-changed",
		`if -F '#{&&:#{m:agentpty-sync-*,#{pane_title}},#{!=:#{@synced},#{pane_title}}}' `+
			`{ set -pF @synced '#{pane_title}'; run-shell -C 'wait-for -S #{pane_title}' }`)
	return x
}

func (x *tmuxServer) command(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, "tmux", append([]string{"-u", "-S", x.socket, "-f", "/dev/null"}, args...)...)
	c.Env = childEnv() // the sessions' TERM, and no TMUX of the host's
	return c
}

// run runs a tmux command; a wait-for that is never signalled fails the
// test after 30 s instead of hanging it.
func (x *tmuxServer) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := x.command(ctx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// replay plays raw into a fresh cols×rows pane, byte for byte, and returns
// the pane's screen once tmux has parsed all of it.
func (x *tmuxServer) replay(t *testing.T, cols, rows int, raw []byte) tmuxScreen {
	t.Helper()
	return x.capture(t, x.play(t, cols, rows, raw))
}

// play plays raw into a fresh cols×rows pane, byte for byte, and returns
// the pane's name once tmux has parsed all of it.
func (x *tmuxServer) play(t *testing.T, cols, rows int, raw []byte) string {
	t.Helper()
	name, mark := x.next()
	f := filepath.Join(x.dir, name)
	writeFile(t, f, string(raw)+"\x1b]2;"+mark+"\a")
	// Raw mode: no onlcr, and no echo of the replies tmux gives to the
	// queries in raw.
	x.newPane(t, name, cols, rows, "", "stty raw -echo; cat "+cmdline.ShellQuote(f)+"; exec cat >/dev/null")
	x.run(t, "wait-for", mark)
	return name
}

// live runs command in a fresh cols×rows pane as a session would run it,
// with env, and returns the pane's screen once the program has set its
// title to the first mark, or typed key and waited for the second.
func (x *tmuxServer) live(t *testing.T, cols, rows int, cwd string, env []string, command, key string) tmuxScreen {
	t.Helper()
	name, mark := x.next()
	var sh strings.Builder
	sh.WriteString("exec env -u TMUX -u TMUX_PANE -u COLUMNS -u LINES -u STY TERM=xterm-256color")
	for _, kv := range slices.Concat(env, []string{"AGENTPTY_MARK=" + mark}) {
		sh.WriteString(" " + cmdline.ShellQuote(kv))
	}
	sh.WriteString(" bash -lc " + cmdline.ShellQuote(command))
	x.newPane(t, name, cols, rows, cwd, sh.String())
	x.run(t, "wait-for", mark+"-1")
	if key != "" {
		x.run(t, "send-keys", "-t", name, "-l", key)
		x.run(t, "wait-for", mark+"-2")
	}
	return x.capture(t, name)
}

// next names a new pane and its mark.
func (x *tmuxServer) next() (name, mark string) {
	x.n++
	return fmt.Sprintf("p%d", x.n), fmt.Sprintf("agentpty-sync-%d", x.n)
}

// newPane starts shell in a detached session of its own, killed when the
// test ends.
func (x *tmuxServer) newPane(t *testing.T, name string, cols, rows int, cwd, shell string) {
	t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows)}
	if cwd != "" {
		args = append(args, "-c", cwd)
	}
	x.run(t, append(args, shell)...)
	t.Cleanup(func() { _ = x.command(context.Background(), "kill-session", "-t", name).Run() })
}

func (x *tmuxServer) capture(t *testing.T, name string) tmuxScreen {
	t.Helper()
	var sc tmuxScreen
	text := x.run(t, "capture-pane", "-p", "-e", "-t", name)
	sc.lines = plainRows(text)
	var alt int
	info := x.run(t, "display-message", "-p", "-t", name, "#{pane_width} #{cursor_y} #{cursor_x} #{alternate_on}")
	if _, err := fmt.Sscanf(info, "%d %d %d %d", &sc.cols, &sc.row, &sc.col, &alt); err != nil {
		t.Fatalf("tmux display-message: %q: %v", info, err)
	}
	sc.alt = alt == 1
	// After a character in the last column tmux holds the cursor one past
	// it until the next character wraps; a terminal reports the last column.
	sc.col = min(sc.col, sc.cols-1)
	return sc
}

// gitRepo makes a repository in dir with n commits of fixed authorship and
// dates, so that its log reads the same in every run.
func gitRepo(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(env []string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), env...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git(nil, "init", "-q")
	for i := 1; i <= n; i++ {
		writeFile(t, filepath.Join(dir, "f.txt"), strings.Repeat("x\n", i))
		git(nil, "add", "f.txt")
		date := fmt.Sprintf("2024-01-%02dT12:00:00Z", i)
		git([]string{"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=" + date,
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_COMMITTER_DATE=" + date},
			"commit", "-q", "-m", fmt.Sprintf("commit %d of %d: add a line", i, n), "-m", "A body line for café and 日本.")
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
