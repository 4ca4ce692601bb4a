package kubepty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// newManager runs sessions on b; its end closes the manager and checks
// that no process a session started is left on this machine (where the
// stand-in runs them), found by the marks tests put in their commands.
func newManager(t *testing.T, b *Backend, marks ...string) *agentpty.Manager {
	t.Helper()
	return newManagerLost(t, b, false, marks...)
}

// newManagerLost is newManager for a backend whose server is gone when
// lost: Close then reports that the sessions could not be reached.
func newManagerLost(t *testing.T, b *Backend, lost bool, marks ...string) *agentpty.Manager {
	t.Helper()
	return newManagerOpts(t, agentpty.Options{Backend: b}, lost, marks...)
}

// newManagerOpts is newManager with opts, whose Shell defaults to bash -c.
func newManagerOpts(t *testing.T, opts agentpty.Options, lost bool, marks ...string) *agentpty.Manager {
	t.Helper()
	if opts.Shell == nil {
		opts.Shell = []string{"bash", "-c"}
	}
	m := agentpty.NewManager(opts)
	name := fmt.Sprint(opts.Backend)
	t.Cleanup(func() {
		if err := m.Close(); (err != nil) != lost || lost && !strings.Contains(err.Error(), name) {
			t.Errorf("Close: %v", err)
		}
		for _, mark := range marks {
			if left := withArg(mark); len(left) > 0 {
				t.Errorf("processes with %q left after Close: %v", mark, left)
			}
		}
	})
	return m
}

// withArg lists this machine's live processes with arg among their
// arguments.
func withArg(arg string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !proc.Alive(pid) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains("\x00"+string(b), "\x00"+arg+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// mark is the argument n of a test's sleep made this run's own (n.PID:
// the same seconds): withArg looks at the whole machine, where another
// run of these tests may have its sleeps too.
func mark(n int) string { return strconv.Itoa(n) + "." + strconv.Itoa(os.Getpid()) }

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The library's own test kit for managers on a backend.
var (
	mustStart = agentptytest.MustStart
	mustWrite = agentptytest.MustWrite
)

func ptr(n int) *int { return &n }

// Kill ends every process of the session in the pod: background jobs, a
// shell and a job that ignore TERM and HUP, and a job that left with
// setsid (it still carries the session's nonce).
func TestKill(t *testing.T) {
	_, b := standin(t)
	marks := []string{mark(4711), mark(4712), mark(4713)}
	m := newManager(t, b, marks...)
	res := mustStart(t, m, agentpty.StartRequest{
		Command: `trap "" TERM HUP; sleep ` + marks[0] + ` & (trap "" TERM HUP; sleep ` + marks[1] + `) & setsid sleep ` + marks[2] + ` & echo ready; wait`,
		WaitFor: "ready"})
	if !res.Matched {
		t.Fatalf("not ready: %q", res.Output)
	}
	for _, mark := range marks {
		waitRunning(t, mark) // the control: each job execs sleep a moment after "ready" may be printed
	}
	kr, err := m.Kill(ctx10(t), res.ID)
	if err != nil {
		t.Fatalf("Kill: %v", err)
	}
	for _, mark := range marks {
		if left := withArg(mark); len(left) > 0 {
			t.Errorf("sleep %s survived Kill: %v (result %+v)", mark, left, kr)
		}
	}
}

// A signal's end arrives as the runtime reports it.
func TestExitSignal(t *testing.T) {
	_, b := standin(t)
	m := newManager(t, b, mark(4714))
	res := mustStart(t, m, agentpty.StartRequest{Command: "echo ready; exec sleep " + mark(4714), WaitFor: "ready"})
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, SendSignal: "TERM", WaitMS: ptr(5000)})
	// The exec API reports a signal's death as 128+N; the session sent
	// that signal to the command, so it says the signal (see
	// TestSignalDeaths).
	if !w.Exited || w.ExitCode != nil || w.Signal != "SIGTERM" {
		t.Errorf("SIGTERM: exited %v code %v signal %q", w.Exited, w.ExitCode, w.Signal)
	}
}

// Several sessions at once, each its own exec stream.
func TestManySessions(t *testing.T) {
	_, b := standin(t)
	m := newManager(t, b)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := m.Start(ctx10(t), agentpty.StartRequest{Command: fmt.Sprintf("echo session-%d; exit %d", i, i), WaitMS: ptr(10000)})
			if err != nil {
				t.Errorf("start %d: %v", i, err)
				return
			}
			if !strings.Contains(res.Output, fmt.Sprintf("session-%d", i)) || res.ExitCode == nil || *res.ExitCode != i {
				t.Errorf("session %d: output %q, code %v", i, res.Output, res.ExitCode)
			}
		})
	}
	wg.Wait()
}

// A stand-in killed under live sessions: each ends as exited with an
// error naming the backend, waits return, writes get ErrExited, new
// starts fail, and the node's hangup leaves no process.
func TestLostConnection(t *testing.T) {
	bothProtocols(t, func(t *testing.T, spdyOnly bool, srv *kubetest.Server, b *Backend) {
		t.Cleanup(heartbeatsEnd)
		m := newManagerLost(t, b, true, mark(4715))
		var ids []string
		for range 3 {
			ids = append(ids, mustStart(t, m, agentpty.StartRequest{Command: "echo ready; sleep " + mark(4715), WaitFor: "ready"}).ID)
		}
		srv.Kill()
		for _, id := range ids {
			s, _ := m.Session(id)
			st, err := s.Wait(ctx10(t))
			// The session reports a terminal's error as the signal's text.
			if err != nil || !strings.Contains(st.Signal, "connection lost") || !strings.Contains(st.Signal, b.String()) {
				t.Errorf("%s: Wait after the server died: %+v, %v; want the lost connection naming %s", id, st, err, b)
			}
			if _, err := m.Write(ctx10(t), agentpty.WriteRequest{ID: id, Input: "x"}); !errors.Is(err, agentpty.ErrExited) {
				t.Errorf("%s: write after the loss: %v; want ErrExited", id, err)
			}
		}
		if _, err := m.Start(ctx10(t), agentpty.StartRequest{Command: "true"}); err == nil {
			t.Errorf("a start with the server gone succeeded")
		}
		waitGone(t, mark(4715))
	})
}

// waitGone waits for the processes with arg to end (of the node's hangup,
// or of a signal they were sent).
func waitGone(t *testing.T, arg string) {
	t.Helper()
	waitArg(t, arg, false)
}

// waitRunning waits for a process with arg to run: a background job
// execs its program some time after the shell went on.
func waitRunning(t *testing.T, arg string) {
	t.Helper()
	waitArg(t, arg, true)
}

func waitArg(t *testing.T, arg string, running bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for (len(withArg(arg)) > 0) != running {
		if time.Now().After(deadline) {
			if running {
				t.Fatalf("no process with %q runs", arg)
			}
			t.Fatalf("processes with %q still run: %v", arg, withArg(arg))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heartbeatsEnd waits for client-go's WebSocket heartbeats of dropped
// connections to end: each stops at its next ping (5 s), which fails.
func heartbeatsEnd() {
	deadline := time.Now().Add(8 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) && strings.Contains(string(buf[:runtime.Stack(buf, true)]), "remotecommand.(*heartbeat).start") {
		time.Sleep(50 * time.Millisecond)
	}
}

// Where the container lacks what the probe needs (here grep, by which it
// finds the session's processes), the state is running and input_hidden
// false, even at a password prompt; the bytes still work. The control,
// the same prompt in a container with grep, waits for input with echo
// off.
func TestProbeWithoutGrep(t *testing.T) {
	noGrep := pathWithout(t, "grep")
	for _, withGrep := range []bool{true, false} {
		t.Run(map[bool]string{true: "grep, the control", false: "no grep"}[withGrep], func(t *testing.T) {
			var opts []kubetest.Option
			if !withGrep {
				opts = append(opts, kubetest.Env("PATH="+noGrep))
			}
			_, b := standin(t, opts...)
			m := newManager(t, b)
			res := mustStart(t, m, agentpty.StartRequest{Command: `command -v grep || echo no-grep; read -s -p 'Password: ' pw; echo "got ${#pw}"`, WaitFor: "Password: "})
			if strings.Contains(res.Output, "no-grep") == withGrep {
				t.Fatalf("grep in the container: %v; the command says %q", withGrep, res.Output)
			}
			w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitUntil: agentpty.WaitUntilInput, WaitMS: ptr(3000)})
			if waits := w.State == agentpty.StateWaitingInput && w.InputHidden; waits != withGrep || !waits && w.State != agentpty.StateRunning {
				t.Errorf("grep in the container: %v: state %q input_hidden %v", withGrep, w.State, w.InputHidden)
			}
			mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "typed", Submit: true, WaitFor: "got 5"})
		})
	}
}

// What outlives SIGKILL is named: a job frozen in a cgroup v1 freezer
// (SIGKILL waits there for the thaw) makes Kill say which process
// survived; thawed, it dies of the SIGKILL it was sent.
func TestKillNamesSurvivors(t *testing.T) {
	_, b := standin(t)
	m := newManager(t, b, mark(4714))
	res := mustStart(t, m, agentpty.StartRequest{Command: `sleep ` + mark(4714) + ` & echo "job=$!."; echo ready; while :; do sleep 0.05; done`, WaitFor: "ready"})
	job := testkit.NumberAfter(t, res.Output, "job=", ".")
	thaw := testkit.Freeze(t, job)
	_, err := m.Kill(ctx10(t), res.ID)
	if err == nil || !strings.Contains(err.Error(), "survived SIGKILL") || !strings.Contains(err.Error(), " "+strconv.Itoa(job)) {
		t.Errorf("Kill with job %d frozen: %v; want it named as surviving SIGKILL", job, err)
	}
	thaw()
	waitGone(t, mark(4714)) // the thawed job dies of its SIGKILL
}

// pathWithout is a directory of links to this machine's programs but
// names: a container's PATH whose image lacks them.
func pathWithout(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, bin := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		ents, _ := os.ReadDir(bin)
		for _, e := range ents {
			if !slices.Contains(names, e.Name()) {
				_ = os.Symlink(filepath.Join(bin, e.Name()), filepath.Join(dir, e.Name())) // the first directory's wins
			}
		}
	}
	return dir
}

// In a container without bash the probe runs under sh (dash here) and
// reads the same state: a prompt read with echo off waits for input, with
// input hidden.
func TestProbeWithoutBash(t *testing.T) {
	need(t, "dash")
	_, b := standin(t, kubetest.Env("PATH="+pathWithout(t, "bash")))
	m := newManagerOpts(t, agentpty.Options{Backend: b, Shell: []string{"sh", "-c"}}, false)
	res := mustStart(t, m, agentpty.StartRequest{Command: `command -v bash || echo no-bash; stty -echo; printf 'Password: '; read x; stty echo; echo "got $x"`, WaitUntil: agentpty.WaitUntilInput})
	if !strings.Contains(res.Output, "no-bash") || res.State != agentpty.StateWaitingInput || !res.InputHidden {
		t.Errorf("a prompt with echo off in a container without bash: state %q input_hidden %v, output %q; want waiting_input, hidden", res.State, res.InputHidden, res.Output)
	}
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "typed", Submit: true, WaitFor: "got typed"})
}

// kubepty runs its scripts with /bin/sh, not the first sh of the image's
// PATH, which may be anything (a busybox applet, a wrapper): here one that
// is no shell at all. The session still starts, runs its command in its
// working directory, and its state and files work. Before, every start
// ran the PATH's sh and failed.
func TestScriptsRunUnderBinSh(t *testing.T) {
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "sh"), []byte("#!/bin/sh\necho not-a-shell; exit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, b := standin(t, kubetest.Env("PATH="+fake+":"+pathWithout(t, "sh")))
	m := newManager(t, b)
	res := mustStart(t, m, agentpty.StartRequest{Command: `echo "dir=$PWD it's $((6*7))"; read -s -p 'Password: ' pw; echo "got ${#pw}"`, Cwd: "/usr", WaitFor: "Password: "})
	if !strings.Contains(res.Output, "dir=/usr it's 42") || strings.Contains(res.Output, "not-a-shell") {
		t.Errorf("a start where the PATH's sh is no shell: %q", res.Output)
	}
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitUntil: agentpty.WaitUntilInput, WaitMS: ptr(5000)})
	if w.State != agentpty.StateWaitingInput || !w.InputHidden {
		t.Errorf("the probe where the PATH's sh is no shell: state %q input_hidden %v", w.State, w.InputHidden)
	}
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "typed", Submit: true, WaitFor: "got 5"})
	sh := mustStart(t, m, agentpty.StartRequest{Shell: true, WaitUntil: agentpty.WaitUntilInput})
	if r, err := m.Run(ctx10(t), agentpty.RunRequest{ID: sh.ID, Command: "echo run-ok; (exit 4)"}); err != nil || r.Output != "run-ok" || r.ExitCode == nil || *r.ExitCode != 4 {
		t.Errorf("a shell session's run where the PATH's sh is no shell: %+v %v", r, err)
	}
}
