//go:build linux

package agentpty

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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
//     Reading and executing stay allowed everywhere. Each start opens every
//     root once, refusing a symlink on its path, and both bind and restrict
//     that descriptor, so no swap of a path can lead outside. A hard link
//     that already exists inside a root still reaches its file's other
//     names.
//   - A /dev of its own: null, zero, full, random, urandom, tty, a private
//     /dev/shm, a devpts instance of its own (so nested terminals work) in
//     which no other terminal of the host exists, and the child's own
//     terminal as /dev/console. /dev/shm holds p.ShmSize bytes.
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
//   - No capabilities and no_new_privs; io_uring, the kernel keyrings and
//     user namespaces (where the child would hold every capability)
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
// run it. The helper acts only on a nonce each start hands over on a
// descriptor, never on its environment variable alone, and never in a
// setuid, setgid or file-capability program: such a host cannot use it.
func NewSandbox(p SandboxPolicy) (Sandbox, error) {
	roots, err := policyRoots(p.WritableRoots)
	if err != nil {
		return nil, err
	}
	shm, err := shmSize(p.ShmSize)
	if err != nil {
		return nil, err
	}
	for i, r := range roots {
		// Each start opens the path a root resolves to now, refusing any
		// symlink on the way, and binds and restricts that descriptor.
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
		bwrap: bwrapArgs(bwrap, roots, p.AllowNetwork, shm)}
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
// over it, each from the descriptor the start hands over (sandbox.FDRoots
// on), and a /dev/shm of shm bytes.
func bwrapArgs(bwrap string, roots []string, network bool, shm int64) []string {
	args := []string{bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc"}
	if !network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
		"--size", strconv.FormatInt(shm, 10), "--tmpfs", "/dev/shm", "--proc", "/proc")
	for i, r := range roots {
		args = append(args, "--bind-fd", strconv.Itoa(sandbox.FDRoots+i), r)
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
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = sandboxEnv(env, s.env)
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
	// The kept paths stay until the child has bound them (keptPaths).
	kept, done := s.hold()
	defer done()
	files, err := s.handOver(cmd, kept)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		closeAll(files)
		return fmt.Errorf("sandbox: %w", err)
	}
	defer r.Close()
	cmd.ExtraFiles[0] = w
	cmd.Err = nil
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := start()
		w.Close()
		closeAll(files)
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

// handOver opens what the helper gets and sets cmd.ExtraFiles to it (the
// status pipe's place, sandbox.FDStatus, left for the caller), and
// cmd.Env's spec. It returns the files to close once the child started.
//
// The roots are opened here once, refusing a symlink anywhere on their
// paths, and bound and restricted by descriptor: a root checked by path
// and then bound by path could have become a symlink in between (a child
// of another session swapping a directory under an enclosing root).
func (s *bwrapSandbox) handOver(cmd *exec.Cmd, kept []string) (files []*os.File, err error) {
	defer func() {
		if err != nil {
			closeAll(files)
		}
	}()
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	files = append(files, exe)
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails on Linux
	nonce := hex.EncodeToString(raw[:])
	fd, err := unix.MemfdCreate("agentpty-sandbox", unix.MFD_CLOEXEC)
	if err != nil {
		return files, fmt.Errorf("sandbox: memfd_create: %w", err)
	}
	mem := os.NewFile(uintptr(fd), "agentpty-sandbox")
	files = append(files, mem)
	if _, err := mem.WriteString(nonce); err != nil {
		return files, fmt.Errorf("sandbox: %w", err)
	}
	for _, r := range s.roots {
		fd, err := unix.Openat2(unix.AT_FDCWD, r, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			return files, errorf(ErrInvalid, "sandbox: writable root %q no longer resolves to itself without symlinks: %v", r, err)
		}
		files = append(files, os.NewFile(uintptr(fd), r))
	}
	spec, err := json.Marshal(sandbox.Spec{Stage: sandbox.Outer, Nonce: nonce, Bwrap: s.withKept(s.bwrap, kept), ABI: s.abi,
		Roots: s.roots, RootFD: sandbox.FDRoots + len(s.roots), Network: s.network})
	if err != nil {
		return files, err
	}
	cmd.Env = append(cmd.Env, sandbox.Env+"="+string(spec))
	// Each root twice: bubblewrap closes the descriptor it binds.
	roots := files[2:]
	cmd.ExtraFiles = append(append([]*os.File{nil, exe, mem}, roots...), roots...)
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
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

// withKept returns bubblewrap's options with the kept paths that lie
// inside a writable root bound read-only after the roots, so that they
// stay read-only there; elsewhere they are read-only already.
func (s *bwrapSandbox) withKept(bwrap, kept []string) []string {
	for _, p := range kept {
		if slices.ContainsFunc(s.roots, func(r string) bool { return within(p, r) }) {
			bwrap = append(bwrap[:len(bwrap):len(bwrap)], "--ro-bind-try", p, p)
		}
	}
	return bwrap
}

// within reports whether path is root or lies under it; both are clean
// absolute paths.
func within(path, root string) bool {
	return path == root || root == "/" || strings.HasPrefix(path, root+"/")
}
