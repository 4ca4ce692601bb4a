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

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/testkit"
)

// sandboxShell runs commands without the login profile: these tests are
// about the sandbox, and a profile that writes outside the roots (pyenv
// rehash) would only add noise.
var sandboxShell = []string{"bash", "--noprofile", "--norc", "-c"}

// needKernel skips a test that needs what this kernel lacks, or fails it
// when AGENTPTY_REQUIRE=all asks for every feature.
func needKernel(t *testing.T, err error) {
	t.Helper()
	testkit.Lacks(t, "there is no kernel sandbox here: %v", err)
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
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// The whole 30 s: an attack script runs many programs, each slow to start on a loaded machine.
	res, err := m.Start(ctx, StartRequest{Command: command, Cols: 100, Rows: 30, WaitFor: marker, WaitMS: Millis(30000)})
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
	testkit.Parallel(t)
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
