//go:build linux

package sshpty

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// stubborn is a session that leaves processes everywhere a kill must
// reach: a background job in its own process group (job control on), a
// nohup'd one, a subshell's child, all ignoring TERM and HUP like the
// shell itself.
const stubborn = `trap "" TERM HUP; set -m; sleep 1001 & nohup sleep 1002 >/dev/null 2>&1 & (sleep 1003 &); (trap "" TERM HUP; exec sleep 1004) & echo ready; while :; do sleep 1; done`

func TestEndLeavesNoRemoteProcess(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, stubborn)
	out.waitFor(t, "ready")
	pid := term.PID()
	if pid <= 0 {
		t.Fatalf("PID() = %d", pid)
	}
	before := proc.Members(pid)
	if len(before) < 5 {
		t.Fatalf("the session has processes %v; want the shell and four sleeps", before)
	}
	start := time.Now()
	if err := term.End(context.Background(), 300*time.Millisecond); err != nil {
		t.Errorf("End: %v", err)
	}
	took := time.Since(start)
	t.Logf("End took %v", took)
	st, err := term.Wait()
	t.Logf("Wait after %v", time.Since(start))
	if err != nil || st.Signal != "SIGKILL" {
		t.Errorf("Wait = %v, %v; want killed by SIGKILL (the shell ignores TERM and HUP)", st, err)
	}
	noneLeft(t, pid)
	for _, p := range before {
		if alive(p) {
			t.Errorf("process %d survived End", p)
		}
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("End took %v; want the 300ms grace, then SIGKILL", took)
	}
	closeTerm(term, out)
	t.Logf("closed after %v", time.Since(start))
}

// The control: closing the channel, all a backend without End could do,
// hangs up the terminal and leaves what ignores HUP running.
func TestClosingTheChannelAloneLeavesProcesses(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, stubborn)
	out.waitFor(t, "ready")
	pid := term.PID()
	before := proc.Members(pid)
	closeTerm(term, out)
	_, _ = term.Wait()
	var left []int
	for _, p := range before {
		if alive(p) {
			left = append(left, p)
		}
	}
	for _, p := range left {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if len(left) == 0 {
		t.Fatalf("closing the channel ended every process of %v: the kill test proves nothing", before)
	}
}

func TestExitStatusAndSignal(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	for _, tc := range []struct {
		script string
		want   agentpty.ExitStatus
	}{
		{"exit 3", agentpty.ExitStatus{Code: 3}},
		{"true", agentpty.ExitStatus{}},
		{"kill -s USR1 $$", agentpty.ExitStatus{Code: -1, Signal: "SIGUSR1"}},
	} {
		term, out := startTerm(t, b, tc.script)
		st, err := term.Wait()
		<-out.done
		term.Close()
		if err != nil || st != tc.want {
			t.Errorf("%q: Wait = %+v, %v; want %+v", tc.script, st, err, tc.want)
		}
	}
}

func TestResizeAndSignal(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `trap 'echo "winch $(stty size)"' WINCH; trap 'echo got-int' INT; echo ready; while :; do sleep 0.05; done`)
	out.waitFor(t, "ready")
	if err := term.Resize(91, 13); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "winch 13 91")
	if err := term.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got-int")
	if err := term.End(context.Background(), time.Second); err != nil {
		t.Error(err)
	}
	term.Wait()
	closeTerm(term, out)
}

func TestLostConnection(t *testing.T) {
	srv, c := connect(t)
	b := New(c)
	var terms []agentpty.Terminal
	var pumps []*pump
	for i := 0; i < 3; i++ {
		term, out := startTerm(t, b, "echo ready; exec cat")
		out.waitFor(t, "ready")
		terms, pumps = append(terms, term), append(pumps, out)
	}
	srv.Kill()
	for i, term := range terms {
		<-pumps[i].done
		_, err := term.Wait()
		if !errors.Is(err, agentpty.ErrClosed) || !strings.Contains(err.Error(), srv.Addr) || !strings.Contains(err.Error(), "ssh") {
			t.Errorf("Wait after the server died: %v; want ErrClosed naming ssh and %s", err, srv.Addr)
		}
		if _, err := term.Write([]byte("x")); err == nil {
			t.Error("Write after the server died succeeded")
		}
		done := make(chan struct{})
		go func() {
			term.End(context.Background(), time.Second)
			term.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("End and Close hang on a lost connection")
		}
	}
	_, err := b.Start(context.Background(), agentpty.Command{Argv: []string{"true"}, Cols: 80, Rows: 24, Name: "pty-9"})
	if !errors.Is(err, agentpty.ErrClosed) || !strings.Contains(err.Error(), "pty-9") {
		t.Errorf("Start after the server died: %v; want ErrClosed naming the session", err)
	}
}

func TestPIDIsTheCommand(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `echo "me $$"; exec cat`)
	out.waitFor(t, "me ")
	f := strings.Fields(strings.SplitN(out.String(), "me ", 2)[1])
	if len(f) == 0 || f[0] != strconv.Itoa(term.PID()) {
		t.Errorf("PID() = %d; the command says %q", term.PID(), out.String())
	}
	if strings.Contains(out.String(), "6973") {
		t.Errorf("the process-id mark reached the output: %q", out.String())
	}
	term.End(context.Background(), time.Second)
	term.Wait()
	closeTerm(term, out)
}

// On a host without /proc, signals and End go as "signal" requests, which
// OpenSSH honours for a login that is not root: SIGINT reaches the
// command's trap, and End's SIGTERM its process group, a background job
// included. On a root login it refuses them ("session signalling requires
// privilege separation"): Signal reports no failure yet delivers nothing,
// End waits out the grace and killBound and says the command outlived
// SIGKILL, and closing the channel hangs the terminal up, which ends the
// command and leaves the job that ignores SIGHUP running. The root login
// runs once on a host taken to lack /proc (noProc), once with /proc truly
// absent from what it runs (connectRootWithoutProc).
func TestSignalRequestsWithoutProc(t *testing.T) {
	const grace = 300 * time.Millisecond
	const script = `trap 'echo got-int' INT; (trap '' HUP INT; echo "job=$BASHPID."; exec sleep 1005) & echo ready; while :; do read -r x && echo "read $x"; done`
	for _, tc := range []struct {
		name    string
		root    bool
		noProc  bool
		connect func(*testing.T) (*sshdtest.Server, *ssh.Client)
	}{
		{"root", true, true, connectRoot},
		{"root, /proc absent", true, false, connectRootWithoutProc},
		{"user, the control", false, true, connectUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			noProc = tc.noProc
			defer func() { noProc = false }()
			srv, c := tc.connect(t)
			// The job outlives the hang-up on a root login: it is ended
			// however far the test got, before the server's check for
			// what its logins left.
			t.Cleanup(func() {
				for _, p := range srv.Marked() {
					if p.Cmdline == "sleep 1005" {
						_ = syscall.Kill(p.PID, syscall.SIGKILL)
					}
				}
			})
			term, out := startTerm(t, New(c), script)
			defer closeTerm(term, out)
			if _, ok := term.(agentpty.StateReader); ok {
				t.Fatal("the terminal reads state on a host without /proc")
			}
			out.waitFor(t, "ready")
			out.waitFor(t, ".") // the job's traps are set
			bg := testkit.NumberAfter(t, out.String(), "job=", ".")
			pid := term.PID()
			if bg <= 0 || pid <= 0 {
				t.Fatalf("the command %d and its job %d", pid, bg)
			}
			if err := term.Signal(syscall.SIGINT); err != nil {
				t.Fatalf("Signal: %v", err)
			}
			// Input typed after the request is read after it was handled:
			// a trap that ran has printed by the time the line is read.
			if _, err := term.Write([]byte("a\r")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "read a")
			if !alive(bg) {
				t.Fatal("the job that ignores SIGINT and SIGHUP is gone before End")
			}
			before, _, _ := strings.Cut(out.String(), "read a")
			if delivered := strings.Contains(before, "got-int"); delivered == root {
				t.Errorf("SIGINT reached the command's trap: %v; on a root login it should not, otherwise it should:\n%s", delivered, out.String())
			}
			began := time.Now()
			err := term.End(context.Background(), grace)
			took := time.Since(began)
			if !root {
				if err != nil || took > grace+killBound {
					t.Errorf("End: %v after %v; want the command ended by SIGTERM", err, took)
				}
				gone(t, pid)
				gone(t, bg) // SIGTERM reached its process group
				return
			}
			if err == nil || !strings.Contains(err.Error(), "outlived SIGKILL") || took < grace+killBound {
				t.Errorf("End on a root login: %v after %v; want the command said to outlive SIGKILL, after %v", err, took, grace+killBound)
			}
			if !alive(pid) || !alive(bg) {
				t.Fatalf("a signal request reached the root login's command: command alive %v, job alive %v", alive(pid), alive(bg))
			}
			if !strings.Contains(srv.Log(), "session signalling requires privilege separation") {
				t.Errorf("the server did not say it refused the requests:\n%s", srv.Log())
			}
			term.Close()
			gone(t, pid) // the hang-up
			if !alive(bg) {
				t.Error("the job that ignores SIGHUP did not outlive the hang-up")
			}
		})
	}
}

// connectRoot is connect for a root login.
func connectRoot(t *testing.T) (*sshdtest.Server, *ssh.Client) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a root login needs the tests to run as root")
	}
	return connect(t)
}

// connectRootWithoutProc logs in, with the server's client key, as a user
// with root's id (made for t) whose login shell runs what it is given in
// a mount namespace without /proc (no password: "*", which is not a locked
// account): a host whose root has no /proc, for the commands and the
// probe shell alike.
func connectRootWithoutProc(t *testing.T) (*sshdtest.Server, *ssh.Client) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a root login and a mount namespace need the tests to run as root")
	}
	testkit.Need(t, "useradd", "userdel", "unshare", "umount")
	home := t.TempDir()
	shell := filepath.Join(home, "noproc-sh")
	script := "#!/bin/sh\nexec unshare -m /bin/sh -c 'umount -l /proc && exec /bin/bash \"$@\"' sh \"$@\"\n"
	if err := os.WriteFile(shell, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	name := "aptynp" + strconv.Itoa(os.Getpid()%100000)
	if out, err := exec.Command("useradd", "-p", "*", "-o", "-u", "0", "-g", "0", "-N", "-M", "-d", home, "-s", shell, name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", "-f", name).Run() })
	srv := sshdtest.Start(t)
	cfg := srv.ClientConfig()
	cfg.User = name
	return srv, dial(t, srv, cfg)
}
