package agentpty

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/proc"

	"github.com/agentpty/agentpty/internal/testkit"
)

func TestStartSizeTermAndCwd(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	dir := t.TempDir()
	res := mustStart(t, m, StartRequest{Command: "stty size; echo term=$TERM; pwd; echo end", Cwd: dir, WaitFor: "end"})
	for _, want := range []string{"32 120", "term=xterm-256color", dir} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output %q lacks %q", res.Output, want)
		}
	}
	res = mustStart(t, m, StartRequest{Command: "stty size; echo end", Cols: 80, Rows: 24, WaitFor: "end"})
	if !strings.Contains(res.Output, "24 80") {
		t.Errorf("a 80x24 terminal reports %q", res.Output)
	}
}

func TestIDsAreNumberedAndNeverReused(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	a := mustStart(t, m, StartRequest{Command: "echo a", WaitFor: "a"})
	b := mustStart(t, m, StartRequest{Command: "echo b", WaitFor: "b"})
	if a.ID != "pty-1" || b.ID != "pty-2" {
		t.Fatalf("ids %q, %q; want pty-1, pty-2", a.ID, b.ID)
	}
	if _, err := m.Kill(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	c := mustStart(t, m, StartRequest{Command: "echo c", WaitFor: "c"})
	if c.ID != "pty-3" {
		t.Fatalf("after killing pty-1 the next id is %q, want pty-3", c.ID)
	}
	if _, ok := m.Session("pty-1"); ok {
		t.Error("a killed session is still listed")
	}
	var ids []string
	for _, info := range m.List() {
		ids = append(ids, info.ID)
	}
	if got := strings.Join(ids, ","); got != "pty-2,pty-3" {
		t.Errorf("List = %s, want pty-2,pty-3", got)
	}
}

// The example of DESIGN.md: a line returned unfinished comes back whole, and
// wait_for matches only what is new.
func TestPythonReadsReturnWholeLines(t *testing.T) {
	testkit.Parallel(t)
	need(t, "python3")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "python3 -q", WaitFor: ">>> "})
	if !strings.HasSuffix(res.Output, ">>> ") {
		t.Fatalf("first read %q does not end with the prompt", res.Output)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "2**64", Submit: true, WaitFor: ">>> "})
	if want := ">>> 2**64\n18446744073709551616\n>>> "; w.Output != want {
		t.Fatalf("second read = %q, want %q", w.Output, want)
	}
	// Typing without Enter: the old prompt must not satisfy wait_for.
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "import time; time.sleep(0.2); print('slept')"})
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "\r", WaitFor: ">>> "})
	if !strings.Contains(w.Output, "slept") {
		t.Fatalf("wait_for returned before the new prompt: %q", w.Output)
	}
	if _, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: `\x04`}); err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	st, err := s.Wait(waitCtx(t))
	if err != nil || st.Code != 0 || st.Signal != "" {
		t.Fatalf("python after Ctrl-D: %v, %v", st, err)
	}
}

func TestInterruptBothSpellings(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "PS1='$ ' bash --norc -i", WaitFor: "$ "})
	for _, ctrlC := range []string{`\x03`, "\x03"} {
		// The child prints once it holds the terminal, so the Ctrl-C reaches it, not bash.
		mustWrite(t, m, WriteRequest{ID: res.ID, Input: `sh -c 'echo in""-front; exec sleep 30'`, Submit: true, WaitFor: "in-front"})
		mustWrite(t, m, WriteRequest{ID: res.ID, Input: ctrlC, WaitFor: "$ "})
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "echo status=$?", Submit: true, WaitFor: "status=1"})
		if !strings.Contains(w.Output, "status=130") {
			t.Fatalf("after %q: %q, want status=130", ctrlC, w.Output)
		}
	}
}

func TestShellStateAndEscapes(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "PS1='$ ' bash --norc -i", WaitFor: "$ "})
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `X=41; cd /tmp\r`, WaitFor: "$ "})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `echo $((X+1)) $(pwd)`, Submit: true, WaitFor: "/tmp\n$ "}) // the prompt: typing before it races readline
	if !strings.Contains(w.Output, "42 /tmp") {
		t.Fatalf("state lost across writes: %q", w.Output)
	}
	// \e[D moves left and \x7f rubs out the X before the cursor.
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `echo abXc\e[D\x7f\r`, WaitFor: "$ "})
	if !strings.Contains(w.Output, "\nabc\n") {
		t.Fatalf("escapes not decoded: %q", w.Output)
	}
}

func TestExitStatus(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	// One wait that only the exit ends: the start's quiet rule could return
	// between the login profile and the command.
	res := mustStart(t, m, StartRequest{Command: "echo bye; exit 3", WaitMS: ms(10000)})
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 3 || res.Signal != "" {
		t.Fatalf("exit 3: exited=%v code=%v signal=%q", res.Exited, res.ExitCode, res.Signal)
	}
	res = mustStart(t, m, StartRequest{Command: "kill -KILL $$", WaitMS: ms(10000)})
	if !res.Exited || res.ExitCode != nil || res.Signal != "SIGKILL" {
		t.Fatalf("kill -KILL: exited=%v code=%v signal=%q", res.Exited, res.ExitCode, res.Signal)
	}
}

func TestExitedSession(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read x; echo got $x; echo last words; exit 4", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	if err := s.Send("it\r"); err != nil { // a write's result could read the answer the poll below expects
		t.Fatal(err)
	}
	if _, err := s.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: "more"})
	if !isErr(err, ErrExited) || !strings.Contains(err.Error(), res.ID) {
		t.Fatalf("write to an exited session: %v, want ErrExited naming %s", err, res.ID)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if !strings.Contains(w.Output, "got it") || !strings.Contains(w.Output, "last words") || !w.Exited || w.ExitCode == nil || *w.ExitCode != 4 {
		t.Fatalf("poll of an exited session: %+v", w)
	}
	if _, ok := m.Session(res.ID); !ok {
		t.Fatal("an exited session must stay until killed")
	}
	k, err := m.Kill(context.Background(), res.ID)
	if err != nil || k.ExitCode == nil || *k.ExitCode != 4 {
		t.Fatalf("kill of an exited session: %+v, %v", k, err)
	}
	if _, err := m.Write(context.Background(), WriteRequest{ID: res.ID}); !isErr(err, ErrNoSession) {
		t.Fatalf("write after kill: %v, want ErrNoSession", err)
	}
}

func TestKillOutputIsTheUnreadRest(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "cat", WaitMS: ms(0)})
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "first", Submit: true, WaitFor: "first\nfirst"})
	s, _ := m.Session(res.ID)
	if err := s.Send("second\r"); err != nil {
		t.Fatal(err)
	}
	// Make sure the echo has arrived before killing, without reading it.
	awaitUnread(t, s, "second\nsecond")
	k, err := m.Kill(context.Background(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k.Output, "first") || !strings.Contains(k.Output, "second") {
		t.Fatalf("kill output %q should hold only what was not read", k.Output)
	}
}

// Kill must end everything the session started: process groups of their
// own (an interactive shell's jobs), nohup, and programs that ignore SIGTERM.
func TestKillEndsTheWholeSession(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{KillGrace: 300 * 1e6})
	cmd, env := childCommand("spawn")
	res := mustStart(t, m, StartRequest{Command: "nohup sleep 1000 >/dev/null 2>&1 & " + cmd, Env: env, WaitFor: "ready"})
	pids := regexp.MustCompile(`child (\d+)`).FindAllStringSubmatch(res.Output, -1)
	if len(pids) != 2 {
		t.Fatalf("helper did not report its children: %q", res.Output)
	}
	s, _ := m.Session(res.ID)
	members := len(proc.Members(s.PID()))
	if members < 4 {
		t.Fatalf("expected the leader, nohup sleep and 2 grandchildren, found %d processes", members)
	}
	k, err := m.Kill(context.Background(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.Signal != "SIGKILL" {
		t.Errorf("a leader that ignores SIGTERM ended by %q, want SIGKILL", k.Signal)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p[1])
		if alive(pid) {
			t.Errorf("grandchild %d survived Kill", pid)
		}
	}
	if left := proc.Members(s.PID()); len(left) > 0 {
		t.Errorf("processes %v of the session survived Kill", left)
	}
}

func TestBackgroundJobDoesNotHoldExit(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	// The job ignores the hang-up the kernel sends when the leader exits
	// (ignored from birth: bash passes ignored signals on), and keeps the
	// terminal open.
	res := mustStart(t, m, StartRequest{Command: "trap '' HUP; sleep 1000 & echo bg=$!; exit 0", WaitFor: "bg="})
	s, _ := m.Session(res.ID)
	st, err := s.Wait(waitCtx(t))
	if err != nil || st.Code != 0 {
		t.Fatalf("Wait with a background job holding the terminal: %v %v", st, err)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	out := res.Output + w.Output
	pid, _ := strconv.Atoi(regexp.MustCompile(`bg=(\d+)`).FindStringSubmatch(out)[1])
	if !alive(pid) {
		t.Fatalf("the background job should outlive the command until Kill")
	}
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("background job %d survived Kill", pid)
	}
}

func TestWaitSeesEveryByte(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "seq 1 20000; echo END; exit 7", WaitMS: ms(0)})
	s, _ := m.Session(res.ID)
	st, err := s.Wait(waitCtx(t))
	if err != nil || st.Code != 7 {
		t.Fatalf("Wait: %v %v", st, err)
	}
	scr := s.Screen()
	if lines := strings.Split(scr.Text(), "\n"); len(lines) < 2 || lines[len(lines)-1] != "END" || lines[len(lines)-2] != "20000" {
		t.Fatalf("after Wait the screen does not end with the last output: %q", scr.Text())
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if !strings.HasSuffix(res.Output+w.Output, "END") {
		t.Fatalf("after Wait the output does not end with END: ...%q", tail(res.Output+w.Output, 40))
	}
}

// The screen reads the ring in place while the reader goes on filling it:
// through a flood into small rings, with the screen read all along, the
// last screen and the settled tail are exactly the last lines, whether the
// screen skipped the plain text or parsed every byte.
func TestFloodThroughSmallRings(t *testing.T) {
	testkit.Parallel(t)
	for _, ring := range []int{1 << 10, 4 << 10, 64 << 10} {
		for _, cmd := range []string{
			"seq 1 50000",
			`seq 1 50000 | sed 's/^/\x1b[2K\x1b[3C\x1b[3D/'`, // line-local sequences: still skippable
			`seq 1 50000 | sed 's/^/\x1b[?25h/'`,             // a mode set on every line: nothing is plain
		} {
			m := newManager(t, Options{ScrollbackBytes: ring})
			res := mustStart(t, m, StartRequest{Command: cmd, WaitMS: ms(0), Rows: 10, Cols: 40})
			s, _ := m.Session(res.ID)
			looked := make(chan int, 1) // a failed Wait must not strand the goroutine
			go func() {
				n := 0
				for ; ; n++ {
					select {
					case <-s.done:
						looked <- n
						return
					default:
						s.Screen()
					}
				}
			}()
			if _, err := s.Wait(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
			if n := <-looked; n == 0 {
				t.Errorf("ring %d, %q: the screen was never read during the flood", ring, cmd)
			}
			var want []string
			for i := 49992; i <= 50000; i++ {
				want = append(want, strconv.Itoa(i))
			}
			if got := s.Screen().Lines; strings.Join(got, ",") != strings.Join(append(want, ""), ",") {
				t.Errorf("ring %d, %q: the last screen is %q, want %q", ring, cmd, got, want)
			}
			if got := s.Tail(3); strings.Join(got, ",") != "49998,49999,50000" {
				t.Errorf("ring %d, %q: the settled tail is %q", ring, cmd, got)
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestMaxSessions(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{MaxSessions: 2})
	for i := 0; i < 2; i++ {
		mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	}
	_, err := m.Start(context.Background(), StartRequest{Command: readyCat, WaitFor: "ready"})
	if !isErr(err, ErrTooManySessions) || !strings.Contains(err.Error(), "2") {
		t.Fatalf("third start: %v, want ErrTooManySessions naming the limit", err)
	}
	if len(m.List()) != 2 {
		t.Fatalf("a refused start changed the sessions: %v", m.List())
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "cat", WaitMS: ms(0)})
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "kept", Submit: true, WaitFor: "kept\nkept"})
	s, _ := m.Session(res.ID)
	if err := s.Send("unread\r"); err != nil {
		t.Fatal(err)
	}
	awaitUnread(t, s, "unread\nunread")
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want error
		says string
	}{
		{"empty command", func() error { _, err := m.Start(ctx, StartRequest{Command: "  "}); return err }, ErrInvalid, "command"},
		{"cols", func() error { _, err := m.Start(ctx, StartRequest{Command: "true", Cols: 1001}); return err }, ErrInvalid, "1001"},
		{"rows", func() error { _, err := m.Start(ctx, StartRequest{Command: "true", Rows: -1}); return err }, ErrInvalid, "-1"},
		{"start wait", func() error { _, err := m.Start(ctx, StartRequest{Command: "true", WaitMS: ms(-5)}); return err }, ErrInvalid, "-5"},
		{"cwd", func() error { _, err := m.Start(ctx, StartRequest{Command: "true", Cwd: "/no/such/dir"}); return err }, ErrInvalid, "/no/such/dir"},
		{"negative wait", func() error {
			_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", WaitMS: ms(-1)})
			return err
		}, ErrInvalid, res.ID},
		{"missing id", func() error { _, err := m.Write(ctx, WriteRequest{Input: "x"}); return err }, ErrInvalid, "id"},
		{"unknown id", func() error { _, err := m.Write(ctx, WriteRequest{ID: "pty-99"}); return err }, ErrNoSession, "pty-99"},
		{"kill unknown", func() error { _, err := m.Kill(ctx, "pty-98"); return err }, ErrNoSession, "pty-98"},
		{"resize", func() error { return s.Resize(0, 10) }, ErrInvalid, "0x10"},
		{"malformed json", func() error { _, err := m.Call(ctx, ToolWrite, []byte(`{"id":`)); return err }, ErrInvalid, "malformed"},
		{"wrong type", func() error {
			_, err := m.Call(ctx, ToolWrite, []byte(`{"id":"`+res.ID+`","wait_ms":"soon"}`))
			return err
		}, ErrInvalid, "wait_ms"},
		{"unknown field", func() error { _, err := m.Call(ctx, ToolWrite, []byte(`{"id":"`+res.ID+`","inptu":"x"}`)); return err }, ErrInvalid, "inptu"},
		{"unknown tool", func() error { _, err := m.Call(ctx, "pty-exec", []byte(`{}`)); return err }, ErrInvalid, "pty-exec"},
		{"screen", func() error {
			_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", Screen: "half"})
			return err
		}, ErrInvalid, `"half"`},
		{"start screen", func() error { _, err := m.Start(ctx, StartRequest{Command: "true", Screen: "all"}); return err }, ErrInvalid, `"all"`},
		{"signal name", func() error {
			_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", SendSignal: "SIGFOO"})
			return err
		}, ErrInvalid, `"SIGFOO"`},
		{"signal number", func() error {
			_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", SendSignal: "0"})
			return err
		}, ErrInvalid, `"0"`},
		{"write cols", func() error { _, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", Cols: 1001}); return err }, ErrInvalid, res.ID + ": cols 1001"},
		{"write rows", func() error { _, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "typed", Rows: -3}); return err }, ErrInvalid, res.ID + ": rows -3"},
		{"peek type", func() error { _, err := m.Call(ctx, ToolWrite, []byte(`{"id":"`+res.ID+`","peek":"yes"}`)); return err }, ErrInvalid, "peek"},
	}
	for _, c := range cases {
		err := c.call()
		if !isErr(err, c.want) || !strings.HasPrefix(err.Error(), "agentpty: ") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want %v naming %q", c.name, err, c.want, c.says)
		}
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if !strings.Contains(w.Output, "unread\nunread") || strings.Contains(w.Output, "typed") || strings.Contains(w.Output, "kept") {
		t.Fatalf("bad calls changed the session: the next read is %q", w.Output)
	}
	if len(m.List()) != 1 {
		t.Fatalf("bad calls changed the sessions: %v", m.List())
	}
	if scr := s.Screen(); scr.Cols != DefaultCols || scr.Rows != DefaultRows {
		t.Fatalf("bad sizes resized the terminal to %dx%d", scr.Cols, scr.Rows)
	}
}

func TestResizeReachesTheProgram(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	cmd, env := childCommand("winch")
	res := mustStart(t, m, StartRequest{Command: cmd, Env: env, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	if err := s.Resize(100, 40); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: "size 100x40"})
	if scr := s.Screen(); scr.Cols != 100 || scr.Rows != 40 {
		t.Fatalf("screen is %dx%d after resize, want 100x40", scr.Cols, scr.Rows)
	}
	if info := m.List()[0]; info.Cols != 100 || info.Rows != 40 {
		t.Fatalf("List reports %dx%d after resize", info.Cols, info.Rows)
	}
}

// Programs that ask the terminal a question get an answer from the screen
// instead of hanging.
func TestTerminalQueriesAreAnswered(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct{ query, want string }{
		{"\x1b[6n", `"\x1b[3;5R"`}, // after "abcd" on the third row
		{"\x1b[5n", `"\x1b[0n"`},
		{"\x1b[c", `"\x1b[?`},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.query), func(t *testing.T) {
			m := newManager(t, Options{})
			cmd, env := childCommand("query")
			res := mustStart(t, m, StartRequest{Command: "printf '\\n\\nabcd'; AGENTPTY_TEST_QUERY=$'" + strings.ReplaceAll(c.query, "\x1b", `\e`) + "' " + cmd, Env: env, WaitFor: "answer"})
			out := res.Output
			if !strings.Contains(out, " end") {
				out += mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: " end"}).Output
			}
			if !strings.Contains(out, "answer "+c.want) {
				t.Fatalf("query %q: %q, want answer %s", c.query, out, c.want)
			}
		})
	}
}

func TestPasswordPromptHidesInput(t *testing.T) {
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "read -s -p 'Password: ' pw; echo; echo got ${#pw} chars", WaitFor: "Password: "})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if !w.InputHidden {
		t.Fatal("input_hidden is false at a password prompt")
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "hunter2", Submit: true, WaitFor: "chars"})
	if strings.Contains(w.Output, "hunter2") || !strings.Contains(w.Output, "got 7 chars") {
		t.Fatalf("password echoed or lost: %q", w.Output)
	}
	if w.InputHidden {
		t.Error("input_hidden still true after the prompt")
	}
}

func TestFullScreenOutputIsTheScreen(t *testing.T) {
	testkit.Parallel(t)
	need(t, "vim")
	m := newManager(t, Options{})
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustStart(t, m, StartRequest{Command: "echo before; vim -u NONE -N " + file + "; echo after", Cols: 80, Rows: 24, WaitFor: "beta"})
	if !strings.Contains(res.Output, "alpha\nbeta\n~") {
		t.Fatalf("vim's screen is not the output: %q", res.Output)
	}
	s, _ := m.Session(res.ID)
	if scr := s.Screen(); !scr.AltScreen || scr.Lines[0] != "alpha" || scr.Rows != 24 {
		t.Fatalf("Screen = %+v", scr)
	}
	// wait_for on a full screen matches only rows that changed since the
	// last read: "alpha" is on screen but old, "first" is new.
	if w, err := m.Write(context.Background(), WriteRequest{ID: res.ID, WaitFor: "alpha", WaitMS: ms(300)}); err != nil || w.Matched {
		t.Fatalf("wait_for matched a row no one changed: %+v %v", w, err)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `ggOfirst`, WaitFor: "first"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\e:wq\r`, WaitFor: "after"})
	if w.Output != "after" && !strings.HasSuffix(w.Output, "\nafter") {
		t.Errorf("after vim exits the output is the primary screen's new text, got %q", w.Output)
	}
	if scr := s.Screen(); scr.AltScreen {
		t.Error("still on the alternate screen after vim exited")
	}
	got, _ := os.ReadFile(file)
	if string(got) != "first\nalpha\nbeta\n" {
		t.Fatalf("file after vim: %q", got)
	}
}

func TestOutputIsCapped(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{MaxOutputBytes: 2000})
	res := mustStart(t, m, StartRequest{Command: "seq 1 20000; echo END", WaitFor: "END"})
	out := res.Output
	if len(out) > 2200 {
		t.Fatalf("output of %d bytes over a cap of 2000", len(out))
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "20000\nEND") || !strings.Contains(out, "elided") {
		t.Fatalf("capped output should keep head and tail around a marker: %q", out)
	}
}

func TestTruncatedCountsBytesNeverRead(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{ScrollbackBytes: 4096})
	res := mustStart(t, m, StartRequest{Command: "seq 1 20000", WaitMS: ms(0)})
	s, _ := m.Session(res.ID)
	if _, err := s.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if w.Truncated < 100000 {
		t.Fatalf("truncated = %d after 108894 bytes through a 4096-byte ring", w.Truncated)
	}
	again := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if again.Truncated != w.Truncated {
		t.Fatalf("truncated changed without new output: %d then %d", w.Truncated, again.Truncated)
	}
}

// A program that does not read its input must not wedge the session: the
// write gives up when the wait runs out.
func TestLargeInputToAProgramThatDoesNotRead(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	// In raw mode the terminal stops taking input once its buffer is full;
	// in line mode it would discard the excess instead.
	res := mustStart(t, m, StartRequest{Command: "stty raw -echo; echo ready; sleep 1000", WaitFor: "ready"})
	big := strings.Repeat("x", 1<<20)
	_, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: big, WaitMS: ms(200)})
	if err == nil || !strings.Contains(err.Error(), "not reading") {
		t.Fatalf("1 MiB into a program that never reads: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: big}); !isErr(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: %v", err)
	}
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
}

func TestCloseKillsEverythingAndRefusesMore(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	a := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	mustStart(t, m, StartRequest{Command: "echo ready; sleep 1000", WaitFor: "ready"})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.Start(context.Background(), StartRequest{Command: "true"}); !isErr(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if _, err := m.Write(context.Background(), WriteRequest{ID: a.ID}); !isErr(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if len(m.List()) != 0 {
		t.Fatal("sessions left after Close")
	}
}

func TestEventsAndIdleTimeout(t *testing.T) {
	events := make(chan Event, 16)
	m := newManager(t, Options{IdleTimeout: 300 * 1e6, OnEvent: func(e Event) { events <- e }})
	res := mustStart(t, m, StartRequest{Command: "echo hi; exit 2", WaitFor: "hi"})
	idle := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	got := map[string][]EventKind{}
	ctx := waitCtx(t)
	for n := 0; n < 6; n++ { // created, exited and reaped for each
		var e Event
		select {
		case e = <-events:
		case <-ctx.Done():
			t.Fatalf("events so far %v; the rest never came", got)
		}
		if e.Kind == EventOutput {
			n--
			continue
		}
		got[e.ID] = append(got[e.ID], e.Kind)
		if e.Kind == EventExited && e.ID == res.ID && (e.ExitCode == nil || *e.ExitCode != 2) {
			t.Errorf("exited event %+v lacks exit code 2", e)
		}
	}
	if fmt.Sprint(got[res.ID]) != "[created exited reaped]" || fmt.Sprint(got[idle.ID]) != "[created exited reaped]" {
		t.Fatalf("events %v", got)
	}
	if len(m.List()) != 0 {
		t.Fatalf("idle sessions not reaped: %v", m.List())
	}
}

func TestConcurrentSessions(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			ctx := context.Background()
			// Typed only once the login profile is done, so nothing it prints
			// lands between the echo and cat's copy.
			res, err := m.Start(ctx, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
			if err != nil {
				errs <- err
				return
			}
			word := fmt.Sprintf("word%d", i)
			w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: word, Submit: true, WaitFor: word + "\n" + word})
			if err == nil && !w.Matched {
				err = fmt.Errorf("%s: no echo of %s in %q", res.ID, word, w.Output)
			}
			if err == nil {
				_, err = m.Kill(ctx, res.ID)
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestTailAndScrollbackReadNothing(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "printf 'one\\ntwo\\nthree\\n'; printf 'pro\\rPROMPT> '; exec cat", WaitFor: "PROMPT> "})
	s, _ := m.Session(res.ID)
	if got := strings.Join(s.Tail(2), "|"); got != "three|PROMPT> " {
		t.Fatalf("Tail(2) = %q", got)
	}
	if got := s.Scrollback(); got != "one\ntwo\nthree\nPROMPT> " {
		t.Fatalf("Scrollback = %q", got)
	}
	if err := s.Send("more\r"); err != nil {
		t.Fatal(err)
	}
	awaitUnread(t, s, "more\nmore")
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	if w.Output != "PROMPT> more\nmore" {
		t.Fatalf("Tail or Scrollback read output: the next read is %q", w.Output)
	}
}
