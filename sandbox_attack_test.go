//go:build linux || darwin

package agentpty

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/testkit"
)

// attack runs script twice, to its end marker "== end": under sb, and
// unconfined as the control that shows the attack works without the
// sandbox. It returns both outputs.
func attack(t *testing.T, sb Sandbox, script string) (sandboxedOut, controlOut string) {
	t.Helper()
	_, res := sandboxed(t, sb, script, "== end")
	_, ctl := sandboxed(t, nil, script, "== end")
	return res.Output, ctl.Output
}

// try is the shell function the attack scripts use: "NAME: done" when the
// command succeeds, "NAME: refused" when it fails.
const try = `try() { if "${@:2}"; then echo "$1: done"; else echo "$1: refused"; fi; }` + "\n"

func needLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the Linux sandbox's namespaces")
	}
}

// TestSandboxSignalHost: the child can neither signal, trace, nor even see
// a process of the host's (the test's own helper child, and the test).
func TestSandboxSignalHost(t *testing.T) {
	testkit.Parallel(t)
	needLinux(t)
	helper := exec.Command("sleep", "300")
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}})
	script := try + fmt.Sprintf(`p=%d host=%d
try stop kill -STOP $p
kill -CONT $p 2>/dev/null
try host-signal kill -0 $host
try proc test -e /proc/$p/stat
try mem python3 -c 'open("/proc/%d/mem", "rb")'
try ptrace python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).ptrace(16, %d, 0, 0) != 0)'
echo "== end"`, helper.Process.Pid, os.Getpid(), helper.Process.Pid, helper.Process.Pid)
	got, ctl := attack(t, sb, script)
	wantLines(t, ctl, "stop: done", "host-signal: done", "proc: done", "mem: done", "ptrace: done")
	wantLines(t, got, "stop: refused", "host-signal: refused", "proc: refused", "mem: refused", "ptrace: refused")
	if err := syscall.Kill(helper.Process.Pid, 0); err != nil {
		t.Errorf("the helper is gone: %v", err)
	}
}

// TestSandboxOtherTerminal: another terminal the host holds open cannot be
// read, written or reconfigured from the sandbox; its devpts is not there.
func TestSandboxOtherTerminal(t *testing.T) {
	testkit.Parallel(t)
	needLinux(t)
	master, slave, err := openTerminal()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	name := slave.Name()
	script := try + fmt.Sprintf(`n=%q
try read head -n1 "$n"
try write sh -c 'printf "\033]52;c;cHduZWQ=\a" > "$1"' sh "$n"
try stty stty -F "$n" -echo
try proc-fd sh -c 'ls -l /proc/*/fd 2>/dev/null | grep -q -- " -> $1$"' sh "$n"
echo "== end"`, name)
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}})
	// A line typed on the other terminal, waiting to be read there.
	if _, err := master.Write([]byte("keystrokes\n")); err != nil {
		t.Fatal(err)
	}
	_, res := sandboxed(t, sb, script, "== end")
	got := res.Output
	wantLines(t, got, "read: refused", "write: refused", "stty: refused", "proc-fd: refused")
	if tio, err := unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios); err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("the other terminal's echo was turned off from the sandbox (%v)", err)
	}
	_, ctl := sandboxed(t, nil, script, "== end")
	wantLines(t, ctl.Output, "keystrokes", "read: done", "write: done", "stty: done", "proc-fd: done")
	if tio, err := unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios); err != nil || tio.Lflag&unix.ECHO != 0 {
		t.Errorf("the unconfined control did not turn the other terminal's echo off (%v)", err)
	}
}

// TestSandboxMetadataOutsideRoots: a file outside the roots keeps its
// mode, times, owner and extended attributes, also through a symlink the
// child plants in its root.
func TestSandboxMetadataOutsideRoots(t *testing.T) {
	testkit.Parallel(t)
	needLinux(t)
	root := t.TempDir()
	f := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	script := try + fmt.Sprintf(`f=%q r=%q
try chmod chmod 777 "$f"
try touch touch -d 2000-01-01 "$f"
try xattr python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.pwned", b"1")' "$f"
try chown chown %d:%d "$f"
ln -sf "$f" "$r/link"
try link-chmod chmod 707 "$r/link"
try hardlink ln "$f" "$r/hard"
try procw sh -c 'echo pwned > /proc/self/comm'
echo "== end"`, f, root, os.Getuid(), os.Getgid())
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{root}})
	_, res := sandboxed(t, sb, script, "== end")
	wantLines(t, res.Output, "Read-only file system", "chmod: refused", "touch: refused", "xattr: refused", "chown: refused", "link-chmod: refused", "hardlink: refused",
		"procw: refused") // bubblewrap's /proc is writable: only Landlock refuses this one
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.ModTime().Equal(old) {
		t.Errorf("the file outside the roots changed: mode %v, mtime %v", fi.Mode(), fi.ModTime())
	}
	if _, err := unix.Getxattr(f, "user.pwned", make([]byte, 8)); err == nil {
		t.Errorf("the file outside the roots has the child's xattr")
	}
	_, ctl := sandboxed(t, nil, script, "== end")
	wantLines(t, ctl.Output, "chmod: done", "touch: done", "xattr: done", "chown: done", "link-chmod: done", "hardlink: done", "procw: done")
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() == 0o600 || fi.ModTime().Equal(old) {
		t.Errorf("the unconfined control did not change the file: %v, %v", fi.Mode(), err)
	}
}

// TestSandboxHostDescriptor: a descriptor the host opened without
// close-on-exec does not reach the child.
func TestSandboxHostDescriptor(t *testing.T) {
	needLinux(t)
	f := filepath.Join(t.TempDir(), "log")
	fd, err := syscall.Open(f, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, 0o600) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	script := try + fmt.Sprintf(`try fd sh -c 'echo pwned >&%d'
try fd-open sh -c 'test "$(readlink /proc/$$/fd/%d)" = "$1"' sh %q
echo "== end"`, fd, fd, f)
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}})
	got, ctl := attack(t, sb, script)
	wantLines(t, got, "fd: refused", "fd-open: refused")
	wantLines(t, ctl, "fd: done", "fd-open: done")
	if b, _ := os.ReadFile(f); string(b) != "pwned\n" {
		t.Errorf("the file behind the descriptor holds %q; want only the control's line", b)
	}
}

// TestSandboxUnixSocket: without network no Unix socket outside the
// sandbox is reachable, by path or abstract name, nor a vsock; with network, abstract
// ones stay out of reach where Landlock scopes them. Socketpairs of the
// kinds that cannot address a socket still work.
func TestSandboxUnixSocket(t *testing.T) {
	testkit.Parallel(t)
	needLinux(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.sock")
	pathLn, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer pathLn.Close()
	abstract := fmt.Sprintf("@agentpty-test-%d", os.Getpid())
	absLn, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer absLn.Close()
	connect := `python3 -c 'import socket, sys; a = sys.argv[1]; a = "\0" + a[1:] if a[0] == "@" else a; socket.socket(socket.AF_UNIX).connect(a)'`
	script := try + fmt.Sprintf(`try path %s %q
try abstract %s %q
try dgram python3 -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)'
try pair python3 -c 'import socket; a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"'
try vsock python3 -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)'
echo "== end"`, connect, path, connect, abstract)
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("AllowNetwork=%v", allow), func(t *testing.T) {
			sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}, AllowNetwork: allow})
			_, res := sandboxed(t, sb, script, "== end")
			got := res.Output
			wantLines(t, got, "pair: done")
			pathReached, absReached := accepted(t, pathLn), accepted(t, absLn)
			if !allow {
				wantLines(t, got, "path: refused", "abstract: refused", "dgram: refused", "vsock: refused", "Permission denied")
				if pathReached || absReached {
					t.Errorf("a listener got a connection from a child without network (path %v, abstract %v)", pathReached, absReached)
				}
			} else if strings.Contains(fmt.Sprint(sb), "abstract sockets scoped") {
				wantLines(t, got, "abstract: refused")
				if absReached {
					t.Errorf("the abstract listener got a connection from the sandbox")
				}
			}
		})
	}
	_, ctl := sandboxed(t, nil, script, "== end")
	wantLines(t, ctl.Output, "path: done", "abstract: done", "dgram: done")
	if fd, err := syscall.Socket(40, syscall.SOCK_STREAM, 0); err == nil { // AF_VSOCK, where the host has it
		syscall.Close(fd)
		wantLines(t, ctl.Output, "vsock: done")
	}
	if !accepted(t, pathLn) || !accepted(t, absLn) {
		t.Errorf("the unconfined control reached no listener")
	}
}
