//go:build darwin

package agentpty

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sandboxExec is Seatbelt's launcher, by its absolute path: one found
// through PATH could be anything.
const sandboxExec = "/usr/bin/sandbox-exec"

// NewSandbox returns a Sandbox the kernel enforces on every child it
// starts, or an error wrapping ErrUnsupported that says what is missing:
// Start never runs a child unconfined.
//
// On macOS the child runs under Seatbelt (sandbox-exec) with a profile
// that allows everything except writing outside p.WritableRoots and the
// terminal's device files (/dev/null, /dev/tty, /dev/ttysN, ...) and,
// without p.AllowNetwork, any network use, loopback and Unix sockets
// included. NewSandbox runs /usr/bin/true under the profile once, so a
// host that is itself sandboxed (where sandbox-exec cannot apply a profile)
// gets the error here rather than at every Start.
//
// Paths reach the profile as parameters (-D), never as text inside it,
// so no path can change the profile.
func NewSandbox(p SandboxPolicy) (Sandbox, error) {
	roots, err := policyRoots(p.WritableRoots)
	if err != nil {
		return nil, err
	}
	if _, err := shmSize(p.ShmSize); err != nil {
		return nil, err
	}
	// Seatbelt matches the path a file resolves to (/tmp is /private/tmp,
	// $TMPDIR is under /private/var), so a root is given both ways.
	var paths []string
	for _, r := range roots {
		paths = append(paths, r)
		if real, err := filepath.EvalSymlinks(r); err == nil && real != r {
			paths = append(paths, real)
		}
	}
	if _, err := os.Stat(sandboxExec); err != nil {
		return nil, errorf(ErrUnsupported, "sandbox: seatbelt's launcher is missing (%v)", err)
	}
	s := &seatbeltSandbox{roots: roots, allowNet: p.AllowNetwork, env: p.Env, args: seatbeltArgs(paths, p.AllowNetwork)}
	probe := exec.Command(sandboxExec, append(append([]string(nil), s.args...), "--", "/usr/bin/true")...)
	if out, err := probe.CombinedOutput(); err != nil {
		return nil, errorf(ErrUnsupported, "sandbox: %s cannot apply the profile here (%v: %s)", sandboxExec, err, bytes.TrimSpace(out))
	}
	return s, nil
}

type seatbeltSandbox struct {
	roots    []string
	allowNet bool
	env      []string // SandboxPolicy.Env
	args     []string // sandbox-exec's options: the profile and its parameters
}

// Prepare makes the command run under sandbox-exec, with only the
// environment the policy allows.
func (s *seatbeltSandbox) Prepare(cmd *exec.Cmd) error {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = sandboxEnv(env, s.env)
	args := append([]string{sandboxExec}, s.args...)
	args = append(args, "--", cmd.Path)
	if len(cmd.Args) > 1 {
		args = append(args, cmd.Args[1:]...)
	}
	cmd.Path, cmd.Args = sandboxExec, args
	return nil
}

// seatbeltArgs returns sandbox-exec's options for a profile in which the
// paths, and nothing else but the terminal's devices, are writable.
func seatbeltArgs(paths []string, allowNet bool) []string {
	var b strings.Builder
	// The last rule that matches decides: everything is allowed, then
	// writes are denied, then writes to the roots allowed again.
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*)\n(allow file-write*\n")
	params := make([]string, 0, len(paths))
	for i, p := range paths {
		fmt.Fprintf(&b, "  (subpath (param \"WRITABLE_ROOT_%d\"))\n", i)
		params = append(params, fmt.Sprintf("-DWRITABLE_ROOT_%d=%s", i, p))
	}
	b.WriteString(`  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/random") (literal "/dev/urandom")
  (literal "/dev/tty") (literal "/dev/ptmx") (literal "/dev/dtracehelper")
  (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/[0-9]+$"))
`)
	if !allowNet {
		b.WriteString("(deny network*)\n")
	}
	return append([]string{"-p", b.String()}, params...)
}

// String describes the confinement, for logs.
func (s *seatbeltSandbox) String() string {
	network := "none"
	if s.allowNet {
		network = "the host's"
	}
	return fmt.Sprintf("seatbelt; writable: %s; network: %s", describeRoots(s.roots), network)
}
