//go:build linux

package agentpty

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSandboxRefusedCalls: io_uring (whose socket and file operations no
// seccomp filter sees) and the kernel keyrings (the host user's secrets)
// are refused in the sandbox, and work unconfined.
func TestSandboxRefusedCalls(t *testing.T) {
	need(t, "python3")
	script := try + fmt.Sprintf(`call() { python3 -c 'import ctypes, sys; sys.exit(eval(sys.argv[1]) < 0)' "$1"; }
try io_uring call 'ctypes.CDLL(None, use_errno=True).syscall(%d, 8, ctypes.create_string_buffer(120))'
try keyctl call 'ctypes.CDLL(None).syscall(%d, 0, -4, 1)'
echo "== end"`, unix.SYS_IO_URING_SETUP, unix.SYS_KEYCTL)
	sb := newTestSandbox(t, SandboxPolicy{})
	got, ctl := attack(t, sb, script)
	wantLines(t, ctl, "io_uring: done", "keyctl: done")
	wantLines(t, got, "io_uring: refused", "keyctl: refused")
}
