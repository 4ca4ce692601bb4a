//go:build linux || darwin

package agentpty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sandboxShell runs commands without the login profile: these tests are
// about the sandbox, and a profile that writes outside the roots (pyenv
// rehash) would only add noise.
var sandboxShell = []string{"bash", "--noprofile", "--norc", "-c"}

// needKernel skips a test that needs what this kernel lacks, or fails it
// when AGENTPTY_REQUIRE=all asks for every feature.
func needKernel(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("AGENTPTY_REQUIRE") == "all" {
		t.Fatalf("AGENTPTY_REQUIRE=all, but there is no kernel sandbox here: %v", err)
	}
	t.Skipf("skipped: no kernel sandbox here (set AGENTPTY_REQUIRE=all to fail instead): %v", err)
}

// newTestSandbox builds a sandbox or skips the test with NewSandbox's
// reason, after checking that the reason is a proper one.
func newTestSandbox(t *testing.T, p SandboxPolicy) Sandbox {
	t.Helper()
	sb, err := NewSandbox(p)
	if err != nil {
		checkUnsupported(t, err)
		needKernel(t, err)
	}
	t.Logf("sandbox: %v", sb)
	return sb
}

// checkUnsupported checks an error from NewSandbox on a system that
// cannot confine: ErrUnsupported, and a message that says what is missing.
func checkUnsupported(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("NewSandbox: %v; want an error wrapping ErrUnsupported", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "agentpty: unsupported on this platform: ") {
		t.Errorf("NewSandbox error %q does not start with ErrUnsupported's text", msg)
	}
	if !strings.Contains(msg, "landlock") && !strings.Contains(msg, "namespace") && !strings.Contains(msg, "sandbox-exec") &&
		!strings.Contains(msg, "seatbelt") && !strings.Contains(msg, "bwrap") && !strings.Contains(msg, "bubblewrap") {
		t.Errorf("NewSandbox error %q does not name the missing feature", msg)
	}
}

// sandboxed starts command in a new manager with sb and waits for marker.
// The manager is closed at the end of the test, with the leak checks.
func sandboxed(t *testing.T, sb Sandbox, command, marker string) (*Manager, StartResult) {
	t.Helper()
	m := newManager(t, Options{Sandbox: sb, Shell: sandboxShell})
	res, err := startIn(m, command, marker)
	if err != nil {
		t.Fatal(err)
	}
	return m, res
}

func startSandboxed(sb Sandbox, command, marker string) (*Manager, StartResult, error) {
	m := NewManager(Options{Sandbox: sb, Shell: sandboxShell})
	res, err := startIn(m, command, marker)
	return m, res, err
}

func startIn(m *Manager, command, marker string) (StartResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Start(ctx, StartRequest{Command: command, Cols: 100, Rows: 30, WaitFor: marker})
	if err != nil {
		return res, fmt.Errorf("Start(%q): %v", command, err)
	}
	if !res.Matched {
		return res, fmt.Errorf("Start(%q): %q never appeared; output:\n%s", command, marker, res.Output)
	}
	return res, nil
}

func wantLines(t *testing.T, output string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(output, l) {
			t.Errorf("output lacks %q:\n%s", l, output)
		}
	}
}

// landlockVersion asks the kernel directly, not through NewSandbox. The
// syscall has the same number on every Linux architecture.
func landlockVersion() (int, syscall.Errno) {
	const sysLandlockCreateRuleset, versionFlag = 444, 1
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, versionFlag)
	return int(v), errno
}

// TestSandboxSupport checks NewSandbox against what the kernel itself
// says: a clear ErrUnsupported without Landlock, a sandbox with it.
func TestSandboxSupport(t *testing.T) {
	sb, err := NewSandbox(SandboxPolicy{AllowNetwork: true})
	if runtime.GOOS != "linux" {
		if err != nil {
			checkUnsupported(t, err)
			needKernel(t, err)
		}
		t.Logf("sandbox: %v", sb)
		return
	}
	abi, errno := landlockVersion()
	switch {
	case errno == syscall.ENOSYS || errno == syscall.EOPNOTSUPP:
		t.Logf("this kernel has no Landlock (%v): checking the error", errno)
		if err == nil {
			t.Fatalf("NewSandbox succeeded on a kernel without Landlock: %v", sb)
		}
		checkUnsupported(t, err)
		if !strings.Contains(err.Error(), "landlock is not enabled in this kernel (") {
			t.Errorf("error %q does not say that Landlock is not enabled", err)
		}
		needKernel(t, err)
	case errno != 0:
		t.Fatalf("landlock_create_ruleset: %v", errno)
	case abi < 3:
		t.Logf("this kernel has Landlock ABI %d, too old to confine truncation: checking the error", abi)
		if err == nil {
			t.Fatalf("NewSandbox succeeded with Landlock ABI %d: %v", abi, sb)
		}
		checkUnsupported(t, err)
		if !strings.Contains(err.Error(), fmt.Sprintf("landlock ABI %d", abi)) {
			t.Errorf("error %q does not name the ABI", err)
		}
		needKernel(t, err)
	default:
		t.Logf("this kernel has Landlock ABI %d: the confinement tests run", abi)
		if err != nil {
			t.Fatalf("NewSandbox on a kernel with Landlock ABI %d: %v", abi, err)
		}
		if want := fmt.Sprintf("landlock ABI %d", abi); !strings.Contains(fmt.Sprint(sb), want) {
			t.Errorf("sandbox %q does not say it uses %s", sb, want)
		}
	}
}

func TestSandboxInvalidRoots(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		roots []string
		want  string
	}{
		{[]string{missing}, fmt.Sprintf("writable root %q: no such file or directory", missing)},
		{[]string{""}, "empty path"},
	} {
		_, err := NewSandbox(SandboxPolicy{WritableRoots: tc.roots})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("NewSandbox(%q): %v; want ErrInvalid saying %q", tc.roots, err, tc.want)
		}
	}
}

// TestSandboxWritableRoots: the child writes, renames and deletes under
// its root, and can neither create, truncate nor delete anything outside.
func TestSandboxWritableRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{root}, AllowNetwork: true})
	script := fmt.Sprintf(`o=%q r=%q k=%q
try() { if "${@:2}"; then echo "$1: done"; else echo "$1: refused"; fi; }
try outside-create touch "$o/new"
try outside-mkdir mkdir "$o/dir"
try outside-truncate sh -c ': > "$1"' sh "$k"
try outside-truncate2 truncate -s 0 "$k"
try outside-remove rm -f "$k"
try outside-rename mv "$k" "$r/stolen"
try inside-write sh -c 'echo hello > "$1/a"' sh "$r"
try inside-rename sh -c 'mkdir "$1/sub" && mv "$1/a" "$1/sub/b"' sh "$r"
try inside-symlink ln -s sub/b "$r/link"
try inside-truncate truncate -s 2 "$r/sub/b"
try inside-remove rm -r "$r/link" "$r/sub"
echo "== end"`, outside, root, keep)
	_, res := sandboxed(t, sb, script, "== end")
	refusal := "Permission denied"
	if runtime.GOOS == "linux" {
		refusal = "Read-only file system" // the mount, before Landlock
	}
	wantLines(t, res.Output,
		refusal,
		"outside-create: refused", "outside-mkdir: refused", "outside-truncate: refused", "outside-truncate2: refused",
		"outside-remove: refused", "outside-rename: refused",
		"inside-write: done", "inside-rename: done", "inside-symlink: done", "inside-truncate: done", "inside-remove: done")
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious" {
		t.Errorf("the file outside the roots is now %q (%v)", b, err)
	}
	// mv across mounts copies, then cannot remove the original: a copy
	// may be left in the root, which is the child's to write.
	_ = os.Remove(filepath.Join(root, "stolen"))
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(outside, "dir")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the root still holds %v", ents)
	}
}

// TestSandboxTerminal: a sandboxed interactive shell can use its terminal
// as usual, and the host can still resize it and read its modes through
// the master.
func TestSandboxTerminal(t *testing.T) {
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}})
	m, _ := sandboxed(t, sb, `PS1='sbx$ ' exec bash --noprofile --norc -i`, "sbx$ ")
	id := m.List()[0].ID
	s, _ := m.Session(id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(input, waitFor string) string {
		t.Helper()
		res, err := m.Write(ctx, WriteRequest{ID: id, Input: input, Submit: true, WaitFor: waitFor})
		if err != nil {
			t.Fatalf("Write(%q): %v", input, err)
		}
		if !res.Matched {
			t.Fatalf("Write(%q): %q never appeared; output:\n%s", input, waitFor, res.Output)
		}
		return res.Output
	}
	write("stty size", "30 100")
	// The host resizes through the master. (This does
	// what Session.Resize does, minus passing a stack pointer to ioctl as
	// a bare uintptr through creack/pty's Setsize, which now and then sets
	// stale memory.)
	rc, err := masterConn(s)
	if err != nil {
		t.Fatal(err)
	}
	if cerr := rc.Control(func(fd uintptr) {
		err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	}); cerr != nil || err != nil {
		t.Fatalf("TIOCSWINSZ on the master: %v, %v", cerr, err)
	}
	write("stty size", "24 80")
	write(`tty; echo "tty: $?"`, "tty: 0")
	// Markers are split in the typed text, so that its echo cannot match.
	devices := `for d in /dev/null /dev/tty /dev/zero /dev/full; do echo x 2>/dev/null > $d; echo "$d: $?"; done; ` +
		`echo "urandom: $(head -c 8 /dev/urandom | wc -c)"; echo "devi""ces: done"`
	out := write(devices, "devices: done")
	wantLines(t, out, "/dev/null: 0", "/dev/tty: 0", "/dev/zero: 0", "/dev/full: 1", "urandom: 8")
	if runtime.GOOS == "linux" {
		// A terminal of its own: script opens /dev/ptmx and /dev/pts/N.
		out := write(`script -qc 'echo "nested: $(tty)"' /dev/null; echo "scr""ipt: $?"`, "script: 0")
		wantLines(t, out, "nested: /dev/pts/")
	}
	write(`read -rp 'li''ne? ' line; echo "got:$line"`, "line? ")
	write("typed through the sandbox", "got:typed through")
	// The host reads the terminal's modes through the master.
	res, err := m.Write(ctx, WriteRequest{ID: id, Input: `read -rsp 'pass''word: ' pw; echo "pw:${#pw}"`, Submit: true, WaitFor: "password: "})
	if err != nil || !res.Matched || !res.InputHidden {
		t.Errorf("a password prompt is not seen as one: %v, %+v", err, res)
	}
	write("secret", "pw:6")
	if _, err := m.Write(ctx, WriteRequest{ID: id, Input: "exit", Submit: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Wait(ctx); err != nil || st.Code != 0 {
		t.Errorf("exit: %v, %v", st, err)
	}
}

// TestSandboxNetwork: without AllowNetwork nothing on the host, its
// loopback included, is reachable; with it, everything is.
func TestSandboxNetwork(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("AllowNetwork=%v", allow), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}, AllowNetwork: allow})
			script := fmt.Sprintf(`if exec 3<>/dev/tcp/127.0.0.1/%d; then echo "host: connected"; exec 3>&-; else echo "host: refused"; fi
py=$(command -v python3 || echo /usr/bin/python3)
"$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); socket.create_connection(s.getsockname()); print("loopback: works")' 2>/dev/null || echo "loopback: fails"
echo "uid: $(id -u)"
echo "== end"`, port)
			_, res := sandboxed(t, sb, script, "== end")
			desc := fmt.Sprint(sb)
			queued := accepted(t, ln)
			if allow {
				wantLines(t, res.Output, "host: connected", "loopback: works")
				if !queued {
					t.Errorf("the child says it connected, but the host's listener has no connection")
				}
				return
			}
			wantLines(t, res.Output, "host: refused")
			if queued {
				t.Errorf("the host's listener got a connection from a child without network")
			}
			if strings.Contains(desc, "loopback up") {
				wantLines(t, res.Output, "loopback: works", fmt.Sprintf("uid: %d", os.Getuid()))
			} else {
				wantLines(t, res.Output, "loopback: fails")
			}
		})
	}
}

// accepted reports whether a connection is waiting on ln, without waiting.
func accepted(t *testing.T, ln net.Listener) bool {
	t.Helper()
	rc, err := ln.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := false
	if err := rc.Control(func(fd uintptr) {
		if nfd, _, err := syscall.Accept(int(fd)); err == nil {
			got = true
			syscall.Close(nfd)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSandboxCapabilities: even a root host's child holds no capability
// and cannot gain one.
func TestSandboxCapabilities(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("capabilities are Linux's")
	}
	sb := newTestSandbox(t, SandboxPolicy{})
	// tr turns /proc's tabs into single spaces; settled text would render
	// them as the columns a terminal shows.
	_, res := sandboxed(t, sb, `grep -E '^(Cap(Inh|Prm|Eff|Amb)|NoNewPrivs):' /proc/self/status | tr '\t' ' '; echo "== end"`, "== end")
	wantLines(t, res.Output, "CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
		"CapAmb: 0000000000000000", "NoNewPrivs: 1")
}

// TestSandboxHostUnconfined: confining children leaves the host and all
// of its threads as they were.
func TestSandboxHostUnconfined(t *testing.T) {
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{t.TempDir()}})
	// Many starts at once, each from a thread of its own that ends with
	// the child: none of the host's threads may come out confined.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// It waits for a line, so that it is still running when Start
			// returns, then exits by itself.
			m, res, err := startSandboxed(sb, `echo "== ready"; read -r _`, "== ready")
			if err != nil {
				m.Close()
				t.Error(err)
				return
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := m.Write(ctx, WriteRequest{ID: res.ID, Submit: true, WaitMS: ms(30000)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	// Every goroutine below holds a thread of its own, so the writes run
	// on as many threads as the runtime will make.
	outside := t.TempDir()
	errs := make(chan error, 64)
	for i := range cap(errs) {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs <- os.WriteFile(filepath.Join(outside, fmt.Sprint(i)), []byte("host"), 0o644)
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("the host cannot write outside the roots after a sandboxed start: %v", err)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	net0, _ := os.Readlink("/proc/self/ns/net")
	tasks, _ := filepath.Glob("/proc/self/task/*")
	for _, task := range tasks {
		st, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue // the thread has just ended
		}
		if strings.Contains(string(st), "NoNewPrivs:\t1") {
			t.Errorf("host thread %s has no_new_privs set", filepath.Base(task))
		}
		if ns, err := os.Readlink(filepath.Join(task, "ns/net")); err == nil && ns != net0 {
			t.Errorf("host thread %s is in network namespace %s, not %s", filepath.Base(task), ns, net0)
		}
	}
}

type failingSandbox struct{ err error }

func (f failingSandbox) Prepare(*exec.Cmd) error { return f.err }

// wrappedSandbox hides the sandbox's start seam, as a host's logging
// decorator would.
type wrappedSandbox struct{ Sandbox }

// TestSandboxPrepareFails: a sandbox that cannot confine stops the start,
// and nothing runs.
func TestSandboxPrepareFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	boom := errors.New("no confinement today")
	try := func(sb Sandbox) error {
		m := NewManager(Options{Sandbox: sb, Shell: sandboxShell})
		defer m.Close()
		_, err := m.Start(ctx, StartRequest{Command: "touch " + marker, WaitMS: ms(0)})
		if n := len(m.List()); n != 0 {
			t.Errorf("a failed start left %d sessions", n)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran although the start failed")
		}
		return err
	}
	if err := try(failingSandbox{boom}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "sandbox: ") {
		t.Errorf("Start with a failing Prepare: %v; want it wrapped and attributed to the sandbox", err)
	}

	sb, err := NewSandbox(SandboxPolicy{})
	if err != nil {
		checkUnsupported(t, err)
		needKernel(t, err)
	}
	if _, ok := sb.(threadStarter); !ok {
		return // Prepare alone confines; wrapping is harmless
	}
	if err := try(wrappedSandbox{sb}); err == nil || !strings.Contains(err.Error(), "not inside another Sandbox") {
		t.Errorf("Start with a wrapped sandbox: %v; want a refusal", err)
	}
	cmd := exec.Command("touch", marker)
	if err := sb.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err == nil {
		t.Errorf("a prepared command started outside the sandbox's start ran")
	}
}

// TestSandboxUnprivileged runs the confinement tests again as nobody, the
// way a host without privileges runs them: through a user namespace.
func TestSandboxUnprivileged(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs Linux and root, to become nobody; the other tests already ran unprivileged")
	}
	if os.Getenv("AGENTPTY_TEST_NOBODY") != "" {
		t.Skip("already nobody")
	}
	if _, err := NewSandbox(SandboxPolicy{}); err != nil {
		needKernel(t, err)
	}
	dir, bin := copyTestBinary(t, "agentpty-nobody-", 0o777)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.v", "-test.count=1",
		"-test.run", "^TestSandbox(Support|WritableRoots|Terminal|Network|Capabilities|HostUnconfined|PrepareFails|"+
			"SignalHost|OtherTerminal|MetadataOutsideRoots|HostDescriptor|UnixSocket|Env|ExitStatus|RefusedCalls|"+
			"EnvTerm|NestedRootSwap|UserNamespace|ShmSize|HelperForged)$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTPTY_TEST_NOBODY=1", "AGENTPTY_REQUIRE=all", "HOME="+dir, "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as nobody failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "; in a user namespace") {
		t.Errorf("as nobody the sandbox did not use a user namespace:\n%s", out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("tests skipped as nobody:\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

// copyTestBinary copies this test binary into a new directory of mode
// perm outside the test's own temporary one (which nobody cannot reach),
// removed at the end of the test.
func copyTestBinary(t *testing.T, prefix string, perm os.FileMode) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin = filepath.Join(dir, "agentpty.test")
	if err := copyFile(bin, must(os.Executable())); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

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
try proc-fd sh -c 'ls -l /proc/*/fd 2>/dev/null | grep -q "$1"' sh "$n"
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
	wantLines(t, ctl.Output, "keystrokes", "read: done", "write: done", "stty: done")
	if tio, err := unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios); err != nil || tio.Lflag&unix.ECHO != 0 {
		t.Errorf("the unconfined control did not turn the other terminal's echo off (%v)", err)
	}
}

// TestSandboxMetadataOutsideRoots: a file outside the roots keeps its
// mode, times, owner and extended attributes, also through a symlink the
// child plants in its root.
func TestSandboxMetadataOutsideRoots(t *testing.T) {
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

// TestSandboxEnv: the child inherits only the variables the policy names
// (by default none that grant access), never the helper's own.
func TestSandboxEnv(t *testing.T) {
	t.Setenv("AGENTPTY_TEST_SECRET", "s3cret")
	t.Setenv("LC_AGENTPTY_TEST", "fr")
	script := `echo "secret=${AGENTPTY_TEST_SECRET:-unset} home=${HOME+set} lc=${LC_AGENTPTY_TEST:-unset} helper=${AGENTPTY_SANDBOX:-unset}"; echo "== end"`
	sb := newTestSandbox(t, SandboxPolicy{})
	got, ctl := attack(t, sb, script)
	wantLines(t, ctl, "secret=s3cret")
	wantLines(t, got, "secret=unset home=set lc=fr helper=unset")
	sb = newTestSandbox(t, SandboxPolicy{Env: []string{"AGENTPTY_TEST_*"}})
	_, res := sandboxed(t, sb, script, "== end")
	wantLines(t, res.Output, "secret=s3cret home= lc=unset helper=unset")
}

// TestSandboxEnvTerm: the session's TERM reaches a sandboxed child
// whatever SandboxPolicy.Env lists, as it reaches an unconfined one;
// without it programs take the terminal for a dumb one.
func TestSandboxEnvTerm(t *testing.T) {
	script := `echo "term=${TERM:-unset}"; echo "== end"`
	for _, env := range [][]string{{"PATH", "HOME"}, {}} {
		got, ctl := attack(t, newTestSandbox(t, SandboxPolicy{Env: env}), script)
		wantLines(t, ctl, "term=xterm-256color")
		wantLines(t, got, "term=xterm-256color")
	}
}

// TestSandboxExitStatus: a sandboxed command killed by a signal is
// reported with that signal, and an exit code as it is. On Linux a command
// that exits with 128+N itself is reported as killed by signal N, as
// documented: bubblewrap's status cannot tell the two apart.
func TestSandboxExitStatus(t *testing.T) {
	sb := newTestSandbox(t, SandboxPolicy{})
	m := newManager(t, Options{Sandbox: sb, Shell: sandboxShell})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		command   string
		want      ExitStatus
		linuxOnly bool
	}{
		{"exit 3", ExitStatus{Code: 3}, false},
		{"kill -SEGV $$", ExitStatus{Code: -1, Signal: "SIGSEGV"}, false},
		{"kill -TERM $$", ExitStatus{Code: -1, Signal: "SIGTERM"}, false},
		{"exit 130", ExitStatus{Code: -1, Signal: "SIGINT"}, true},
	} {
		if tc.linuxOnly && runtime.GOOS != "linux" {
			continue
		}
		res, err := m.Start(ctx, StartRequest{Command: tc.command})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := m.Session(res.ID)
		if st, err := s.Wait(ctx); err != nil || st.Code != tc.want.Code || st.Signal != tc.want.Signal {
			t.Errorf("%s: %+v, %v; want %+v", tc.command, st, err, tc.want)
		}
	}
}

// TestSandboxInteractive: what works on a terminal works in the sandbox:
// job control in an interactive shell, Ctrl-C to a command that is not
// one, python3, and vim writing under a root.
func TestSandboxInteractive(t *testing.T) {
	need(t, "python3", "vim")
	root := t.TempDir()
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{root}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newManager(t, Options{Sandbox: sb, Shell: sandboxShell})
	start := func(command, waitFor string) string {
		t.Helper()
		res, err := m.Start(ctx, StartRequest{Command: command, WaitFor: waitFor, Cwd: root})
		if err != nil || !res.Matched {
			t.Fatalf("Start(%q): %v, %+v", command, err, res)
		}
		return res.ID
	}
	write := func(id, input, waitFor string) string {
		t.Helper()
		req := WriteRequest{ID: id, Input: input, WaitFor: waitFor}
		if waitFor == "" {
			req.WaitMS = ms(300) // only typing: what comes next is waited for
		}
		res, err := m.Write(ctx, req)
		if err != nil || waitFor != "" && !res.Matched {
			s, _ := m.Session(id)
			t.Fatalf("Write(%q): %q never appeared (%v); output:\n%s\nscreen:\n%s", input, waitFor, err, res.Output, s.Screen().Text())
		}
		return res.Output
	}
	sh := start(`PS1='sbx$ ' exec bash --noprofile --norc -i`, "sbx$ ")
	write(sh, `test -t 0 && echo "termi""nal"\r`, "terminal")
	write(sh, `sleep 100 &\r`, "sbx$ ")
	write(sh, `jobs\r`, "Running")
	// tr answers what it reads in capitals, which its echo is not: each
	// key below is typed once the job holds the terminal.
	write(sh, `tr a-z A-Z\r`, "")
	write(sh, `ready\r`, "READY")
	write(sh, `\x1a`, "Stopped")
	write(sh, `fg %2\r`, "tr a-z A-Z")
	write(sh, `ping\r`, "PING")
	write(sh, `\x03`, "sbx$ ")
	write(sh, `echo "status=$?"\r`, "status=130")
	write(sh, `kill %1; wait; echo "do""ne"\r`, "done")

	// A signal the host sends the foreground group reaches the command,
	// not only the launcher in the same group.
	// The loops wake every 50 ms: a signal that lands between the marker
	// and the first blocking call would otherwise wait for input (a race
	// in bash and python themselves, wide on a loaded machine).
	trap := start(`trap 'echo caught' INT; trap 'echo usr1' USR1; echo ready; while :; do read -r -t 0.05 x; done`, "ready")
	write(trap, `\x03`, "caught")
	ts, _ := m.Session(trap)
	if err := ts.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	write(trap, "", "usr1")

	py := start("python3 -q", ">>> ")
	write(py, `2**10\r`, "1024")
	pyint := start(`python3 -c 'import time
print("re" "ady", flush=True)
while True: time.sleep(0.05)'`, "ready")
	write(pyint, `\x03`, "KeyboardInterrupt")

	vim := start("vim -u NONE -i NONE -N note.txt", "note.txt")
	write(vim, `ihello from vim\e:wq\r`, "")
	s, _ := m.Session(vim)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if st, err := s.Wait(wctx); err != nil || st.Code != 0 {
		t.Errorf("vim: %+v, %v; screen:\n%s", st, err, s.Screen().Text())
	}
	if b, err := os.ReadFile(filepath.Join(root, "note.txt")); err != nil || string(b) != "hello from vim\n" {
		t.Errorf("vim wrote %q, %v", b, err)
	}
}

// BenchmarkSandboxStart measures what the sandbox adds to a start: the
// same command, started and run to its exit, bare and sandboxed (with and
// without a network namespace, the costliest part).
func BenchmarkSandboxStart(b *testing.B) {
	sb, err := NewSandbox(SandboxPolicy{WritableRoots: []string{b.TempDir()}})
	if err != nil {
		b.Skip(err)
	}
	withNet, err := NewSandbox(SandboxPolicy{WritableRoots: []string{b.TempDir()}, AllowNetwork: true})
	if err != nil {
		b.Skip(err)
	}
	for _, bc := range []struct {
		name string
		sb   Sandbox
	}{{"bare", nil}, {"sandboxed", sb}, {"sandboxed-with-network", withNet}} {
		b.Run(bc.name, func(b *testing.B) {
			m := NewManager(Options{Sandbox: bc.sb, Shell: sandboxShell})
			defer m.Close()
			ctx := context.Background()
			for b.Loop() {
				res, err := m.Start(ctx, StartRequest{Command: "true", WaitMS: ms(0)})
				if err != nil {
					b.Fatal(err)
				}
				s, _ := m.Session(res.ID)
				if _, err := s.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Kill(ctx, res.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
