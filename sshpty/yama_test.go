//go:build linux

package sshpty

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// readsTwice reads a line in the clear, then one with echo off; with
// "undumpable" it first makes itself undumpable (PR_SET_DUMPABLE 0), which
// hides its /proc/PID/syscall from a user who is not root, as Yama's
// ptrace_scope does.
const readsTwice = `exec /usr/bin/python3 -c '
import ctypes, getpass, sys
if sys.argv[1] == "undumpable":
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
print("plain=" + input("plain> "))
s = getpass.getpass("secret> ")
print("secret=" + str(len(s)))
input("end> ")
' %s`

// Where the host hides /proc/PID/syscall from the login user, the echo
// flag decides: a program reading in the clear is not seen waiting (its
// read cannot be seen), one reading with echo off is, and input_hidden
// holds. The control, the same program with its syscall file readable,
// is seen waiting at both reads.
func TestHiddenSyscallFallsBackToTheEchoFlag(t *testing.T) {
	testkit.Need(t, "/usr/bin/python3")
	_, c := connectUser(t)
	m := newManager(t, c, agentpty.Options{})

	hidden := mustStart(t, m, agentpty.StartRequest{Command: fmt.Sprintf(readsTwice, "undumpable"), WaitFor: "plain> "})
	readable := mustStart(t, m, agentpty.StartRequest{Command: fmt.Sprintf(readsTwice, "dumpable"), WaitUntil: agentpty.WaitUntilInput})
	if readable.State != agentpty.StateWaitingInput || readable.InputHidden {
		t.Errorf("the control at its clear read: state %q input_hidden %v; want waiting_input, not hidden", readable.State, readable.InputHidden)
	}
	hs, _ := m.Session(hidden.ID)
	rs, _ := m.Session(readable.ID)
	// The login user cannot read the undumpable program's system call, but
	// can read the control's.
	look := mustStart(t, m, agentpty.StartRequest{Command: fmt.Sprintf("cat /proc/%d/syscall; cat /proc/%d/syscall; echo looked", hs.PID(), rs.PID()), WaitFor: "looked"})
	if !strings.Contains(look.Output, "Permission denied") || strings.Count(look.Output, "0x") < 6 {
		t.Fatalf("the login user reading both programs' syscall files: %q; want the first denied, the second read", look.Output)
	}

	// At the clear read the probe cannot tell a read from work: running.
	w, err := m.Write(waitCtx(t), agentpty.WriteRequest{ID: hidden.ID, WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(1500)})
	if err != nil {
		t.Fatal(err)
	}
	if nr := syscallNr(t, hs.PID()); nr != "0x"+strconv.FormatInt(unix.SYS_READ, 16) && nr != strconv.Itoa(unix.SYS_READ) { // this test runs as root: it can look
		t.Fatalf("the undumpable program is in system call %s, not read(2): the check below proves nothing", nr)
	}
	if w.State != agentpty.StateRunning || w.InputHidden {
		t.Errorf("at the clear read with /proc/PID/syscall hidden: state %q input_hidden %v; want running (the echo flag is on)", w.State, w.InputHidden)
	}
	// At the read with echo off the flag says it waits, and hides input.
	for id, what := range map[string]string{hidden.ID: "hidden", readable.ID: "control"} {
		w := mustWrite(t, m, agentpty.WriteRequest{ID: id, Input: "clear", Submit: true, WaitFor: "secret> "})
		if !strings.Contains(w.Output, "plain=clear") {
			t.Errorf("%s: %q; want plain=clear", what, w.Output)
		}
		w = mustWrite(t, m, agentpty.WriteRequest{ID: id, WaitUntil: agentpty.WaitUntilInput})
		if w.State != agentpty.StateWaitingInput || !w.InputHidden {
			t.Errorf("%s at the read with echo off: state %q input_hidden %v; want waiting_input, hidden", what, w.State, w.InputHidden)
		}
		s, err := m.WriteSecret(waitCtx(t), id, []byte("hunter2"))
		if err == nil && !strings.Contains(s.Output, "secret=7") {
			s = mustWrite(t, m, agentpty.WriteRequest{ID: id, WaitFor: "secret=7"})
		}
		if err != nil || strings.Contains(s.Output, "hunter2") {
			t.Errorf("%s: WriteSecret: %+v %v", what, s, err)
		}
	}
}

// connectUser is connect for a login user who is not root (made for t),
// by password.
func connectUser(t *testing.T) (*sshdtest.Server, *ssh.Client) {
	t.Helper()
	return connectUserWith(t, "")
}

// connectUserWith is connectUser for a user whose login shell is shell
// ("": bash).
func connectUserWith(t *testing.T, shell string) (*sshdtest.Server, *ssh.Client) {
	t.Helper()
	testkit.Need(t, "useradd", "userdel", "chpasswd", "usermod")
	name, password := loginUser(t)
	if shell != "" {
		if out, err := exec.Command("usermod", "-s", shell, name).CombinedOutput(); err != nil {
			t.Fatalf("usermod -s %s: %v\n%s", shell, err, out)
		}
	}
	srv := sshdtest.StartWith(t, sshdtest.Options{PasswordUser: name})
	cfg := srv.ClientConfig()
	cfg.Auth = []ssh.AuthMethod{ssh.Password(password)}
	return srv, dial(t, srv, cfg)
}

// syscallNr is the number of the system call pid is in (read as root).
func syscallNr(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		t.Fatalf("/proc/%d/syscall is empty", pid)
	}
	return f[0]
}

// loginUser adds a user who is not root, with a password, for t; it is
// removed when t ends.
func loginUser(t *testing.T) (name, password string) {
	t.Helper()
	name = "aptyssh" + strconv.Itoa(os.Getpid()%100000)
	password = "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	testkit.LoginUser(t, name, password)
	return name, password
}
