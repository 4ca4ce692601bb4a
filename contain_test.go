//go:build linux

package agentpty

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// containShell runs commands without the login profile: these tests kill
// programs at once, and a profile killed midway can leave a lock behind.
var containShell = []string{"bash", "--noprofile", "--norc", "-c"}

// needCgroup fails (or, unless AGENTPTY_REQUIRE=all, skips) a test whose
// session did not get a cgroup with a pids bound.
func needCgroup(t *testing.T, s *Session) {
	t.Helper()
	needKind(t, s.Containment())
}

func needKind(t *testing.T, got string) {
	t.Helper()
	if got != ContainCgroup {
		if os.Getenv("AGENTPTY_REQUIRE") == "all" {
			t.Fatalf("containment is %q, want %q (AGENTPTY_REQUIRE=all)", got, ContainCgroup)
		}
		t.Skipf("containment is %q here, not %q", got, ContainCgroup)
	}
}

// withMarker returns the pids of live processes whose command line holds
// marker: what a test's programs left behind, found by pid wherever they
// went.
func withMarker(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// marker is a word unique to one test run, for withMarker.
func marker(t *testing.T) string {
	return fmt.Sprintf("mark%d%s", os.Getpid(), strings.NewReplacer("/", "", "_", "").Replace(t.Name()))
}

// escapee is a bash line that starts a process that leaves the session
// (setsid), ignores the polite signals, prints its pid as esc=PID and
// sleeps under the name mark.
func escapee(mark string) string {
	return `setsid bash -c 'trap "" HUP TERM; echo esc=$$; exec -a ` + mark + ` sleep 1000'`
}

// escapeePid reads the pid an escapee printed.
func escapeePid(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`esc=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no esc= in %q", out)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// Kill reaches processes however they left the session: setsid, a setsid
// behind a double fork (its parent gone), and a chain that forks, leaves
// its process group and exits at every step, all ignoring SIGTERM and
// SIGHUP. After Kill no escapee is left by pid, and no process of the
// session is left at all: each held a FIFO open, and it reads end of file.
func TestContainEscapees(t *testing.T) {
	need(t, "python3", "setsid")
	chain := `import os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
for n in range(1 << 62):
    if n == 20:
        print("chaining", flush=True)
    if os.fork():
        os._exit(0)
    os.setpgid(0, 0)`
	for _, c := range []struct {
		name, cmd string
		pid       bool // the command prints the escapee's pid
	}{
		{"Setsid", "%s & wait", true},
		{"DoubleFork", "( %s & ); exec sleep 1000", true},
		{"ForkExitChain", "python3 -c '" + chain + "' %s & exec sleep 1000", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mark := marker(t)
			arg := mark
			if c.pid {
				arg = escapee(mark)
			}
			m := newManager(t, Options{Shell: containShell, KillGrace: 300 * time.Millisecond})
			wait := "chaining"
			if c.pid {
				wait = "esc="
			}
			hold, held := holder(t)
			res := mustStart(t, m, StartRequest{Command: hold + fmt.Sprintf(c.cmd, arg), WaitFor: wait})
			s, _ := m.Session(res.ID)
			needCgroup(t, s)
			pid := 0
			if c.pid {
				pid = escapeePid(t, res.Output)
				if sid, _ := unix.Getsid(pid); sid == s.PID() {
					t.Fatalf("the escapee %d is still in the session", pid)
				}
				// By its pid: its command line is briefly unreadable while it execs.
				if !alive(pid) {
					t.Fatalf("the escapee %d is not running", pid)
				}
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if left := withMarker(mark); len(left) > 0 || pid > 0 && alive(pid) {
				t.Fatalf("processes %v (escapee %d) survived Kill", left, pid)
			}
			allGone(t, held)
		})
	}
}

// holder returns the shell words that make every process a session
// starts hold a FIFO open for writing, and the FIFO's read end: it reaches
// end of file only once all of them are gone, however briefly each lived.
func holder(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "held")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return "exec 3>" + path + "; ", f
}

// allGone fails the test unless every holder of the FIFO is gone.
func allGone(t *testing.T, held *os.File) {
	t.Helper()
	_ = held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("processes of the session survived Kill: the FIFO they hold is still open (%v)", err)
	}
}

// A fork bomb stops at MaxProcesses, and Kill ends every copy.
func TestContainForkBomb(t *testing.T) {
	const limit = 200
	if peak := forkBomb(t, Options{MaxProcesses: limit}); peak > limit || peak < limit/4 {
		t.Errorf("the bomb held %d processes at its peak; the bound is %d", peak, limit)
	}
}

// MaxProcessesTotal bounds all sessions together below what each may have:
// the same bomb passes the budget without it. Its default is within the
// machine's pid_max, which the sessions' own bounds add up past.
func TestContainProcessBudget(t *testing.T) {
	const each, budget = 200, 80
	if peak := forkBomb(t, Options{MaxProcesses: each, MaxProcessesTotal: -1}); peak <= budget {
		t.Fatalf("control: without a budget the bomb held only %d processes; the test shows nothing", peak)
	}
	if peak := forkBomb(t, Options{MaxProcesses: each, MaxProcessesTotal: budget}); peak > budget || peak < budget/4 {
		t.Errorf("the bomb held %d processes at its peak; the budget is %d", peak, budget)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(readText("/proc/sys/kernel/pid_max")))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}.withDefaults()
	if o.MaxSessions*o.MaxProcesses <= pidMax {
		t.Logf("here the sessions' bounds (%d×%d) stay within pid_max %d", o.MaxSessions, o.MaxProcesses, pidMax)
	}
	if o.MaxProcessesTotal != pidMax/2 {
		t.Errorf("the default budget is %d; want half of pid_max %d", o.MaxProcessesTotal, pidMax)
	}
}

// forkBomb runs a fork bomb in a session of a manager with opts, returns
// the most processes it held at once, and checks that Kill ends them all.
func forkBomb(t *testing.T, opts Options) int {
	t.Helper()
	mark := marker(t)
	opts.Shell, opts.KillGrace = containShell, 100*time.Millisecond
	m := newManager(t, opts)
	// First check the bound is there: unbounded, this would take the machine.
	res := mustStart(t, m, StartRequest{Command: "echo ready; read -r go; " + mark + "() { " + mark + " | " + mark + " & }; " + mark + "; while :; do read -r; done", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	needCgroup(t, s)
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "go", Submit: true, WaitFor: "retry", WaitMS: ms(20000)})
	peak := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		peak = max(peak, len(sessionGroup(s).Members()))
	}
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if left := withMarker(mark); len(left) > 0 {
		t.Fatalf("%d processes of the bomb survived Kill: %v", len(left), left)
	}
	t.Logf("peak %d processes under MaxProcesses %d, MaxProcessesTotal %d", peak, opts.MaxProcesses, opts.MaxProcessesTotal)
	return peak
}

// MaxMemory bounds what the sessions may use where a memory controller is
// reachable: a program that takes 256 MiB is killed under a bound of 64
// MiB, and runs to its end without one (the control). Close removes the
// memory cgroup too.
func TestContainMemoryBound(t *testing.T) {
	need(t, "python3")
	const take = `exec python3 -c 'x = b"x" * (256 << 20); print("allocated", len(x) >> 20)'`
	for _, bound := range []int64{0, 64 << 20} {
		t.Run(map[bool]string{true: "Control", false: "Bounded"}[bound == 0], func(t *testing.T) {
			m := newManager(t, Options{Shell: containShell, MaxMemory: bound})
			res := mustStart(t, m, StartRequest{Command: "echo ready; read -r go; " + take, WaitFor: "ready"})
			s, _ := m.Session(res.ID)
			needCgroup(t, s)
			if bound > 0 && !m.contain.Memory() {
				if os.Getenv("AGENTPTY_REQUIRE") == "all" {
					t.Fatal("no memory controller is reachable (AGENTPTY_REQUIRE=all)")
				}
				t.Skip("no memory controller is reachable here")
			}
			// The cgroup that holds the bound: the manager's v2 cgroup, or
			// its v1 memory cgroup where memory lives on v1.
			memDir := filepath.Dir(sessionGroup(s).Dir())
			for _, line := range strings.Split(readText(fmt.Sprintf("/proc/%d/cgroup", s.PID())), "\n") {
				if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == "memory" {
					memDir = filepath.Join("/sys/fs/cgroup/memory", f[2])
				}
			}
			if _, err := os.Stat(memDir); bound > 0 && (err != nil || !strings.Contains(memDir, "/agentpty-")) {
				t.Fatalf("the session is in no memory cgroup of the manager's: %s (%v)", memDir, err)
			}
			w, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: "go", Submit: true, WaitFor: "allocated", WaitMS: ms(20000)})
			if err != nil {
				t.Fatal(err)
			}
			if bound == 0 {
				if !w.Matched {
					t.Fatalf("control: the program did not finish without a bound: %q", w.Output)
				}
				return
			}
			st, err := s.Wait(waitCtx(t))
			if w.Matched || err != nil || st.Signal != "SIGKILL" {
				t.Fatalf("under a bound of %d bytes the program ended with %+v, %v; output %q", bound, st, err, w.Output)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(memDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("memory cgroup %s after Close: %v", memDir, err)
			}
		})
	}
}

// A program that handles SIGTERM runs its handler and exits as it chose:
// it is not cut short by SIGHUP or SIGKILL.
func TestContainTermHandlerRuns(t *testing.T) {
	need(t, "python3")
	m := newManager(t, Options{Shell: containShell})
	res := mustStart(t, m, StartRequest{
		Command: `exec python3 -c 'import signal, sys, time
def done(*_):
    time.sleep(0.05)
    print("handled term", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
time.sleep(1000)'`, WaitFor: "ready"})
	k, err := m.Kill(waitCtx(t), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(k.Output, "handled term") || k.ExitCode == nil || *k.ExitCode != 3 {
		t.Fatalf("the TERM handler did not run to its end: output %q, exit %v signal %q", k.Output, k.ExitCode, k.Signal)
	}
}

// freeze puts pid in a cgroup v1 freezer of its own and freezes it: a frozen
// task does not die of SIGKILL until thawed. It returns the thaw.
func freeze(t *testing.T, pid int) func() {
	t.Helper()
	base := "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(filepath.Join(base, "tasks")); err != nil {
		if os.Getenv("AGENTPTY_REQUIRE") == "all" {
			t.Fatalf("no cgroup v1 freezer to make an unkillable process: %v", err)
		}
		t.Skipf("no cgroup v1 freezer to make an unkillable process: %v", err)
	}
	dir := filepath.Join(base, marker(t))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(f, v string) {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.procs", strconv.Itoa(pid))
	write("freezer.state", "FROZEN")
	for !strings.HasPrefix(readText(filepath.Join(dir, "freezer.state")), "FROZEN") {
		time.Sleep(time.Millisecond) // the kernel offers no notice of the state
	}
	return func() {
		write("freezer.state", "THAWED")
		for {
			if err := os.Remove(dir); err == nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// Kill says which processes outlived SIGKILL, by pid: here one frozen so
// that SIGKILL cannot end it, through the cgroup and through the fallback
// loop's bound.
func TestContainKillReportsSurvivors(t *testing.T) {
	saved := killBound
	killBound = 500 * time.Millisecond
	t.Cleanup(func() { killBound = saved })
	for _, cgroup := range []bool{true, false} {
		t.Run(map[bool]string{true: "Cgroup", false: "Fallback"}[cgroup], func(t *testing.T) {
			mark := marker(t)
			m := newManager(t, Options{Shell: containShell, KillGrace: 100 * time.Millisecond})
			if !cgroup {
				m.containOnce.Do(func() {})
			}
			res := mustStart(t, m, StartRequest{Command: "exec -a " + mark + " sleep 1000 & echo pid=$!; wait", WaitFor: "pid="})
			s, _ := m.Session(res.ID)
			if cgroup {
				needCgroup(t, s)
			} else if s.Containment() != ContainSession {
				t.Fatalf("containment %q, want %q", s.Containment(), ContainSession)
			}
			pid, _ := strconv.Atoi(regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(res.Output)[1])
			thaw := freeze(t, pid)
			_, err := m.Kill(waitCtx(t), res.ID)
			thaw()
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
				t.Fatalf("Kill with process %d unkillable: %v; want an error naming it", pid, err)
			}
			t.Logf("Kill: %v", err)
			// Thawed, it dies of the SIGKILL it has pending (the fallback's loop
			// has given up, so the test ends it).
			if !cgroup {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			waitGone(t, pid)
		})
	}
}

// waitGone waits for pid to exit, woken by its pidfd.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 20000); n != 1 {
		t.Fatalf("process %d is still alive", pid)
	}
}

// Where no cgroup can be made, the fallback still finds a setsid escapee
// whose parent is in the session, and kills it.
func TestContainFallbackFindsDescendants(t *testing.T) {
	mark := marker(t)
	m := newManager(t, Options{Shell: containShell, KillGrace: 100 * time.Millisecond})
	m.containOnce.Do(func() {})
	res := mustStart(t, m, StartRequest{Command: escapee(mark) + " & echo started; wait", WaitFor: "esc="})
	pid := escapeePid(t, res.Output)
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// chainSource is a python program that forks, leaves its process group
// and exits at every step, forever, ignoring SIGTERM and SIGHUP, so that
// its one live process is never the same for long; it says "chaining"
// once under way and stops by itself when the file argv[2] exists, so a
// test can end a chain that got away.
const chainSource = `import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
for n in range(1 << 62):
    if n == 20:
        print("chaining", flush=True)
    if n % 64 == 0 and os.path.exists(sys.argv[2]):
        os._exit(0)
    if os.fork():
        os._exit(0)
    os.setpgid(0, 0)`

// Where no cgroup can be made, the fallback still ends a fork-and-exit
// chain that stays in the session, from a leader that has exited: every
// trial, not one in a few.
func TestContainFallbackForkExitChain(t *testing.T) {
	need(t, "python3")
	for trial := range 4 {
		t.Run(strconv.Itoa(trial), func(t *testing.T) {
			mark := marker(t)
			stop := filepath.Join(t.TempDir(), "stop")
			m := newManager(t, Options{Shell: containShell, KillGrace: 100 * time.Millisecond})
			m.containOnce.Do(func() {})
			t.Cleanup(func() {
				// A chain that got away stops by itself once told.
				_ = os.WriteFile(stop, nil, 0o600)
				for end := time.Now().Add(10 * time.Second); len(withMarker(mark)) > 0 && time.Now().Before(end); {
					time.Sleep(10 * time.Millisecond)
				}
			})
			hold, held := holder(t)
			res := mustStart(t, m, StartRequest{Command: hold + "python3 -c '" + chainSource + "' " + mark + " " + stop + " & exec sleep 1000", WaitFor: "chaining"})
			s, _ := m.Session(res.ID)
			if s.Containment() != ContainSession {
				t.Fatalf("containment %q, want %q", s.Containment(), ContainSession)
			}
			took, err := killWithin(t, m, res.ID, 10*time.Second)
			t.Logf("Kill: %v after %v", err, took)
			if err != nil {
				t.Fatal(err)
			}
			if left := withMarker(mark); len(left) > 0 {
				t.Fatalf("the chain survived Kill: %v", left)
			}
			allGone(t, held)
		})
	}
}

// When the host process dies (SIGKILL: nothing of it runs), what its
// sessions started dies too, a setsid grandchild that ignores SIGHUP
// included. The control: the same host without a cgroup leaves it alive.
func TestContainDieWithParent(t *testing.T) {
	for _, cgroup := range []bool{true, false} {
		t.Run(map[bool]string{true: "Cgroup", false: "Control"}[cgroup], func(t *testing.T) {
			mark := marker(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childModeEnv+"=host", "AGENTPTY_TEST_COMMAND="+escapee(mark)+" & wait",
				"AGENTPTY_TEST_CGROUP="+strconv.FormatBool(cgroup))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			var pid, leader int
			var kind string
			for sc.Scan() {
				if _, err := fmt.Sscanf(sc.Text(), "esc=%d containment=%s leader=%d", &pid, &kind, &leader); err == nil {
					break
				}
			}
			if pid == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the host child did not report its grandchild")
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if !cgroup {
				if kind != ContainSession {
					t.Fatalf("control containment %q", kind)
				}
				// The host's death hangs up the session's terminal, which ends
				// the shell that started the grandchild: the last thing it sets
				// off without containment.
				waitGone(t, leader)
				if !alive(pid) {
					t.Fatalf("control: grandchild %d died without containment; the test shows nothing", pid)
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
				waitGone(t, pid)
				return
			}
			needKind(t, kind)
			waitGone(t, pid)
			// The watchdog removes the host's cgroups and exits.
			for deadline := time.Now().Add(20 * time.Second); len(withMarker(fmt.Sprintf("agentpty-%d-", cmd.Process.Pid))) > 0; {
				if time.Now().After(deadline) {
					t.Fatal("the watchdog did not exit")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func init() { childModes["host"] = runHost }

// runHost is a host process for TestContainDieWithParent: it starts a
// session and reports the grandchild's pid, then waits to be killed.
func runHost() {
	m := NewManager(Options{Shell: containShell})
	if os.Getenv("AGENTPTY_TEST_CGROUP") == "false" {
		m.containOnce.Do(func() {})
	}
	res, err := m.Start(context.Background(), StartRequest{Command: os.Getenv("AGENTPTY_TEST_COMMAND"), WaitFor: "esc="})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	s, _ := m.Session(res.ID)
	pid := regexp.MustCompile(`esc=(\d+)`).FindStringSubmatch(res.Output)
	if pid == nil {
		fmt.Println("no pid in", res.Output)
		os.Exit(1)
	}
	fmt.Printf("esc=%s containment=%s leader=%d\n", pid[1], s.Containment(), s.PID())
	idle()
}

// Writes racing a Kill either land or fail with ErrNoSession or ErrExited,
// never with a bare error of the closed terminal.
func TestWriteRacingKill(t *testing.T) {
	m := newManager(t, Options{Shell: containShell, KillGrace: 100 * time.Millisecond})
	for round := 0; round < 10; round++ {
		res := mustStart(t, m, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: strings.Repeat("x", 512), WaitMS: ms(0)})
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if !isErr(err, ErrNoSession) && !isErr(err, ErrExited) {
				t.Fatalf("round %d: a write racing Kill failed with %v; want ErrNoSession or ErrExited", round, err)
			}
		}
	}
}

// A program that floods the terminal with queries and reads none of the
// replies costs one reply writer, not a goroutine per batch, and the
// replies waiting for it stay under maxReplyBytes.
func TestQueryRepliesBounded(t *testing.T) {
	m := newManager(t, Options{Shell: containShell})
	res := mustStart(t, m, StartRequest{Command: "stty raw -echo; echo ready; read -r go; " +
		`for i in $(seq 2000); do printf '\e[6n%.0s' {1..40}; done; echo flooded; exec sleep 1000`, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	base := runtime.NumGoroutine()
	stop := make(chan struct{})
	peaks := make(chan [2]int)
	go func() {
		peak, queued := 0, 0
		for {
			select {
			case <-stop:
				peaks <- [2]int{peak, queued}
				return
			default:
			}
			peak = max(peak, runtime.NumGoroutine())
			queued = max(queued, queuedReplies(s))
			runtime.Gosched()
		}
	}()
	w, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: "go\n", WaitFor: "flooded", WaitMS: ms(20000)})
	s.Screen() // every query parsed: every reply queued or dropped
	close(stop)
	got := <-peaks
	if err != nil || !w.Matched {
		t.Fatalf("the flood did not end: %v %q", err, w.Output)
	}
	if extra := got[0] - base - 1; extra > 3 {
		t.Errorf("%d goroutines beyond the %d before the flood: replies are not written by one writer", extra, base)
	}
	if got[1] == 0 {
		t.Errorf("no reply was ever queued")
	}
	if got[1] > maxReplyBytes {
		t.Errorf("%d bytes of replies waited, over the bound of %d", got[1], maxReplyBytes)
	}
	t.Logf("peak %d goroutines over %d, %d bytes queued at most", got[0]-base-1, base, got[1])
}

// Kill ends a session whose screen has far more to parse than a Kill may
// take (clears of a 1000x500 screen, a quarter megabyte of them behind),
// within its context: the screen stops where it is.
func TestKillWhileTheScreenIsBusy(t *testing.T) {
	m := newManager(t, Options{Shell: containShell, ScrollbackBytes: 1 << 20})
	res := mustStart(t, m, StartRequest{Command: `echo ready; read -r go; while :; do printf '\e[2J%.0s' {1..1000}; echo aaaa; done`,
		WaitFor: "ready", Cols: 1000, Rows: 500})
	s, _ := m.Session(res.ID)
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "go", Submit: true, WaitMS: ms(0)})
	// Wait until the screen lags by more than it can parse in a second.
	lag := func() int64 { return screenLag(s) }
	for lag() < 256<<10 {
		awaitUnread(t, s, "aaaa")
		mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(50)})
	}
	t.Logf("lag %d", lag())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Kill(ctx, res.ID)
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("Kill with a 1s context took %v (err %v)", took, err)
	}
	t.Logf("Kill: %v after %v", err, time.Since(start))
}

// Terminal sizes cannot multiply the work: the cells of all sessions
// together are capped, at Start and at Resize, and a refusal changes
// nothing.
func TestMaxCells(t *testing.T) {
	m := newManager(t, Options{Shell: containShell, MaxCells: 1000 * 500})
	big := mustStart(t, m, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready", Cols: 1000, Rows: 400})
	_, err := m.Start(context.Background(), StartRequest{Command: "echo ready; exec cat", Cols: 1000, Rows: 200})
	if !isErr(err, ErrTooManySessions) || !strings.Contains(err.Error(), "500000") {
		t.Fatalf("a start over the cells budget: %v; want ErrTooManySessions naming the limit", err)
	}
	small := mustStart(t, m, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready", Cols: 100, Rows: 100})
	s, _ := m.Session(small.ID)
	if err := s.Resize(1000, 500); !isErr(err, ErrTooManySessions) || !strings.Contains(err.Error(), small.ID) {
		t.Fatalf("a resize over the cells budget: %v; want ErrTooManySessions naming the session", err)
	}
	if scr := s.Screen(); scr.Cols != 100 || scr.Rows != 100 {
		t.Fatalf("a refused resize changed the screen to %dx%d", scr.Cols, scr.Rows)
	}
	if _, err := m.Kill(waitCtx(t), big.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Resize(1000, 400); err != nil {
		t.Fatalf("after a kill freed its cells, Resize: %v", err)
	}
}

// killWithin runs Kill with a context of d and fails the test when it has
// not returned 5 s after that: a Kill that ignores its context would hang
// the test. It returns how long Kill took and its error.
func killWithin(t *testing.T, m *Manager, id string, d time.Duration) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := m.Kill(ctx, id)
		done <- err
	}()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(d + 5*time.Second):
		t.Fatalf("Kill with a context of %v has not returned after %v", d, time.Since(start))
		return 0, nil
	}
}
