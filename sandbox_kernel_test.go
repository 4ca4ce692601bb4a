//go:build linux || darwin

package agentpty

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestSandboxWithoutKernelSupport runs NewSandbox in a copy of this test
// process whose kernel interface a seccomp filter has cut down, so the
// errors for kernels without Landlock or namespaces are checked on any
// Linux machine, this one included.
func TestSandboxWithoutKernelSupport(t *testing.T) {
	if scenario := os.Getenv("AGENTPTY_TEST_SECCOMP"); scenario != "" {
		withoutKernelSupport(t, scenario)
		return
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the seccomp filter here is written for Linux on amd64 and arm64")
	}
	for _, scenario := range []string{"no-landlock", "landlock-off", "no-namespaces", "landlock-lost"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, must(os.Executable()), "-test.v", "-test.count=1",
				"-test.run", "^TestSandboxWithoutKernelSupport$")
			cmd.Env = append(os.Environ(), "AGENTPTY_TEST_SECCOMP="+scenario)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}

func withoutKernelSupport(t *testing.T, scenario string) {
	var errno syscall.Errno
	switch scenario {
	case "no-landlock":
		errno = syscall.ENOSYS // the kernel has no such system call
	case "landlock-off":
		errno = syscall.EOPNOTSUPP // built in, not enabled at boot
	case "no-namespaces":
		errno = syscall.EPERM
	case "landlock-lost":
		// The kernel refuses at Start what it allowed to NewSandbox: the
		// start fails, and nothing runs.
		sb, err := NewSandbox(SandboxPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		if err := seccompDeny(false, syscall.ENOSYS); err != nil {
			t.Fatalf("seccomp: %v", err)
		}
		marker := filepath.Join(t.TempDir(), "ran")
		m := NewManager(Options{Sandbox: sb, Shell: sandboxShell})
		defer m.Close()
		_, err = m.Start(context.Background(), StartRequest{Command: "touch " + marker, WaitMS: ms(0)})
		if err == nil || !strings.Contains(err.Error(), "sandbox: landlock_create_ruleset: function not implemented") {
			t.Errorf("Start: %v; want the sandbox's failure", err)
		}
		if _, err := os.Stat(marker); err == nil || len(m.List()) != 0 {
			t.Errorf("the command ran, or a session is left, although the sandbox failed")
		}
		t.Logf("Start: %v", err)
		return
	}
	if err := seccompDeny(scenario == "no-namespaces", errno); err != nil {
		t.Fatalf("seccomp: %v", err)
	}
	sb, err := NewSandbox(SandboxPolicy{})
	switch scenario {
	case "no-landlock", "landlock-off":
		if err == nil {
			t.Fatalf("NewSandbox without Landlock: %v", sb)
		}
		checkUnsupported(t, err)
		want := map[string]string{
			"no-landlock":  "landlock is not enabled in this kernel (landlock_create_ruleset: function not implemented; it needs Linux 5.13",
			"landlock-off": "landlock is not enabled in this kernel (landlock_create_ruleset: operation not supported; it is built in but off: add landlock to the lsm= boot parameter)",
		}[scenario]
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewSandbox: %v\nwant it to say %q", err, want)
		}
		t.Logf("NewSandbox: %v", err)
	case "no-namespaces":
		// Every sandbox needs namespaces (bubblewrap's mounts and PID
		// namespace), network or not.
		if err == nil {
			t.Fatalf("NewSandbox succeeded where no namespace can be made: %v", sb)
		}
		checkUnsupported(t, err)
		if want := "sandbox: bwrap: "; !strings.Contains(err.Error(), want) {
			t.Errorf("NewSandbox: %v\nwant bubblewrap's own message, after %q", err, want)
		}
		t.Logf("NewSandbox: %v", err)
	}
}

// seccompDeny makes every thread of this process fail landlock_create_ruleset
// with errno, or, with namespaces, unshare and clone with any CLONE_NEW* flag.
// The numbers are Linux's for amd64 and arm64; the package syscall has
// them for Linux only, and this file builds on macOS too.
func seccompDeny(namespaces bool, errno syscall.Errno) error {
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	type sockFprog struct {
		n      uint16
		filter *sockFilter
	}
	nr := map[string]struct{ arch, prctl, seccomp, unshare, clone uint32 }{
		"amd64": {0xc000003e, 157, 317, 272, 56},
		"arm64": {0xc00000b7, 167, 277, 97, 220},
	}[runtime.GOARCH]
	const (
		ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
		retAllow, retErrno = 0x7fff0000, 0x00050000
		// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
		landlockCreateRuleset, cloneNewAny = 444, 0x7e020000
	)
	allow, deny := sockFilter{ret, 0, 0, retAllow}, sockFilter{ret, 0, 0, retErrno | uint32(errno)}
	prog := []sockFilter{
		{ld, 0, 0, 4}, // arch
		{jeq, 0, 2, nr.arch},
		{ld, 0, 0, 0}, // syscall number
		{jeq, 1, 0, landlockCreateRuleset},
		allow,
		deny,
	}
	if namespaces {
		prog = []sockFilter{
			{ld, 0, 0, 4},
			{jeq, 0, 5, nr.arch},
			{ld, 0, 0, 0},
			{jeq, 4, 0, nr.unshare},
			{jeq, 0, 2, nr.clone},
			{ld, 0, 0, 16}, // clone's flags (the low half of the first argument)
			{jset, 1, 0, cloneNewAny},
			allow,
			deny,
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const prSetNoNewPrivs, seccompSetModeFilter, seccompFilterFlagTsync = 38, 1, 1
	if _, _, e := syscall.RawSyscall(uintptr(nr.prctl), prSetNoNewPrivs, 1, 0); e != 0 {
		return e
	}
	fprog := sockFprog{uint16(len(prog)), &prog[0]}
	if _, _, e := syscall.RawSyscall(uintptr(nr.seccomp), seccompSetModeFilter, seccompFilterFlagTsync,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}
