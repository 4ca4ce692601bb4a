//go:build linux

package agentpty

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sandbox"
	"github.com/agentpty/agentpty/internal/testkit"
)

// TestSandboxRefusedCalls: io_uring (whose socket and file operations no
// seccomp filter sees) and the kernel keyrings (the host user's secrets)
// are refused in the sandbox, and work unconfined.
func TestSandboxRefusedCalls(t *testing.T) {
	testkit.Parallel(t)
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

// TestSandboxDiesWithHost: when the host process is killed, the sandboxed
// processes die with it, a program that ignores SIGHUP included; the
// unconfined control shows such a program outliving its host.
func TestSandboxDiesWithHost(t *testing.T) {
	if os.Getenv("AGENTPTY_TEST_SANDBOX_HOST") != "" {
		sandboxHost(t)
		return
	}
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			if _, err := NewSandbox(SandboxPolicy{}); err != nil {
				needKernel(t, err)
			}
			host := exec.Command(must(os.Executable()), "-test.run", "^TestSandboxDiesWithHost$")
			host.Env = append(os.Environ(), "AGENTPTY_TEST_SANDBOX_HOST="+strconv.FormatBool(sandboxed))
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			sid := 0
			for sc := bufio.NewScanner(out); sc.Scan(); {
				if v, ok := strings.CutPrefix(sc.Text(), "session "); ok {
					sid, _ = strconv.Atoi(v)
					break
				}
			}
			_ = host.Process.Kill()
			_ = host.Wait()
			if sid == 0 {
				t.Fatal("the host never reported its session")
			}
			tr := proc.NewTracker(sid)
			defer tr.Close()
			defer tr.Signal(syscall.SIGKILL)
			// The sandbox's processes die at once; the control's live on,
			// which a short wait shows.
			wait := 10 * time.Second
			if !sandboxed {
				wait = 2 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err = tr.WaitGone(ctx)
			if sandboxed && err != nil {
				t.Errorf("processes %v of the sandbox outlived the host", tr.Members())
			}
			if !sandboxed && err == nil {
				t.Errorf("the unconfined control died with its host: the test shows nothing")
			}
		})
	}
}

// sandboxHost is the host TestSandboxDiesWithHost kills: it starts a
// program that ignores SIGHUP and reports the session's id.
func sandboxHost(t *testing.T) {
	var sb Sandbox
	if os.Getenv("AGENTPTY_TEST_SANDBOX_HOST") == "true" {
		sb = must(NewSandbox(SandboxPolicy{}))
	}
	m := NewManager(Options{Sandbox: sb, Shell: sandboxShell})
	// No cgroup, whose watchdog would end both: this shows the sandbox's
	// own guarantee (TestContainDieWithParent shows the cgroup's).
	m.containOnce.Do(func() {})
	res, err := m.Start(context.Background(), StartRequest{Command: `trap '' HUP; echo "re""ady"; exec sleep 1000`, WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("%v, %+v", err, res)
	}
	s, _ := m.Session(res.ID)
	fmt.Printf("session %d\n", s.PID())
	time.Sleep(time.Minute) // killed long before
}

// TestSandboxSurvivesThreadExit: threads of the host ending (a goroutine
// that exits locked ends its thread) do not end a sandboxed session,
// although bubblewrap dies with the thread that started it.
func TestSandboxSurvivesThreadExit(t *testing.T) {
	sb := newTestSandbox(t, SandboxPolicy{})
	m, res := sandboxed(t, sb, `echo "re""ady"; read -r line; echo "got $line"`, "ready")
	done := make(chan struct{})
	for range 32 {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			done <- struct{}{}
		}()
	}
	for range 32 {
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "still here", Submit: true, WaitFor: "got still"})
	if err != nil || !w.Matched {
		t.Errorf("the session did not survive threads ending: %v, %+v", err, w)
	}
}

// TestSandboxNestedRootSwap: with one root inside another, a child of a
// session that may write the enclosing root swaps the inner root's
// directory for a symlink to a directory outside every root while other
// sessions start; none of them may write there. A root was checked by
// path and then bound (and given to Landlock) by path, so a swap in
// between bound the outside directory writable; now each root is opened
// once, without following symlinks, and bound and restricted by that
// descriptor. The race is run twice at its exact points (after Prepare,
// and between opening the roots and starting bubblewrap, through the
// start function the sandbox calls), where it always won before, and then
// for real against a child swapping in a loop. The control writes through
// the swapped path unconfined and reaches the outside directory.
func TestSandboxNestedRootSwap(t *testing.T) {
	outer, outside := t.TempDir(), t.TempDir()
	inner := filepath.Join(outer, "b")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(outer, outside)
	if err != nil {
		t.Fatal(err)
	}
	swap := func() {
		t.Helper()
		if err := os.Rename(inner, filepath.Join(outer, "old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, inner); err != nil {
			t.Fatal(err)
		}
	}
	// restore puts the directory back, wherever a swap stopped.
	restore := func() {
		t.Helper()
		if fi, err := os.Lstat(inner); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := os.Remove(inner); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(filepath.Join(outer, "old"), inner); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	// escaped lists (and removes) what reached the outside directory.
	escaped := func() []string {
		ents, _ := os.ReadDir(outside)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			os.Remove(filepath.Join(outside, e.Name()))
		}
		return names
	}
	sb := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{outer, inner}})
	ts := sb.(threadStarter)
	for _, at := range []string{"after-prepare", "at-start"} {
		t.Run(at, func(t *testing.T) {
			fds := openFDs(t)
			cmd := exec.Command("/bin/sh", "-c", `echo pwned > "$1/f"`, "sh", inner)
			if err := sb.Prepare(cmd); err != nil {
				t.Fatal(err)
			}
			start := cmd.Start
			if at == "after-prepare" {
				swap()
			} else {
				start = func() error { swap(); return cmd.Start() }
			}
			err := ts.startOnThread(cmd, start)
			if err == nil {
				err = cmd.Wait()
			}
			restore()
			t.Logf("the start: %v", err)
			if names := escaped(); len(names) != 0 {
				t.Errorf("a sandboxed child wrote %v outside its roots through the swapped root", names)
			}
			if b, err := os.ReadFile(filepath.Join(inner, "f")); err == nil && string(b) != "pwned\n" {
				t.Errorf("the root holds %q", b)
			}
			os.Remove(filepath.Join(inner, "f"))
			goleak.VerifyNone(t) // the start's thread ends once the child has
			if now := openFDs(t); now > fds {
				t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
			}
		})
	}

	// For real: a child that may write outer swaps in a loop while
	// sessions with both roots start and write.
	swapper := newTestSandbox(t, SandboxPolicy{WritableRoots: []string{outer}})
	loop := fmt.Sprintf(`cd %q && exec python3 -c '
import os, sys, time
print("swap" "ping", flush=True)
while True:
    os.rename("b", "old"); os.symlink(sys.argv[1], "b"); time.sleep(0.002)
    os.remove("b"); os.rename("old", "b"); time.sleep(0.002)
' %q`, outer, rel)
	sm, _ := sandboxed(t, swapper, loop, "swapping")
	m := newManager(t, Options{Sandbox: sb, Shell: sandboxShell})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Starts refused at once (the root is a symlink right now) do not
	// count: 40 must get past that to the bind.
	refused := map[string]int{}
	started := 0
	for i := 0; started < 40 && i < 1000; i++ {
		res, err := m.Start(ctx, StartRequest{Command: fmt.Sprintf(`echo pwned > %q/f%d; echo "wro""te"`, inner, i), WaitFor: "wrote"})
		if err != nil {
			_, why, _ := strings.Cut(err.Error(), "sandbox: ")
			why, _, _ = strings.Cut(why, ": ")
			refused[why]++
			if !strings.Contains(err.Error(), "no longer resolves") {
				started++
			}
			continue
		}
		started++
		if _, err := m.Kill(ctx, res.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := sm.Close(); err != nil {
		t.Fatal(err)
	}
	restore()
	t.Logf("%d starts got past the check while the root was being swapped; refused: %v", started, refused)
	if names := escaped(); len(names) != 0 {
		t.Errorf("sandboxed children wrote %v outside their roots through the swapped root", names)
	}

	// The control: the swapped path leads outside.
	swap()
	defer restore()
	_, ctl := sandboxed(t, nil, fmt.Sprintf(`echo pwned > %q/control; echo "== end"`, inner), "== end")
	if _, err := os.Stat(filepath.Join(outside, "control")); err != nil {
		t.Errorf("the unconfined control did not write outside through the swapped root (%v):\n%s", err, ctl.Output)
	}
}

// TestSandboxUserNamespace: a sandboxed child cannot make a user
// namespace, in which it would hold every capability (here: a raw socket
// in a network namespace of its own), by unshare, clone or clone3; the
// unconfined control can. Threads and processes still start (the C
// library falls back from clone3 to clone).
func TestSandboxUserNamespace(t *testing.T) {
	testkit.Parallel(t)
	need(t, "python3", "unshare")
	script := try + fmt.Sprintf(`py() { python3 -c "import ctypes, os, socket, struct, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if libc.unshare(flags): sys.exit(1)
def child(pid):
    if pid == 0: os._exit(0)
    if pid < 0: sys.exit(1)
    os.waitpid(pid, 0)
$1"; }
try unshare py 'unshare(%d)'
try raw-socket py 'unshare(%d); socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)'
try unshare-cmd unshare --user --net true
try clone py 'child(libc.syscall(%d, %d, 0, 0, 0, 0))'
try clone3 py 'child(libc.syscall(%d, ctypes.create_string_buffer(struct.pack("8Q", %d, 0, 0, 0, %d, 0, 0, 0)), 64))'
try threads py 't = threading.Thread(target=print); t.start(); t.join()'
try fork py 'child(os.fork())'
echo "== end"`, unix.CLONE_NEWUSER, unix.CLONE_NEWUSER|unix.CLONE_NEWNET, unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.SIGCHLD, unix.SYS_CLONE3,
		unix.CLONE_NEWUSER, unix.SIGCHLD)
	sb := newTestSandbox(t, SandboxPolicy{})
	got, ctl := attack(t, sb, script)
	wantLines(t, ctl, "unshare: done", "raw-socket: done", "unshare-cmd: done", "clone: done", "clone3: done", "threads: done", "fork: done")
	wantLines(t, got, "unshare: refused", "raw-socket: refused", "unshare-cmd: refused", "clone: refused", "clone3: refused",
		"threads: done", "fork: done")
}

// TestSandboxShmSize: the sandbox's /dev/shm is DefaultShmSize by
// default, not half of the machine's memory, and a child cannot write
// more than the policy's bound into it; the unconfined control writes as
// much to the host's /dev/shm.
func TestSandboxShmSize(t *testing.T) {
	testkit.Parallel(t)
	script := try + `echo "shm: $(($(stat -f -c '%b * %S' /dev/shm)))"
f=/dev/shm/agentpty-shm-test-$$
try fill sh -c 'head -c 2097152 /dev/zero > "$1"' sh "$f"
rm -f "$f"
echo "== end"`
	_, res := sandboxed(t, newTestSandbox(t, SandboxPolicy{}), script, "== end")
	wantLines(t, res.Output, fmt.Sprintf("shm: %d", DefaultShmSize), "fill: done")
	got, ctl := attack(t, newTestSandbox(t, SandboxPolicy{ShmSize: 1 << 20}), script)
	wantLines(t, got, "shm: 1048576", "fill: refused", "No space left on device")
	wantLines(t, ctl, "fill: done")
	if _, err := NewSandbox(SandboxPolicy{ShmSize: -1}); !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), "ShmSize -1") {
		t.Errorf("NewSandbox with a negative ShmSize: %v; want ErrInvalid naming it", err)
	}
}

func init() {
	childModes["euid"] = func() { fmt.Printf("euid %d\n", os.Geteuid()) }
}

// forgedSpec is a helper's spec that makes its outer stage execute argv
// (in place of bubblewrap): what a forged AGENTPTY_SANDBOX asks of any
// program linking the library.
func forgedSpec(nonce string, argv ...string) string {
	b, _ := json.Marshal(map[string]any{"stage": "outer", "nonce": nonce, "bwrap": argv})
	return sandbox.Env + "=" + string(b)
}

// TestSandboxHelperForged: a program linking the library (this test
// binary) started with a forged AGENTPTY_SANDBOX but without the nonce
// only the library hands over does not act as the sandbox's helper: it
// runs as itself. The control is a genuine sandboxed start.
func TestSandboxHelperForged(t *testing.T) {
	testkit.Parallel(t)
	sb := newTestSandbox(t, SandboxPolicy{})
	marker := filepath.Join(t.TempDir(), "pwned")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd := exec.Command(must(os.Executable()), "-test.run=^$")
	cmd.Env = append(os.Environ(), forgedSpec(strings.Repeat("0", 32), "/bin/sh", "-c", "echo pwned > "+marker))
	// Descriptors 3 to 5 open, as in many a program.
	cmd.ExtraFiles = []*os.File{devnull, devnull, devnull}
	out, err := cmd.CombinedOutput()
	if _, serr := os.Stat(marker); serr == nil {
		t.Errorf("the forged variable made the program run what it named (%v):\n%s", err, out)
	}
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("the program did not run as itself: %v\n%s", err, out)
	}
	sandboxed(t, sb, `echo "gen""uine"`, "genuine")
}

// TestSandboxHelperSetuid: a setuid copy of a program linking the library
// (this test binary, run as nobody) does not act as the helper even when
// its caller hands over the nonce too (whoever runs a setuid program
// controls its descriptors as well as its environment); it says why on
// the status descriptor. The control shows the copy runs as root.
func TestSandboxHelperSetuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make a setuid-root program and run it as nobody")
	}
	if _, err := NewSandbox(SandboxPolicy{}); err != nil {
		needKernel(t, err)
	}
	dir, bin := copyTestBinary(t, "agentpty-setuid-", 0o755)
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Flags&unix.ST_NOSUID != 0 {
		testkit.Lacks(t, "%s is mounted nosuid (%v)", dir, err)
	}
	for _, err := range []error{os.Chown(bin, 0, 0), os.Chmod(bin, os.ModeSetuid|0o755)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	ctl := exec.Command(bin, "-test.run=^$")
	ctl.Env = append(os.Environ(), childModeEnv+"=euid")
	ctl.SysProcAttr = nobody
	if out, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "euid 0") {
		t.Fatalf("the setuid copy does not run as root: %v\n%s", err, out)
	}

	marker := filepath.Join(t.TempDir(), "pwned") // a directory only root reaches
	nonce := strings.Repeat("5a", 16)
	memfd, err := unix.MemfdCreate("nonce", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	mem := os.NewFile(uintptr(memfd), "nonce")
	defer mem.Close()
	if _, err := mem.WriteString(nonce); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Create(filepath.Join(dir, "exe"))
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// touch creates the marker, then the files named after it: harmless
	// ones in dir.
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), forgedSpec(nonce, "/usr/bin/touch", marker))
	cmd.ExtraFiles = []*os.File{w, exe, mem} // the status pipe, the executable, the nonce
	cmd.SysProcAttr = nobody
	out, err := cmd.CombinedOutput()
	w.Close()
	status, _ := io.ReadAll(r)
	if fi, serr := os.Stat(marker); serr == nil {
		t.Errorf("the setuid program ran what the forged variable named, as uid %d (%v):\n%s",
			fi.Sys().(*syscall.Stat_t).Uid, err, out)
	}
	if !strings.Contains(string(status), "helper: refuses to run in a setuid, setgid or file-capability program") {
		t.Errorf("the helper did not say why it refused (%v): status %q\n%s", err, status, out)
	}
}

// TestSandboxExistingHardLink checks what the README says of hard links:
// one that already exists inside a root reaches the file outside (a root
// is a set of names), and the child cannot make a new one, which the
// unconfined control can.
func TestSandboxExistingHardLink(t *testing.T) {
	testkit.Parallel(t)
	root, outside := t.TempDir(), t.TempDir()
	linked, other := filepath.Join(outside, "linked"), filepath.Join(outside, "other")
	for _, f := range []string{linked, other} {
		if err := os.WriteFile(f, []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(linked, filepath.Join(root, "existing")); err != nil {
		t.Fatal(err)
	}
	script := try + fmt.Sprintf(`r=%q o=%q
try existing sh -c 'echo changed > "$1/existing"' sh "$r"
try new-link ln "$o" "$r/new"
echo "== end"`, root, other)
	got, ctl := attack(t, newTestSandbox(t, SandboxPolicy{WritableRoots: []string{root}}), script)
	wantLines(t, got, "existing: done", "new-link: refused")
	wantLines(t, ctl, "new-link: done")
	if b, _ := os.ReadFile(linked); string(b) != "changed\n" {
		t.Errorf("the file behind the existing link holds %q; the README says the link reaches it", b)
	}
}
