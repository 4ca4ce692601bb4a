//go:build linux

package sandbox

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Env is the environment variable that carries a Spec, as JSON, to the
// helper. It never reaches the command.
const Env = "AGENTPTY_SANDBOX"

// Confined is what the inner stage writes to the status pipe once the
// child is confined, just before it executes the command.
const Confined = "\x00agentpty-sandbox: confined\n"

// Descriptors the host hands the outer stage (exec.Cmd.ExtraFiles).
const (
	FDStatus = 3 // the status pipe's write end
	FDExe    = 4 // the host binary, which bubblewrap executes as the inner stage
	FDNonce  = 5 // a memfd holding Spec.Nonce and nothing else
	// FDRoots is the first of the writable roots, each opened by the host
	// without following symlinks and handed over twice: root i at
	// FDRoots+i for bubblewrap's --bind-fd, which closes it, and again at
	// Spec.RootFD+i for Landlock.
	FDRoots = 6
)

// Spec is what the host tells the helper.
type Spec struct {
	Stage   string   `json:"stage"`   // "outer", then "inner"
	Nonce   string   `json:"nonce"`   // what FDNonce holds: proof that the host started this process
	Bwrap   []string `json:"bwrap"`   // bubblewrap's path and options, up to the command
	ABI     int      `json:"abi"`     // the Landlock ABI to use
	Roots   []string `json:"roots"`   // the writable roots, as real paths
	RootFD  int      `json:"root_fd"` // Landlock's descriptor of Roots[0]; the others follow
	Network bool     `json:"network"` // the child has the host's network
	TTY     int      `json:"tty"`     // inner: the descriptor that holds the terminal meanwhile
}

// Stage names.
const (
	Outer = "outer"
	Inner = "inner"
)

func init() {
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	spec, ok := handedOver(v)
	if !ok {
		// The variable alone proves nothing: anyone who sets a program's
		// environment could make every binary linking this package run
		// what it names (a setuid one included). This process is not the
		// helper; it runs as itself, without the variable.
		_ = os.Unsetenv(Env)
		return
	}
	// Everything below confines this thread and executes from it.
	runtime.LockOSThread()
	err := errors.New("helper: refuses to run in a setuid, setgid or file-capability program")
	if !elevated() {
		err = run(spec)
	}
	msg := err.Error() + "\n"
	_, _ = unix.Write(FDStatus, []byte(msg))
	os.Exit(126)
}

// handedOver parses v and reports whether the host itself started this
// process: FDNonce holds the spec's nonce, which only a process holding
// that descriptor (the host that made it) can hand over.
func handedOver(v string) (Spec, bool) {
	var spec Spec
	if err := json.Unmarshal([]byte(v), &spec); err != nil || len(spec.Nonce) < 32 {
		return spec, false
	}
	var st unix.Stat_t
	// A regular file of the nonce's size: reading it cannot block.
	if unix.Fstat(FDNonce, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(spec.Nonce)) {
		return spec, false
	}
	got := make([]byte, len(spec.Nonce))
	n, err := unix.Pread(FDNonce, got, 0)
	return spec, err == nil && n == len(got) && subtle.ConstantTimeCompare(got, []byte(spec.Nonce)) == 1
}

// elevated reports whether this process runs with privileges its caller
// lacks (setuid, setgid, file capabilities: the kernel's AT_SECURE), where
// even a genuine hand-over is refused. Without the auxiliary vector it
// compares the real and effective ids.
func elevated() bool {
	const atSecure = 23
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atSecure {
				return kv[1] != 0
			}
		}
	}
	return os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid()
}

// run performs a stage; it returns only on failure. The command and its
// arguments follow os.Args[0]: its path, then its argv.
func run(spec Spec) error {
	switch spec.Stage {
	case Outer:
		return outer(spec, os.Args[1:])
	case Inner:
		return inner(spec, os.Args[1:])
	}
	return fmt.Errorf("helper: unknown stage %q", spec.Stage)
}

// launcherSignals are those the launcher must not die or stop of, as the
// terminal's foreground group and the session's member it is: the
// terminal's (Ctrl-C, Ctrl-\, Ctrl-Z, hangup), Kill's first ones, and any
// other a host sends the foreground group (SIGUSR1, real-time signals).
// Left alone are SIGCHLD, which bubblewrap waits on, those that cannot be
// caught or are ignored by default, and those the kernel raises for
// faults. The command gets every signal back at its default in the inner
// stage.
func launcherSignals() []os.Signal {
	var sigs []os.Signal
	for n := 1; n <= 64; n++ {
		switch sig := syscall.Signal(n); sig {
		case syscall.SIGCHLD, syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCONT, syscall.SIGURG, syscall.SIGWINCH,
			syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGABRT:
		default:
			if n != 32 && n != 33 { // the C library's own
				sigs = append(sigs, sig)
			}
		}
	}
	return sigs
}

// outer executes bubblewrap, with its errors going to the status pipe and
// the terminal kept aside for the inner stage.
func outer(spec Spec, cmd []string) error {
	if len(spec.Bwrap) == 0 {
		return fmt.Errorf("helper: no bubblewrap")
	}
	signal.Ignore(launcherSignals()...)
	// A descriptor no one uses yet, so nothing of the runtime's is
	// replaced; it stays open across exec.
	tty, err := unix.FcntlInt(2, unix.F_DUPFD, 10)
	if err != nil {
		return fmt.Errorf("helper: dup: %v", err)
	}
	if err := unix.Dup3(FDStatus, 2, 0); err != nil {
		return fmt.Errorf("helper: dup3: %v", err)
	}
	spec.Stage, spec.TTY = Inner, tty
	js, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	argv := append(append([]string{"bwrap"}, spec.Bwrap[1:]...), "--", fmt.Sprintf("/proc/self/fd/%d", FDExe))
	argv = append(argv, cmd...)
	return fmt.Errorf("helper: exec %s: %w", spec.Bwrap[0], syscall.Exec(spec.Bwrap[0], argv, withEnv(os.Environ(), string(js))))
}

// withEnv returns env with Env set to v, or removed when v is empty.
func withEnv(env []string, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, Env+"=") {
			out = append(out, kv)
		}
	}
	if v != "" {
		out = append(out, Env+"="+v)
	}
	return out
}

// inner confines the thread and executes the command from it. Without a
// command (NewSandbox's probe) it exits once confined.
func inner(spec Spec, cmd []string) error {
	if err := unix.Dup3(spec.TTY, 2, 0); err != nil {
		return fmt.Errorf("helper: dup3: %v", err)
	}
	unix.Close(spec.TTY)
	unix.Close(FDExe)
	if err := dropCapabilities(); err != nil {
		return err
	}
	fds := make([]int, len(spec.Roots))
	for i := range fds {
		fds[i] = spec.RootFD + i
	}
	if err := Restrict(spec.ABI, spec.Roots, fds); err != nil {
		return err
	}
	if err := installFilter(spec.Network); err != nil {
		return err
	}
	// Nothing of the host's but the terminal passes the exec: the status
	// pipe closes with it, and anything the host left without
	// close-on-exec stays behind.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close_range: %v", err)
	}
	env := withEnv(os.Environ(), "")
	defaultSignals()
	if _, err := unix.Write(FDStatus, []byte(Confined)); err != nil {
		os.Exit(126) // the host gave up waiting; it kills the sandbox
	}
	if len(cmd) == 0 {
		os.Exit(0)
	}
	err := syscall.Exec(cmd[0], cmd[1:], env)
	// Confined already: the message is the command's to show.
	fmt.Fprintf(os.Stderr, "agentpty sandbox: exec %s: %v\n", cmd[0], err)
	os.Exit(127)
	return nil
}

// dropCapabilities empties every capability set of the thread and sets
// no_new_privs, so exec gives none back, not even to root.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}

// defaultSignals gives every signal its default disposition and unblocks
// them all on this thread: exec keeps ignored signals ignored (the outer
// stage ignored the polite ones) and keeps the mask. An all-zero
// sigaction is SIG_DFL with no flags on every architecture.
func defaultSignals() {
	var zero [4]uint64
	for sig := 1; sig <= 64; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&zero)), 0, 8, 0, 0)
	}
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&zero)), 0, 8, 0, 0)
}
