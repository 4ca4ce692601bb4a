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
// are never restricted; writing and the network are.
//
// Programs need somewhere to write more often than one expects: a
// temporary directory (point TMPDIR at a writable root), build and package
// caches (~/.cache/go-build, ~/.npm), POSIX shared memory (/dev/shm, for
// Python's multiprocessing and browsers). Add what the commands need.
type SandboxPolicy struct {
	// WritableRoots are the directories (and everything below them), or
	// single files, the child may create, change, rename and delete;
	// everything else is read-only, except the terminal and the few device
	// files every program writes (/dev/null, /dev/tty, ...). Relative paths
	// are taken from the working directory when NewSandbox runs; each must
	// exist. None leaves the child nothing to write.
	WritableRoots []string
	// AllowNetwork lets the child use the network. False cuts it off: on
	// Linux the child gets a network namespace of its own, whose loopback
	// works (a server it starts on 127.0.0.1 is reachable to it) when the
	// host may create network namespaces (it has CAP_SYS_ADMIN, as root
	// does) and is down otherwise; on macOS every network operation is
	// refused, loopback and Unix sockets included. Either way nothing
	// outside the child, the host's loopback included, is reachable.
	AllowNetwork bool
}

// threadStarter is the seam for a sandbox that confines the thread that
// starts the child rather than the command: os/exec forks from the calling
// thread, and the child inherits what the kernel attached to that thread
// (a Landlock domain, a network namespace). startSession starts the child
// through startOnThread when Options.Sandbox implements it, after Prepare.
type threadStarter interface {
	// startOnThread runs start, which starts cmd, on a thread confined for
	// it, and returns start's error. It refuses a cmd its own Prepare has
	// not seen.
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
