package agentpty

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Sandbox confines a session's child. The host injects one through
// Options.Sandbox; NewSandbox builds one enforced by the kernel.
type Sandbox interface {
	// Prepare adjusts the command before it starts. An error stops the
	// start: a child is never run unconfined because confinement failed.
	// A panic stops it too, as an error wrapping ErrDenied.
	Prepare(cmd *exec.Cmd) error
}

// SandboxPolicy says what a sandboxed child may do. Reading and executing
// are never restricted (a child can read ~/.ssh and print it); writing,
// the network, other processes and terminals are.
//
// Programs need somewhere to write more often than one expects: a
// temporary directory (point TMPDIR at a writable root), build and package
// caches (~/.cache/go-build, ~/.npm). Add what the commands need. On
// Linux the child gets a private /dev/shm of ShmSize bytes; on macOS POSIX
// shared memory needs no root.
type SandboxPolicy struct {
	// WritableRoots are the directories (and everything below them), or
	// single files, the child may create, change, rename and delete;
	// everything else is read-only, metadata included, except the terminal
	// and the few device files every program writes (/dev/null, /dev/tty,
	// ...). Relative paths are taken from the working directory when
	// NewSandbox runs; each must exist, and a symlink is resolved then.
	// None leaves the child nothing to write.
	WritableRoots []string
	// AllowNetwork lets the child use the network, and on Linux Unix
	// sockets by path (Docker's, an SSH agent's). False cuts both off: on
	// Linux the child gets a network namespace of its own whose loopback
	// works (a server it starts on 127.0.0.1 is reachable to it) and
	// cannot create Unix sockets (socketpairs of stream and seqpacket
	// type still work) nor any but IPv4, IPv6 and netlink ones (no
	// vsock); on macOS every network operation is refused,
	// loopback and Unix sockets included. Either way nothing outside the
	// child, the host's loopback included, is reachable.
	AllowNetwork bool
	// Env names the environment variables the child may inherit, from the
	// host and from Options.Env alike; a name ending in "*" stands for
	// every name that starts with the rest. Nil means DefaultSandboxEnv;
	// an empty, non-nil list passes nothing but TERM, which names the
	// session's terminal (xterm-256color) and always passes. Everything
	// else (API keys, SSH_AUTH_SOCK, cloud credentials) stays with the
	// host.
	Env []string
	// ShmSize bounds the child's private /dev/shm, in bytes, on Linux
	// (macOS has no such file system); 0 means DefaultShmSize. The kernel
	// would otherwise give each sandbox half of the machine's memory.
	ShmSize int64
}

// DefaultShmSize is the size of a sandboxed child's /dev/shm when
// SandboxPolicy.ShmSize is 0: 64 MiB, as Docker gives a container.
const DefaultShmSize = 64 << 20

// shmSize applies ShmSize's default; a negative size is ErrInvalid.
func shmSize(n int64) (int64, error) {
	switch {
	case n < 0:
		return 0, errorf(ErrInvalid, "sandbox: ShmSize %d is negative", n)
	case n == 0:
		return DefaultShmSize, nil
	}
	return n, nil
}

// DefaultSandboxEnv is what a sandboxed child inherits when
// SandboxPolicy.Env is nil: what programs need to find themselves, their
// user's files and a locale, and nothing that grants access.
var DefaultSandboxEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM",
	"LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR"}

// sandboxEnv keeps the entries of env whose names allow lists (nil:
// DefaultSandboxEnv), and TERM: the session's terminal is what it is
// whatever the list says, and without it programs take it for a dumb one.
func sandboxEnv(env, allow []string) []string {
	if allow == nil {
		allow = DefaultSandboxEnv
	}
	out := []string{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "TERM" {
			out = append(out, kv)
			continue
		}
		for _, a := range allow {
			if prefix, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, prefix) || a == name {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// statusMapper is the seam for a sandbox whose launcher passes a signal
// death on as an exit status (bubblewrap exits 128+N): reap lets it turn
// the status back into the signal.
type statusMapper interface {
	childStatus(st ExitStatus) ExitStatus
}

// threadStarter is the seam for a sandbox that starts the child itself:
// startSession starts the child through startOnThread when Options.Sandbox
// implements it, after Prepare. The Linux sandbox starts from a thread
// that outlives the child (bubblewrap dies with the thread that forked
// it) and waits until its helper reports the child confined.
type threadStarter interface {
	// startOnThread runs start, which starts cmd, and returns start's
	// error or the sandbox's. When it fails after the child started, it
	// has killed and reaped the child. It refuses a cmd its own Prepare
	// has not seen.
	startOnThread(cmd *exec.Cmd, start func() error) error
}

// policyRoots returns the writable roots as clean absolute paths, each
// checked to exist.
func policyRoots(roots []string) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "" {
			return nil, errorf(ErrInvalid, "sandbox: a writable root is an empty path")
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, errorf(ErrInvalid, "sandbox: writable root %q: %v", r, err)
		}
		if _, err := os.Stat(abs); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, errorf(ErrInvalid, "sandbox: writable root %q: %v", r, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// describeRoots lists the writable roots for a sandbox's String.
func describeRoots(roots []string) string {
	if len(roots) == 0 {
		return "nothing"
	}
	return strings.Join(roots, ", ")
}
