package remote

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/termstate"
	"github.com/agentpty/agentpty/internal/testkit"
)

// probe.sh's probe, run by bash and by dash (a host whose only shell is a
// POSIX sh) on real programs under a pty and read by Parse, decides as
// the local library does (the local collector, termstate.Foreground, read
// on the same terminal, says the same): a program reading its
// terminal (on its main thread or another), a password prompt, select (with a timeout too), poll and
// epoll on the terminal, and a pipeline whose reader is not the group's
// leader wait for input; a busy loop and a program waiting on a pipe do
// not.
//
// In a mount namespace whose /dev/pts is empty (a container's /dev may
// lack the terminal's node), the probe reads the terminal through the
// command's own descriptor, and decides the same.
func TestFuncsOnRealPrograms(t *testing.T) {
	for _, shell := range [][]string{{"bash", "--noprofile", "--norc"}, {"dash"}, noPTSNode} {
		t.Run(shell[0], func(t *testing.T) {
			testkit.Need(t, shell[0])
			if shell[0] == noPTSNode[0] && os.Geteuid() != 0 {
				t.Skip("hiding /dev/pts in a mount namespace needs root")
			}
			funcsOnRealPrograms(t, shell)
		})
	}
}

// noPTSNode is bash in a mount namespace with an empty /dev/pts.
var noPTSNode = []string{"unshare", "-m", "sh", "-c", "mount -t tmpfs none /dev/pts && exec bash --noprofile --norc"}

func funcsOnRealPrograms(t *testing.T, shell []string) {
	testkit.Need(t, "bash", "python3")
	calls, ok := Archs[strings.TrimSpace(run(t, shell, "uname -m"))]
	if !ok {
		t.Skip("an architecture Archs does not list")
	}
	fds := testkit.OpenFDs(t)
	python := "/usr/bin/python3" // the interpreter itself, not a version manager's shim
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	py := func(code string) []string {
		return []string{python, "-c", "import os, select, selectors, sys\n" + code}
	}
	cases := []struct {
		name             string
		argv             []string
		waiting, echoOff bool
	}{
		{"read", []string{"cat"}, true, false},
		{"read -s", []string{"bash", "-c", "read -s x"}, true, true},
		{"select", py("select.select([sys.stdin], [], [])"), true, false},
		{"select 9s", py("select.select([sys.stdin], [], [], 9)"), true, false},
		{"poll", py("p = select.poll(); p.register(0, select.POLLIN); p.poll()"), true, false},
		{"epoll", py("s = selectors.DefaultSelector(); s.register(sys.stdin, selectors.EVENT_READ); s.select()"), true, false},
		{"pipeline", []string{"bash", "-c", "cat | cat"}, true, false},
		{"running", []string{"bash", "-c", "while :; do :; done"}, false, false},
		{"a thread reads", py("import threading\nt = threading.Thread(target=sys.stdin.readline)\nt.start()\nt.join()"), true, false},
		{"running thread beside a reading one", py("import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()\nt = threading.Thread(target=sys.stdin.readline)\nt.start()\nt.join()"), false, false},
		{"a pipe", py("r, w = os.pipe(); os.read(r, 1)"), false, false},
	}
	for _, c := range cases {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		f, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		// Settled: two probes alike, none of whose processes runs (but for
		// the busy loop).
		var r Result
		var out string
		deadline := time.Now().Add(10 * time.Second)
		for {
			a, b := probe(t, shell, pid, calls), probe(t, shell, pid, calls)
			out = b
			if a == b && (strings.HasPrefix(c.name, "running") || !strings.Contains(b, " R ")) || time.Now().After(deadline) {
				break
			}
		}
		r = Parse([]byte(out), calls, true)
		local := termstate.Foreground(f, nil, echoOff)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		f.Close()
		if !r.EchoRead || r.Fg.Waiting != c.waiting || r.EchoOff != c.echoOff || r.Fg.Name == "" {
			t.Errorf("%s: %+v; want waiting %v, echo off %v\n%s", c.name, r, c.waiting, c.echoOff, out)
		}
		if local.Waiting != r.Fg.Waiting || local.Name != r.Fg.Name {
			t.Errorf("%s: the local collector decides %+v, the probe's lines %+v", c.name, local, r.Fg)
		}
		if c.waiting && r.Fence == 0 {
			t.Errorf("%s: no mark written to the terminal of a program that waits on it", c.name)
		}
		if dev := fmt.Sprintf(" /proc/%d/fd/0\n", pid); shell[0] == noPTSNode[0] && !strings.Contains(out, dev) {
			t.Errorf("%s: with /dev/pts empty the terminal is not read through%s%s", c.name, dev, out)
		}
	}
	if now := testkit.OpenFDs(t); now > fds {
		t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
	}
}

// echoOff reads f's echo flag as the library does.
func echoOff(f *os.File) bool {
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil && tio.Lflag&unix.ECHO == 0 && tio.Lflag&unix.ICANON != 0
}

// plainHooks are probe.sh's and end.sh's hooks at their plainest: run
// times read, stty in the foreground, the mark from a background
// subshell, no carriers.
const plainHooks = `
hook_runs() { runs "$1"; }
hook_sttystart() { return 1; }
hook_sttywait() { w=''; }
hook_fence() { { mark "$FN" "$Q" "$D"; } >/dev/null 2>&1 & say fence "$Q"; }
hook_carriers() { M=''; }
`

// probe runs probe.sh's probe of pid through shell and returns its lines
// without the "1 " of the request, the mark it wrote to the terminal
// aside.
func probe(t *testing.T, shell []string, pid int, c Calls) string {
	out := run(t, shell, "exec 2>/dev/null\n"+probeSh+endSh+plainHooks+fmt.Sprintf("\nQ=1 FN=x %s\nprobe %d\nwait\n", Vars(c), pid))
	return strings.ReplaceAll("\n"+out, "\n1 ", "\n")[1:]
}

func run(t *testing.T, shell []string, script string) string {
	t.Helper()
	cmd := exec.Command(shell[0], shell[1:]...)
	cmd.Stdin = strings.NewReader(script)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, errs.String())
	}
	return out.String()
}
