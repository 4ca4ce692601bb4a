package agentpty

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// noProfile runs commands without the login profile, which reads the
// terminal itself and would be classified in place of the program.
var noProfile = Options{Shell: []string{"bash", "-c"}}

// sudoPrompt is a sudo that asks for a password: as root sudo never asks,
// so it runs as nobody there.
func sudoPrompt() string {
	if os.Geteuid() == 0 {
		return "exec setpriv --reuid=65534 --regid=65534 --clear-groups sudo -k true"
	}
	return "exec sudo -k true"
}

func TestStateWaitingInput(t *testing.T) {
	need(t, "python3", "vim", "less", "sudo", "setpriv")
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, command, fg, output string
		hidden                    bool
	}{
		{"bash prompt", "PS1='ready$ ' exec bash --norc --noprofile -i", "bash", "ready$", false},
		{"python3 REPL", "exec python3 -q", "python3", ">>>", false},
		{"read", "read -p 'name? ' x; echo got $x", "bash", "name?", false},
		{"vim", "exec vim -u NONE -N " + file, "vim", "line 31", false},
		{"less", "exec less " + file, "less", "line 31", false},
		{"getpass", "exec python3 -c 'import getpass; getpass.getpass(\"secret: \")'", "python3", "secret:", true},
		{"sudo password", sudoPrompt(), "sudo", "assword", true},
	}
	m := newManager(t, noProfile)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := m.Start(waitCtx(t), StartRequest{Command: c.command, Cwd: dir, WaitUntil: WaitUntilInput})
			if err != nil {
				t.Fatal(err)
			}
			if res.State != StateWaitingInput || res.Foreground != c.fg || res.InputHidden != c.hidden {
				t.Errorf("state %q foreground %q input_hidden %v, want %q %q %v; output %q",
					res.State, res.Foreground, res.InputHidden, StateWaitingInput, c.fg, c.hidden, res.Output)
			}
			// waiting_input means all of it is rendered: the screen or prompt is there.
			if !strings.Contains(res.Output, c.output) {
				t.Errorf("output %q lacks %q", res.Output, c.output)
			}
			// A program may wake on a timer of its own (vim does, now and
			// then, under load): Session.State() must agree once it waits again.
			s, _ := m.Session(res.ID)
			st := s.State()
			if st.State != StateWaitingInput {
				if w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput, WaitMS: ms(3000)}); w.State == StateWaitingInput {
					st = s.State()
				}
			}
			if st.State != StateWaitingInput || st.Foreground != c.fg {
				t.Errorf("Session.State() = %+v", st)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStateRunning(t *testing.T) {
	need(t, "make")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\t@echo ready; sleep 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A listener that accepts and says nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cases := []struct {
		name, command, fg string
		ready             func()
	}{
		{"sleep", "echo ready; exec sleep 30", "sleep", nil},
		{"busy loop", "echo ready; while :; do :; done", "bash", nil},
		{"cat of a silent socket", "echo ready; exec cat </dev/tcp/127.0.0.1/" + port, "cat", func() {
			c := <-accepted
			t.Cleanup(func() { c.Close() })
		}},
		{"make running a child", "exec make -s -C " + dir, "sleep", nil}, // the newest of the group: the one at work
		{"a shell running a child", "echo ready; sleep 30; echo done", "sleep", nil},
	}
	m := newManager(t, noProfile)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustStart(t, m, StartRequest{Command: c.command, WaitFor: "ready"})
			if c.ready != nil {
				c.ready()
			}
			begin := time.Now()
			w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput, WaitMS: ms(400)})
			if took := time.Since(begin); w.State != StateRunning || w.Foreground != c.fg || took < 400*time.Millisecond {
				t.Errorf("after %v: state %q foreground %q, want %q %q for the whole wait", took, w.State, w.Foreground, StateRunning, c.fg)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWaitUntilInputWaitsForTheAnswer: right after typing, the program has
// not read the input yet and looks blocked on the terminal; the state must
// not say waiting_input until it has answered and is waiting again.
func TestWaitUntilInputWaitsForTheAnswer(t *testing.T) {
	need(t, "python3")
	m := newManager(t, noProfile)
	res, err := m.Start(waitCtx(t), StartRequest{Command: "exec python3 -q", WaitUntil: WaitUntilInput})
	if err != nil || res.State != StateWaitingInput {
		t.Fatalf("start: %+v %v", res, err)
	}
	for i := 0; i < 20; i++ {
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "2**" + strconv.Itoa(64+i), Submit: true, WaitUntil: WaitUntilInput})
		want := strconv.FormatUint(1<<63, 10)
		if i == 0 {
			want = "18446744073709551616"
		}
		if w.State != StateWaitingInput || !strings.HasSuffix(w.Output, ">>> ") || (i == 0 && !strings.Contains(w.Output, want)) {
			t.Fatalf("write %d: state %q output %q", i, w.State, w.Output)
		}
	}
	begin := time.Now()
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "import time; time.sleep(0.3); print('fin')", Submit: true, WaitUntil: WaitUntilInput})
	if took := time.Since(begin); took < 300*time.Millisecond || !strings.Contains(w.Output, "\nfin\n>>> ") {
		t.Fatalf("returned after %v with %q", took, w.Output)
	}
	if _, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, WaitUntil: "prompt"}); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), `"prompt"`) {
		t.Fatalf("wait_until prompt: %v", err)
	}
}

// TestStateExited: a result after the program ended says so.
func TestStateExited(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, noProfile)
	res, err := m.Start(waitCtx(t), StartRequest{Command: "echo bye", WaitUntil: WaitUntilInput})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	if _, err := s.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st := s.State(); st.State != StateExited {
		t.Fatalf("State() = %+v", st)
	}
	if w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)}); w.State != StateExited {
		t.Fatalf("write after exit: %+v", w)
	}
}

// TestExitedResultSaysExited: a result that reports the exit reports the
// state exited, however the exit falls against the wait.
func TestExitedResultSaysExited(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, noProfile)
	for i := 0; i < 60; i++ {
		res, err := m.Start(waitCtx(t), StartRequest{Command: "exit 3", WaitMS: ms(i % 4)})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, exited bool, state string) {
			if exited != (state == StateExited) {
				t.Fatalf("%s %d: exited %v with state %q", what, i, exited, state)
			}
		}
		check("start", res.Exited, res.State)
		w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
		check("write", w.Exited, w.State)
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// Relays wait on the terminal and on a socket or pipe at once, so output
// can come without input: wait_until input returns their answer, not just
// the echo of what was typed.
func TestWaitUntilInputRelays(t *testing.T) {
	t.Run("node", func(t *testing.T) {
		need(t, "node")
		m := newManager(t, noProfile)
		res, err := m.Start(waitCtx(t), StartRequest{Command: "exec node", WaitUntil: WaitUntilInput})
		if err != nil || res.State != StateWaitingInput || !strings.Contains(res.Output, "> ") {
			t.Fatalf("start: %+v %v", res, err)
		}
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "await new Promise(r=>setTimeout(r,800)); 42", Submit: true, WaitUntil: WaitUntilInput})
		if w.State != StateWaitingInput || !strings.HasSuffix(w.Output, "\n42\n> ") {
			t.Fatalf("state %q output %q: the value did not come in the same result", w.State, w.Output)
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ssh", func(t *testing.T) {
		m := newManager(t, noProfile) // its leak check runs after sshd has stopped
		x := startTestSSHD(t, sshdOptions{})
		res := mustStart(t, m, StartRequest{Command: x.Command("PS1='remote$ ' exec bash --norc --noprofile -i"), WaitFor: "remote$ "})
		host, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "hostname; echo remote-ok", Submit: true, WaitUntil: WaitUntilInput})
			if w.State != StateWaitingInput || w.Foreground != "ssh" || !strings.HasSuffix(w.Output, "\n"+host+"\nremote-ok\nremote$ ") {
				t.Fatalf("write %d: state %q foreground %q output %q: the answer did not come in the same result", i, w.State, w.Foreground, w.Output)
			}
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("tmux client", func(t *testing.T) {
		need(t, "tmux")
		m := newManager(t, noProfile)
		sock := filepath.Join(t.TempDir(), "tmux")
		t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
		res, err := m.Start(waitCtx(t), StartRequest{Command: "exec tmux -S " + sock + " -f /dev/null new-session \"PS1='in-tmux$ ' bash --norc --noprofile -i\"", Rows: 24, Cols: 80, WaitFor: "in-tmux$"}) // the screen's rows end at their last character
		if err != nil || !res.Matched {
			t.Fatalf("start: %+v %v", res, err)
		}
		begin := time.Now()
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "echo $((6*7))", Submit: true, WaitUntil: WaitUntilInput})
		if took := time.Since(begin); w.State != StateWaitingInput || took > 5*time.Second || !strings.Contains(w.Output, "\n42\nin-tmux$") {
			t.Fatalf("after %v: state %q foreground %q output %q", took, w.State, w.Foreground, w.Output)
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	})
}

// A lone Esc: vim waits for the rest of an escape sequence (ttimeoutlen:
// 100 ms in Debian's defaults) before it leaves insert mode, showing the
// Esc typed so far (^[) meanwhile. The write that types it returns the
// frame after that, not the one during it.
func TestWaitUntilInputAfterALoneEsc(t *testing.T) {
	need(t, "vim")
	cases := []struct{ name, options string }{
		{"debian's defaults", "--clean"},
		{"a timeout of a second", "-u NONE -N -c 'set showcmd ttimeout ttimeoutlen=1000'"},
	}
	m := newManager(t, noProfile)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "notes.txt")
			res, err := m.Start(waitCtx(t), StartRequest{Command: "exec vim " + c.options + " " + file, Cols: 80, Rows: 24, WaitUntil: WaitUntilInput})
			if err != nil || res.State != StateWaitingInput {
				t.Fatalf("start: %+v %v", res, err)
			}
			w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "i", WaitUntil: WaitUntilInput})
			if !strings.Contains(w.Output, "-- INSERT --") {
				t.Fatalf("i: %q", w.Output)
			}
			mustWrite(t, m, WriteRequest{ID: res.ID, Input: "abc", WaitUntil: WaitUntilInput})
			w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\e`, WaitUntil: WaitUntilInput})
			if w.State != StateWaitingInput || strings.Contains(w.Output, "-- INSERT --") || strings.Contains(w.Output, "^[") || !strings.HasPrefix(w.Output, "abc\n") {
				t.Fatalf("after Esc: state %q output %q", w.State, w.Output)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// foreground names the program that holds the terminal: the one reading
// it, else the newest of the group, by the program's own name.
func TestForegroundNamesTheProgram(t *testing.T) {
	need(t, "git", "less")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = c.Write([]byte("hello from the socket\n"))
		}
	}()
	repo := filepath.Join(t.TempDir(), "repo")
	gitRepo(t, repo, 30)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cases := []struct {
		name, command, ready, state, fg string
	}{
		// git runs its pager as Debian names it, pager: the program is less.
		{"git's pager", "exec env -u GIT_PAGER -u PAGER GIT_CONFIG_GLOBAL=/dev/null git -C " + repo + " log", "commit 30 of 30", StateWaitingInput, "less"},
		// yes runs, head reads the terminal.
		{"a pipeline's reader", "echo ready; yes >/dev/null | head -n1 /dev/tty", "ready", StateRunning, "head"},
		{"a command after a redirection", "exec 3<>/dev/tcp/127.0.0.1/" + port + "; cat <&3", "hello from", StateRunning, "cat"},
	}
	m := newManager(t, noProfile)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustStart(t, m, StartRequest{Command: c.command, Rows: 24, WaitFor: c.ready})
			var wait *int // a program that waits is waited for; one that runs, for 600 ms
			if c.state == StateRunning {
				wait = ms(600)
			}
			w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput, WaitMS: wait})
			if w.State != c.state || w.Foreground != c.fg {
				t.Errorf("state %q foreground %q, want %q %q", w.State, w.Foreground, c.state, c.fg)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A state is read from the kernel again only after something the library
// sees could have changed it: new output, input typed, a signal, a resize.
// Reads with nothing between share one read, and a result's input_hidden
// comes from its state's read.
func TestStateReadAgainOnlyAfterAChange(t *testing.T) {
	saved := stateFresh
	t.Cleanup(func() { stateFresh = saved })
	m := newManager(t, Options{})
	// "late" waits for the test, not for a time: printed before the start
	// collects, the start's result would read it.
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	res := mustStart(t, m, StartRequest{Command: "echo ready; read x < " + fifo + "; echo late; exec cat", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	reads := func() int { return stateReads(s) }
	stateFresh = time.Hour // here only a change ends the reuse, not time
	n := reads()
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil { // opens once the shell does
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: "late"})
	if got := reads() - n; got != 1 {
		t.Fatalf("the result after new output read the state %d times, want once", got)
	}
	stateFresh = saved // a wait's rechecks read the kernel again as time passes
	w, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput})
	if err != nil || w.State != StateWaitingInput {
		t.Fatalf("cat does not wait for input: %+v, %v", w, err)
	}
	stateFresh = time.Hour
	st, n := s.State(), reads()
	if again := s.State(); again != st || reads() != n {
		t.Fatalf("the state was read again with nothing changed: %+v, then %+v", st, again)
	}
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"a signal", func() error { return s.Signal(syscall.SIGCONT) }},
		{"a resize", func() error { return s.Resize(100, 30) }},
		{"typing", func() error { return s.Send("x") }}, // last: its echo is output too
	} {
		n := reads()
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		s.State()
		if reads() != n+1 {
			t.Fatalf("after %s the state was not read again", c.name)
		}
	}
}

// A state that counts only after a quiet pause (a program that waits on
// the terminal and on something else) depends on time as well as on what
// the library sees, so it is read from the kernel every time; a wait on
// the terminal alone is reused while nothing changes.
func TestStateAfterAQuietPauseIsNotReused(t *testing.T) {
	need(t, "python3")
	if runtime.GOOS != "linux" {
		t.Skip("only Linux's kernel shows what else a wait on the terminal waits on")
	}
	saved := stateFresh
	t.Cleanup(func() { stateFresh = saved })
	m := newManager(t, noProfile)
	for _, c := range []struct {
		name, fds string
		again     int // kernel reads by the second of two reads with nothing between
	}{
		{"the terminal alone", "0", 0},
		{"the terminal and a pipe", "0, r", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			stateFresh = saved
			py := `import os, select; r, w = os.pipe(); print("ready", flush=True); select.select([` + c.fds + `], [], [])`
			res := mustStart(t, m, StartRequest{Command: "exec python3 -c '" + py + "'", WaitFor: "ready"})
			s, _ := m.Session(res.ID)
			w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput})
			if w.State != StateWaitingInput || w.Foreground != "python3" {
				t.Fatalf("python3 does not wait in its select: %+v", w)
			}
			stateFresh = time.Hour // here only a change or a timed state ends the reuse
			first := s.State()
			n := stateReads(s)
			again := s.State()
			reads := stateReads(s) - n
			if first.State != StateWaitingInput || again != first || reads != c.again {
				t.Fatalf("states %+v then %+v; the second read the kernel %d times, want %d", first, again, reads, c.again)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}
