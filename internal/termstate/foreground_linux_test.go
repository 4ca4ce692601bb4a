package termstate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/testkit"
)

// childEnv names the helper child the test binary runs as.
const childEnv = "TERMSTATE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "goroutine-read" {
		testkit.GoroutineReader()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// ptyProgram is a program under a pty of its own whose output is kept.
type ptyProgram struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

func startProgram(t testing.TB, argv []string, env ...string) *ptyProgram {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyProgram{cmd: cmd, master: f, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

// await waits for want in the program's output.
func (p *ptyProgram) await(t testing.TB, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		p.mu.Lock()
		got := p.out.String()
		p.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, got)
		}
		select {
		case <-p.done:
		case <-time.After(5 * time.Millisecond): // output arrives on the reader goroutine
		}
	}
}

func (p *ptyProgram) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.master.Close()
	<-p.done
}

// echoOff reads the terminal's echo flag as the library does.
func echoOff(f *os.File) bool {
	var tio *unix.Termios
	_ = control(f, func(fd int) { tio, _ = unix.IoctlGetTermios(fd, unix.TCGETS) })
	return tio != nil && tio.Lflag&unix.ECHO == 0 && tio.Lflag&unix.ICANON != 0
}

// The decision fed by this machine's /proc (Foreground), with its files
// kept and without, on real programs under a pty: a program reading its
// terminal on its main thread (bash's read, python3's input(), read -s)
// or on another thread (a Go goroutine, a Python thread), and a pipeline
// whose reader is not the group's leader, wait for input; a busy loop, a
// program waiting on a pipe, and one whose other thread spins do not.
func TestForegroundOnRealPrograms(t *testing.T) {
	testkit.Need(t, "bash", "python3")
	python := "/usr/bin/python3" // the interpreter itself, not a version manager's shim
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	bash := func(script string) []string { return []string{"bash", "--noprofile", "--norc", "-c", script} }
	py := func(code string) []string { return []string{python, "-c", code} }
	cases := []struct {
		name    string
		argv    []string
		env     []string
		waiting bool
		fg      string
	}{
		{"bash read", bash("echo 'name? '; read x"), nil, true, "bash"},
		{"bash read -s", bash("echo 'name? '; read -s x"), nil, true, "bash"},
		{"python3 input()", py("input('name? ')"), nil, true, "python3"},
		{"python3 thread reads", py(testkit.PyThreadReader("t.join()")), nil, true, "python3"},
		{"go goroutine reads", []string{os.Args[0]}, []string{childEnv + "=goroutine-read"}, true, ""},
		{"pipeline", bash("echo 'name? '; cat | cat"), nil, true, "cat"},
		{"busy loop", bash("echo 'name? '; while :; do :; done"), nil, false, "bash"},
		{"a pipe", py("import os\nr, w = os.pipe()\nprint('name? ', flush=True)\nos.read(r, 1)"), nil, false, "python3"},
		{"a thread spins beside one reading", py(testkit.PyThreadReader(
			"def spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()\nt.join()")), nil, false, "python3"},
	}
	fds := testkit.OpenFDs(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startProgram(t, c.argv, c.env...)
			defer p.stop()
			p.await(t, "name? ")
			kept := &Files{}
			defer kept.Close()
			for _, pf := range []*Files{kept, nil} {
				r := settled(p.master, pf, c.waiting)
				if r.Waiting != c.waiting || c.fg != "" && r.Name != c.fg || r.Program.PID == 0 {
					t.Errorf("files kept %v: %+v, want waiting %v, foreground %q", pf != nil, r, c.waiting, c.fg)
				}
			}
		})
	}
	if now := testkit.OpenFDs(t); now > fds {
		t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
	}
}

// settled reads the decision until it says waiting (want) or, for a
// program that should not wait, until ten reads in a row agree, within a
// deadline: a program starting up runs for a while first.
func settled(master *os.File, pf *Files, want bool) Result {
	var r Result
	same := 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		prev := r
		r = Foreground(master, pf, echoOff)
		if r.Waiting == want && (want || r.Waiting == prev.Waiting && same >= 10) {
			return r
		}
		if r.Waiting == prev.Waiting {
			same++
		} else {
			same = 0
		}
		runtime.Gosched()
	}
	return r
}

// ThreadOnTerminal, which the secret checks use, sees the thread that
// reads: on a Go program's reading thread, not on its main one.
func TestThreadOnTerminal(t *testing.T) {
	p := startProgram(t, []string{os.Args[0]}, childEnv+"=goroutine-read")
	defer p.stop()
	p.await(t, "name? ")
	_, peer := GroupAndPeer(p.master)
	tty := DevOf(peer)
	unix.Close(peer)
	pid := p.cmd.Process.Pid
	for deadline := time.Now().Add(20 * time.Second); ; {
		main, mainKnown := ThreadOnTerminal(pid, tty)
		reading := 0
		entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range entries {
			var tid int
			fmt.Sscan(e.Name(), &tid)
			if w, _ := ThreadOnTerminal(tid, tty); w.On && tid != pid {
				reading++
			}
		}
		if mainKnown && !main.On && reading >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("main thread %+v (known %v), %d other threads on the terminal; want the main one off it and another on it", main, mainKnown, reading)
		}
		runtime.Gosched()
	}
}

// The one table is this machine's kernel's: each number in Local's calls
// is the system call x/sys/unix names for this architecture.
func TestLocalCallsAreTheKernels(t *testing.T) {
	c, ok := Local()
	if !ok {
		t.Skip("no table for " + runtime.GOARCH)
	}
	for _, nr := range []uint64{unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64} {
		if c.kind(nr) != waitRead {
			t.Errorf("read call %d is not in the table's reads", nr)
		}
	}
	for nr, kind := range map[uint64]int{
		unix.SYS_PSELECT6: waitSelect, unix.SYS_PPOLL: waitPoll, unix.SYS_EPOLL_PWAIT: waitEpoll, unix.SYS_EPOLL_PWAIT2: waitEpoll,
	} {
		if c.kind(nr) != kind {
			t.Errorf("call %d: kind %d in the table, want %d", nr, c.kind(nr), kind)
		}
	}
	want := map[uint64]Timeout{
		unix.SYS_PSELECT6: {4, Timespec}, unix.SYS_PPOLL: {2, Timespec},
		unix.SYS_EPOLL_PWAIT: {3, Millis}, unix.SYS_EPOLL_PWAIT2: {3, Timespec},
	}
	for nr, w := range want {
		if c.Timeouts[nr] != w {
			t.Errorf("call %d: timeout %+v, want %+v", nr, c.Timeouts[nr], w)
		}
	}
}
