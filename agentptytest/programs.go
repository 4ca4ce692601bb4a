package agentptytest

import (
	"context"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

// The cases a local session passes, run on the backend: each starts its
// sessions with a manager whose Shell is `bash -c`.

// pythonREPL: python3's REPL with wait_until "input" at each prompt, the
// state running while it sleeps, Ctrl-C, and its exit code.
func pythonREPL(t *testing.T, s *suite) {
	s.needState(t)
	if s.far(t, "command -v python3 >/dev/null && echo yes") != "yes" {
		t.Skip("no python3 where the backend runs commands")
	}
	m := s.manager(t, agentpty.Options{})
	res, err := m.Start(Ctx(t), agentpty.StartRequest{Command: "exec python3 -q", WaitUntil: agentpty.WaitUntilInput})
	if err != nil || res.State != agentpty.StateWaitingInput || res.Foreground != "python3" || !strings.HasSuffix(res.Output, ">>> ") {
		t.Fatalf("start: %+v %v", res, err)
	}
	for i := range 3 {
		w := MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "2**" + strconv.Itoa(64+i), Submit: true, WaitUntil: agentpty.WaitUntilInput})
		want := new(big.Int).Lsh(big.NewInt(1), uint(64+i)).String()
		if w.State != agentpty.StateWaitingInput || w.Foreground != "python3" || !strings.HasSuffix(w.Output, ">>> ") || !strings.Contains(w.Output, want) {
			t.Fatalf("write %d: state %q foreground %q output %q", i, w.State, w.Foreground, w.Output)
		}
	}
	begin := time.Now()
	w := MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "import time; time.sleep(0.3); print('fin')", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if took := time.Since(begin); took < 300*time.Millisecond || !strings.Contains(w.Output, "\nfin\n>>> ") || w.State != agentpty.StateWaitingInput {
		t.Fatalf("returned after %v with %q (%s)", took, w.Output, w.State)
	}
	w = MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "time.sleep(30)", Submit: true, WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(400)})
	if w.State != agentpty.StateRunning || w.Foreground != "python3" {
		t.Fatalf("a sleeping REPL: state %q foreground %q", w.State, w.Foreground)
	}
	MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: `\x03`, WaitFor: "KeyboardInterrupt"})
	w = MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "exit(7)", Submit: true, WaitMS: ms(30000)})
	if !w.Exited || w.ExitCode == nil || *w.ExitCode != 7 {
		t.Errorf("exit(7): exited %v, code %v", w.Exited, w.ExitCode)
	}
}

// vimScreenAndDiff: vim's full screen, a diff of one changed row, and the
// file it writes.
func vimScreenAndDiff(t *testing.T, s *suite) {
	s.needState(t)
	if s.far(t, "command -v vim >/dev/null && echo yes") != "yes" {
		t.Skip("no vim where the backend runs commands")
	}
	m := s.manager(t, agentpty.Options{})
	file := s.farTemp(t) + "/notes.txt"
	s.far(t, "printf 'alpha\\nbeta\\n' > "+file)
	res := MustStart(t, m, agentpty.StartRequest{Command: "exec vim -u NONE -N --cmd 'set ttimeout ttimeoutlen=10' " + file, Cols: 60, Rows: 12, WaitFor: "beta", Screen: agentpty.ScreenFull})
	// The rest of the screen may come after "beta": it is all there once
	// vim waits for input.
	if w := MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitUntil: agentpty.WaitUntilInput, Screen: agentpty.ScreenFull}); w.State != agentpty.StateWaitingInput || w.Foreground != "vim" || !strings.HasPrefix(w.Output, "alpha\nbeta\n~") {
		t.Fatalf("vim at rest: state %q foreground %q, full screen %q", w.State, w.Foreground, w.Output)
	}
	MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: `j$a!\e`, WaitUntil: agentpty.WaitUntilInput})
	w := MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "x", Screen: agentpty.ScreenDiff, WaitUntil: agentpty.WaitUntilInput})
	want := "--- screen before, cursor at row 2 col 5\n+++ screen after, cursor at row 2 col 4\n@@ -2 +2 @@\n-beta!\n+beta"
	if w.Output != want {
		t.Fatalf("one changed row is one small hunk: %q", w.Output)
	}
	w = MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: `Oadded\e:wq\r`, WaitMS: ms(30000)})
	if got := s.far(t, "tr '\\n' , < "+file); !w.Exited || got != "alpha,added,beta," {
		t.Errorf("after :wq vim exited %v and the file holds %q", w.Exited, got)
	}
}

// writeSecret: input_hidden at `read -s`, the secret typed there and
// shown nowhere, and refused once the prompt echoes.
func writeSecret(t *testing.T, s *suite) {
	s.needState(t)
	m := s.manager(t, agentpty.Options{})
	const secret = "hunter2-Zq9"
	start := MustStart(t, m, agentpty.StartRequest{
		Command: `read -s -p 'Password: ' pw; echo; echo "got ${#pw}"; read -p 'next> ' x; echo "x=$x"`,
		WaitFor: "Password: ",
	})
	w := MustWrite(t, m, agentpty.WriteRequest{ID: start.ID, WaitUntil: agentpty.WaitUntilInput})
	if !w.InputHidden || w.State != agentpty.StateWaitingInput {
		t.Fatalf("at read -s: input_hidden %v state %q", w.InputHidden, w.State)
	}
	res, err := m.WriteSecret(Ctx(t), start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := res.Output
	if !strings.Contains(out, "next> ") {
		out += MustWrite(t, m, agentpty.WriteRequest{ID: start.ID, WaitFor: "next> "}).Output
	}
	if !strings.Contains(out, "got 11") || strings.Contains(out, secret) {
		t.Errorf("the program did not get the secret, or it shows: %q", out)
	}
	if _, err := m.WriteSecret(Ctx(t), start.ID, []byte("other-Secret")); !errors.Is(err, agentpty.ErrInvalid) {
		t.Errorf("writeSecret with echo on: %v; want ErrInvalid", err)
	}
}

// exitCodeResizeSignal: an exit code, the size asked for at start, a
// resize that reaches the program as SIGWINCH with the new size, and
// send_signal to a trap.
func exitCodeResizeSignal(t *testing.T, s *suite) {
	m := s.manager(t, agentpty.Options{})
	res := MustStart(t, m, agentpty.StartRequest{Command: "sleep 0.2; echo bye; exit 42", WaitMS: ms(30000)})
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 42 || !strings.Contains(res.Output, "bye") {
		t.Errorf("exit 42: %+v", res)
	}
	res = MustStart(t, m, agentpty.StartRequest{Command: `trap 'echo "size $(stty size)"' WINCH; trap 'echo term-seen' TERM; echo "start $(stty size) ready"; while :; do read -t 1 x; done`,
		Cols: 83, Rows: 21, WaitFor: "ready"})
	if !strings.Contains(res.Output, "start 21 83 ready") {
		t.Errorf("the terminal's size at start: %q; want 21 rows, 83 columns", res.Output)
	}
	MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Cols: 91, Rows: 13, WaitFor: "size 13 91"})
	MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, SendSignal: "SIGTERM", WaitFor: "term-seen"})
	if _, err := m.Kill(Ctx(t), res.ID); err != nil {
		t.Errorf("Kill: %v", err)
	}
}

// signalForeground: send_signal goes to the terminal's foreground process
// group. The command turns job control on and runs a job, which gets a
// group of its own and the terminal: the job's trap sees SIGINT, and the
// command's own trap does not.
func signalForeground(t *testing.T, s *suite) {
	m := s.manager(t, agentpty.Options{})
	res := MustStart(t, m, agentpty.StartRequest{Command: `set -m; trap 'echo command-int' INT; sh -c 'trap "echo job-int; exit 3" INT; echo job-ready; while :; do sleep 0.05; done'; echo "job-exit $?"; read x`, WaitFor: "job-ready"})
	w := MustWrite(t, m, agentpty.WriteRequest{ID: res.ID, SendSignal: "SIGINT", WaitFor: "job-exit"})
	if !strings.Contains(w.Output, "job-int") || !strings.Contains(w.Output, "job-exit 3") || strings.Contains(w.Output, "command-int") {
		t.Errorf("SIGINT with a job in the foreground: %q; want the job's trap only", w.Output)
	}
}

// killContext: a Kill whose context ends before KillGrace has passed
// sends SIGKILL then, rather than waiting out the grace: a command that
// ignores TERM and HUP is gone soon after the context's end.
func killContext(t *testing.T, s *suite) {
	const grace = 20 * time.Second
	m := s.manager(t, agentpty.Options{KillGrace: grace})
	res := MustStart(t, m, agentpty.StartRequest{Command: `trap '' TERM HUP; echo ready; while :; do sleep 0.05; done`, WaitFor: "ready"})
	sess, _ := m.Session(res.ID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	_, err := m.Kill(ctx, res.ID)
	st, werr := sess.Wait(Ctx(t))
	took := time.Since(began)
	if took > grace/2 || werr != nil || st.Signal != "SIGKILL" {
		t.Errorf("Kill with a 1 s context and a %v grace: %v after %v; the command ended %+v %v after it; want SIGKILL soon after the context's end", grace, err, took, st, werr)
	}
}

// pidAndCwd: the session's pid is the command's own (the line that
// starts it execs it) and the command runs in the request's cwd.
func pidAndCwd(t *testing.T, s *suite) {
	m := s.manager(t, agentpty.Options{})
	dir := s.farTemp(t)
	res := MustStart(t, m, agentpty.StartRequest{Command: `echo "me=$$ dir=$PWD end"; read x`, Cwd: dir, WaitFor: " end"})
	sess, _ := m.Session(res.ID)
	if want := "me=" + strconv.Itoa(sess.PID()) + " dir=" + dir + " end"; sess.PID() <= 0 || !strings.Contains(res.Output, want) {
		t.Errorf("the command says %q; want %q", res.Output, want)
	}
}
