//go:build linux

package agentpty

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/sandbox"
)

// NewSandbox returns a Sandbox the kernel enforces on every child it
// starts, or an error wrapping ErrUnsupported that names what this host
// lacks: Start never runs a child unconfined.
//
// On Linux the child runs under bubblewrap (bwrap, 0.5 or later), with
// Landlock (ABI 3 or later, Linux 6.2) and a seccomp filter applied inside
// it by the host binary itself, executed again as a helper (see
// internal/sandbox; package initialisers of the host binary run in it):
//
//   - A mount namespace in which the whole filesystem is mounted read-only
//     but p.WritableRoots: outside them nothing changes, metadata included
//     (chmod, chown, utimes and xattrs fail with EROFS), even for a root
//     host's child. Landlock repeats the rule: writes only under the roots.
//     Reading and executing stay allowed everywhere.
//   - A /dev of its own: null, zero, full, random, urandom, tty, a private
//     /dev/shm, a devpts instance of its own (so nested terminals work) in
//     which no other terminal of the host exists, and the child's own
//     terminal as /dev/console.
//   - A PID namespace: no process of the host is visible, so none can be
//     signalled or traced; from Landlock ABI 6 (Linux 6.12) Landlock also
//     refuses signals and abstract Unix sockets to anything outside the
//     sandbox. An IPC namespace hides the host's System V IPC.
//   - Without p.AllowNetwork, a network namespace whose loopback is up (a
//     server the child starts on 127.0.0.1 works, the host's is out of
//     reach), no socket families but IPv4, IPv6 and netlink (vsock to the
//     hypervisor is refused), and no Unix socket but stream and seqpacket
//     socketpairs: socket(AF_UNIX) fails with EACCES, so no socket on the
//     host's filesystem (Docker's, an SSH agent's, D-Bus) can be reached.
//   - No capabilities and no_new_privs; io_uring and the kernel keyrings
//     refused; every descriptor of the host but the terminal closed at
//     exec; only the environment variables p.Env names.
//   - bubblewrap's --die-with-parent: when the host process dies, so does
//     everything in the sandbox.
//
// A host without privileges gets the same through a user namespace,
// where the child keeps its uid and sees files of other users as owned by
// the overflow id ("nobody").
//
// The sandbox works as Options.Sandbox itself, not wrapped in another
// Sandbox: its Prepare marks the command so that only its own start can
// run it.
func NewSandbox(p SandboxPolicy) (Sandbox, error) {
	roots, err := policyRoots(p.WritableRoots)
	if err != nil {
		return nil, err
	}
	for i, r := range roots {
		// bubblewrap binds the directory a root resolves to; Prepare
		// checks that it still does.
		if roots[i], err = filepath.EvalSymlinks(r); err != nil {
			return nil, errorf(ErrInvalid, "sandbox: writable root %q: %v", r, err)
		}
	}
	abi, err := landlockABI()
	if err != nil {
		return nil, err
	}
	if !sandbox.FilterSupported() {
		return nil, errorf(ErrUnsupported, "sandbox: the seccomp filter that refuses Unix sockets is not written for %s", runtime.GOARCH)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errorf(ErrUnsupported, "sandbox: bubblewrap (bwrap) is not installed: %v", err)
	}
	s := &bwrapSandbox{abi: abi, roots: roots, network: p.AllowNetwork, env: p.Env,
		bwrap: bwrapArgs(bwrap, roots, p.AllowNetwork)}
	if out, err := exec.Command(bwrap, "--version").Output(); err == nil {
		s.version = strings.TrimSpace(string(out))
	}
	// A whole start with nothing to run: what this host refuses shows
	// here, not at every Start.
	probe := &exec.Cmd{Path: "/", Args: []string{"/"}}
	if err := s.Prepare(probe); err != nil {
		return nil, err
	}
	probe.Args = probe.Args[:1] // no command: the helper exits once confined
	if err := s.startOnThread(probe, probe.Start); err != nil {
		return nil, errorf(ErrUnsupported, "%v", err)
	}
	if err := probe.Wait(); err != nil {
		return nil, errorf(ErrUnsupported, "sandbox: the probe failed after confinement: %v", err)
	}
	return s, nil
}

type bwrapSandbox struct {
	abi     int      // the kernel's Landlock ABI version
	roots   []string // real paths
	network bool
	env     []string // SandboxPolicy.Env
	bwrap   []string // bubblewrap's path and options
	version string   // bwrap --version

	keptPaths // bound read-only over the roots (privdir.go)
}

// bwrapArgs returns bubblewrap's command line up to the command: the
// namespaces, then the read-only filesystem with the roots bound writable
// over it.
func bwrapArgs(bwrap string, roots []string, network bool) []string {
	args := []string{bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc"}
	if !network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc")
	for _, r := range roots {
		args = append(args, "--bind", r, r)
	}
	return args
}

// errNotOnThread stands in cmd.Err between Prepare and startOnThread, so a
// command prepared but started any other way fails instead of running
// unconfined.
var errNotOnThread = errors.New("sandbox: a sandbox from NewSandbox starts the child itself; " +
	"use it as Options.Sandbox itself, not inside another Sandbox")

// Prepare makes the command run through the helper under bubblewrap, with
// only the environment the policy allows, and marks it so that it starts
// only through startOnThread.
func (s *bwrapSandbox) Prepare(cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return nil // the command was not found: the start reports it
	}
	for _, r := range s.roots {
		// A root that now resolves elsewhere (a child replaced a directory
		// under another root with a symlink) would be bound writable there.
		if real, err := filepath.EvalSymlinks(r); err != nil || real != r {
			return errorf(ErrInvalid, "sandbox: writable root %q no longer resolves to itself (%q, %v)", r, real, err)
		}
	}
	spec, err := json.Marshal(sandbox.Spec{Stage: sandbox.Outer, Bwrap: s.withKept(s.bwrap), ABI: s.abi, Roots: s.roots, Network: s.network})
	if err != nil {
		return err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(sandboxEnv(env, s.env), sandbox.Env+"="+string(spec))
	cmd.Args = append([]string{"agentpty-sandbox", cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	cmd.Err = errNotOnThread
	return nil
}

// startTimeout bounds how long a start waits for the helper to report the
// child confined.
const startTimeout = 30 * time.Second

// startOnThread starts cmd from a thread that stays until the child has
// exited, and returns once the helper reports the child confined, or with
// the error that stopped it (bubblewrap's own message, or the helper's),
// after killing and reaping what it started.
//
// bubblewrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the
// thread that forked it ends, not the process: the goroutine that starts
// the child keeps its thread locked until the child exits, then ends
// locked, and the runtime ends the thread with it.
func (s *bwrapSandbox) startOnThread(cmd *exec.Cmd, start func() error) error {
	switch cmd.Err {
	case errNotOnThread:
	case nil:
		return errors.New("sandbox: the command was not prepared by the sandbox starting it")
	default:
		return cmd.Err // the command was not found: nothing to start
	}
	if len(cmd.ExtraFiles) != 0 {
		return errors.New("sandbox: the command already has extra files; the sandbox passes none but its own")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer r.Close()
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		w.Close()
		return fmt.Errorf("sandbox: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w, exe} // sandbox.FDStatus, sandbox.FDExe
	cmd.Err = nil
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := start()
		w.Close()
		exe.Close()
		if err == nil {
			var pidfd int
			if pidfd, err = unix.PidfdOpen(cmd.Process.Pid, 0); err == nil {
				started <- nil
				waitExit(pidfd)
				return
			}
			err = fmt.Errorf("pidfd_open: %w", err)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		started <- err
	}()
	if err := <-started; err != nil {
		return err
	}
	report, err := readStatus(r)
	if err == nil {
		return nil
	}
	_ = cmd.Process.Kill() // bubblewrap's own child dies with it
	_ = cmd.Wait()
	if report = strings.TrimSpace(report); report != "" {
		return fmt.Errorf("sandbox: %s", report)
	}
	return fmt.Errorf("sandbox: %v before the child was confined (%v)", err, cmd.ProcessState)
}

// readStatus reads the status pipe until the helper reports the child
// confined (nil), or until everything that could write has exited or the
// wait runs out (an error, with what was written: bubblewrap's message or
// the helper's). bubblewrap keeps the pipe open while the child runs.
func readStatus(r *os.File) (string, error) {
	_ = r.SetReadDeadline(time.Now().Add(startTimeout))
	var got []byte
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if bytes.HasSuffix(got, []byte(sandbox.Confined)) {
			return "", nil
		}
		switch {
		case err == io.EOF:
			return string(got), errors.New("the helper ended")
		case err != nil:
			return string(got), err
		}
	}
}

// waitExit blocks until the process behind pidfd has exited, without
// reaping it, and closes pidfd.
func waitExit(pidfd int) {
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return
		}
	}
}

// childStatus turns bubblewrap's 128+N back into signal N: bubblewrap
// exits so when its child was killed by a signal.
func (s *bwrapSandbox) childStatus(st ExitStatus) ExitStatus {
	if st.Signal != "" || st.Code <= 128 || st.Code > 128+64 {
		return st
	}
	sig := syscall.Signal(st.Code - 128)
	name := unix.SignalName(sig)
	if name == "" {
		name = fmt.Sprintf("signal %d", int(sig))
	}
	return ExitStatus{Code: -1, Signal: name}
}

// landlockABI returns the kernel's Landlock ABI version, or an error
// wrapping ErrUnsupported that says what is missing.
func landlockABI() (int, error) {
	v, errno := sandbox.LandlockABI()
	switch errno {
	case 0:
	case unix.ENOSYS:
		return 0, errorf(ErrUnsupported, "landlock is not enabled in this kernel (landlock_create_ruleset: %v; "+
			"it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)", errno)
	case unix.EOPNOTSUPP:
		return 0, errorf(ErrUnsupported, "landlock is not enabled in this kernel (landlock_create_ruleset: %v; "+
			"it is built in but off: add landlock to the lsm= boot parameter)", errno)
	default:
		return 0, errorf(ErrUnsupported, "landlock is not usable here (landlock_create_ruleset: %v)", errno)
	}
	if v < 3 {
		return 0, errorf(ErrUnsupported, "landlock ABI %d cannot stop a child truncating files outside its writable roots "+
			"(that needs ABI 3, Linux 6.2)", v)
	}
	return v, nil
}

// String describes the confinement, for logs.
func (s *bwrapSandbox) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s with landlock ABI %d", s.version, s.abi)
	if sandbox.Scoped(s.abi) {
		b.WriteString(" (signals and abstract sockets scoped)")
	}
	fmt.Fprintf(&b, "; writable: %s; network: ", describeRoots(s.roots))
	if s.network {
		b.WriteString("the host's")
	} else {
		b.WriteString("a namespace of its own, loopback up, no Unix sockets")
	}
	if os.Geteuid() != 0 {
		b.WriteString("; in a user namespace")
	}
	return b.String()
}

// withKept returns bubblewrap's options with the kept paths bound
// read-only after the roots, so that they stay read-only inside them; a
// path removed meanwhile is skipped.
func (s *bwrapSandbox) withKept(bwrap []string) []string {
	for _, p := range s.kept() {
		bwrap = append(bwrap[:len(bwrap):len(bwrap)], "--ro-bind-try", p, p)
	}
	return bwrap
}
