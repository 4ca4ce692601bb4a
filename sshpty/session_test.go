//go:build linux

package sshpty

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
)

// The same cases as the library runs on this machine, here through a real
// OpenSSH server on 127.0.0.1: the server is local, so this machine's
// /proc sees the remote processes.

// noProfile runs commands under bash -c: the server's login shell still
// reads its rc file once per channel.
var noProfile = []string{"bash", "-c"}

// newManager returns a manager whose sessions run over c (or on
// opts.Backend); when t ends it is closed and no process of its sessions
// may be left.
func newManager(t *testing.T, c *ssh.Client, opts agentpty.Options) *agentpty.Manager {
	t.Helper()
	if opts.Shell == nil {
		opts.Shell = noProfile
	}
	if opts.Backend == nil {
		opts.Backend = New(c)
	}
	m := agentpty.NewManager(opts)
	t.Cleanup(func() {
		var pids []int
		for _, info := range m.List() {
			if info.PID > 0 { // 0: the host never said
				pids = append(pids, info.PID)
			}
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, pid := range pids {
			noneLeft(t, pid)
		}
	})
	return m
}

func ms(n int) *int { return &n }

// The library's own test kit for managers on a backend.
var (
	waitCtx   = agentptytest.Ctx
	mustStart = agentptytest.MustStart
	mustWrite = agentptytest.MustWrite
)

// A signal's end reaches the session as the signal, from exit-signal.
func TestExitSignal(t *testing.T) {
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{})
	res := mustStart(t, m, agentpty.StartRequest{Command: "kill -s USR1 $$", WaitMS: ms(5000)})
	if !res.Exited || res.Signal != "SIGUSR1" || res.State != agentpty.StateExited {
		t.Errorf("killed by USR1: %+v", res)
	}
}

// Kill through the manager leaves nothing of stubborn on the host.
func TestKillLeavesNoRemoteProcess(t *testing.T) {
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{KillGrace: 300 * time.Millisecond})
	res := mustStart(t, m, agentpty.StartRequest{Command: stubborn, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	pid := s.PID()
	before := proc.Members(pid)
	if len(before) < 5 {
		t.Fatalf("the session has processes %v; want the shell and four sleeps", before)
	}
	k, err := m.Kill(waitCtx(t), res.ID)
	if err != nil || k.Signal != "SIGKILL" {
		t.Errorf("Kill: %+v %v; want killed by SIGKILL", k, err)
	}
	for _, p := range before {
		if alive(p) {
			t.Errorf("process %d survived Kill", p)
		}
	}
}

// A server killed under live sessions: they end as exited with an error
// naming the backend and host, waits return at once, writes get
// ErrExited, new starts fail, Close does not hang.
func TestServerKilledUnderLiveSessions(t *testing.T) {
	srv, c := connect(t)
	m := newManager(t, c, agentpty.Options{})
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, mustStart(t, m, agentpty.StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"}).ID)
	}
	// A wait begun as the server dies (most likely before: killing it
	// walks /proc) returns at once.
	waited := make(chan time.Duration, 1)
	go func() {
		begin := time.Now()
		m.Write(context.Background(), agentpty.WriteRequest{ID: ids[0], WaitFor: "never printed", WaitMS: ms(20000)})
		waited <- time.Since(begin)
	}()
	srv.Kill()
	if d := <-waited; d > 5*time.Second {
		t.Errorf("a wait took %v after the server died", d)
	}
	for _, id := range ids {
		s, _ := m.Session(id)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := s.Wait(ctx)
		cancel()
		if err != nil || !strings.Contains(st.Signal, "ssh") || !strings.Contains(st.Signal, srv.Addr) {
			t.Errorf("%s after the server died: %+v %v; want an end naming ssh and %s", id, st, err, srv.Addr)
		}
		if _, err := m.Write(waitCtx(t), agentpty.WriteRequest{ID: id, Input: "x"}); !errors.Is(err, agentpty.ErrExited) {
			t.Errorf("write to %s: %v; want ErrExited", id, err)
		}
	}
	if _, err := m.Start(waitCtx(t), agentpty.StartRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), srv.Addr) {
		t.Errorf("Start after the server died: %v; want an error naming %s", err, srv.Addr)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs after the server died")
	}
}

// Twelve sessions share one connection, one channel each; Close ends them
// all and leaves no goroutine (checked when the test ends).
func TestTwelveSessionsOverOneConnection(t *testing.T) {
	_, c := connect(t)
	base := goleak.IgnoreCurrent() // the connection's own
	m := newManager(t, c, agentpty.Options{})
	var wg sync.WaitGroup
	ids := make([]string, 12)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := m.Start(waitCtx(t), agentpty.StartRequest{Command: "echo ready; exec tr a-z A-Z", WaitFor: "ready"})
			if err != nil || !res.Matched {
				t.Errorf("start %d: %+v %v", i, res, err)
				return
			}
			ids[i] = res.ID
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" {
			continue
		}
		mustWrite(t, m, agentpty.WriteRequest{ID: id, Input: "ping" + strconv.Itoa(i), Submit: true, WaitFor: "PING" + strconv.Itoa(i)})
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// With the connection still open, nothing of the sessions is left.
	goleak.VerifyNone(t, base)
}

// On a host whose /proc cannot be read the session says what it cannot
// know: state running, wait_until "input" and WriteSecret refused with
// ErrUnsupported, never a guess. Once on a host taken to lack /proc
// (noProc), once on a login whose /proc is truly absent.
func TestHostWithoutProc(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noProc  bool
		connect func(*testing.T) (*sshdtest.Server, *ssh.Client)
	}{
		{"taken to lack /proc", true, connect},
		{"/proc absent", false, connectRootWithoutProc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noProc = tc.noProc
			defer func() { noProc = false }()
			_, c := tc.connect(t)
			hostWithoutProc(t, c)
		})
	}
}

func hostWithoutProc(t *testing.T, c *ssh.Client) {
	m := newManager(t, c, agentpty.Options{})
	res := mustStart(t, m, agentpty.StartRequest{Command: `read -s -p 'Password: ' pw; echo "got ${#pw}"`, WaitFor: "Password: "})
	if res.State != agentpty.StateRunning || res.InputHidden || res.Foreground != "" {
		t.Errorf("state %q input_hidden %v foreground %q; want running, false, none", res.State, res.InputHidden, res.Foreground)
	}
	if _, err := m.Write(waitCtx(t), agentpty.WriteRequest{ID: res.ID, WaitUntil: agentpty.WaitUntilInput}); !errors.Is(err, agentpty.ErrUnsupported) {
		t.Errorf("wait_until input: %v; want ErrUnsupported", err)
	}
	if _, err := m.WriteSecret(waitCtx(t), res.ID, []byte("hunter2")); !errors.Is(err, agentpty.ErrUnsupported) {
		t.Errorf("WriteSecret: %v; want ErrUnsupported", err)
	}
	// The bytes still work. (The control, the same prompt on a host with
	// /proc, is TestWriteSecretAtReadS: input_hidden and waiting_input.)
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "typed", Submit: true, WaitFor: "got 5"})
}

// With OpenSSH's default MaxSessions (10 channels per connection) and the
// probe shell holding one, a connection carries 9 sessions: the tenth
// start fails at once, naming the session, and leaves the others running.
func TestMaxSessionsDefault(t *testing.T) {
	srv := sshdtest.StartWith(t, sshdtest.Options{MaxSessions: 10})
	c := dial(t, srv, srv.ClientConfig())
	m := newManager(t, c, agentpty.Options{})
	var ids []string
	for i := 0; i < 9; i++ {
		ids = append(ids, mustStart(t, m, agentpty.StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"}).ID)
	}
	_, err := m.Start(waitCtx(t), agentpty.StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
	t.Logf("the tenth start: %v", err)
	if err == nil || !strings.Contains(err.Error(), "pty-10") || !strings.Contains(err.Error(), "open failed") {
		t.Errorf("the tenth session on a connection of 10 channels: %v; want the server's refusal, naming pty-10", err)
	}
	for _, id := range ids {
		mustWrite(t, m, agentpty.WriteRequest{ID: id, Input: "still-" + id, Submit: true, WaitFor: "still-" + id})
	}
}

// The line that starts a command is POSIX sh: a login shell that is dash
// runs it, with the session's variables (quotes, spaces, a newline and a
// dollar sign in a value), its working directory and the command's pid
// and exit code as under bash.
func TestDashLoginShell(t *testing.T) {
	testkit.Need(t, "dash")
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Fatal(err)
	}
	_, c := connectUserWith(t, dash)
	const value = "it's a \"value\"\nwith $HOME and `x`"
	m := newManager(t, c, agentpty.Options{Env: []string{"AGENTPTY_V=" + value}})
	res := mustStart(t, m, agentpty.StartRequest{Command: `printf '[%s]\n' "$AGENTPTY_V"; echo "dir=$PWD"; echo "me=$$"; read -r p </proc/$PPID/comm; echo "parent=$p"; exit 3`, Cwd: "/usr", WaitMS: ms(10000)})
	s, _ := m.Session(res.ID)
	for _, want := range []string{"[" + value + "]", "dir=/usr", "me=" + strconv.Itoa(s.PID()), "parent=sshd"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("under a dash login: %q lacks %q", res.Output, want)
		}
	}
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("exit 3 under a dash login: %+v", res)
	}
}
