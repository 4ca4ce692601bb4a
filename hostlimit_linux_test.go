package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
)

// The host's limits, run into for real in a helper child so that this
// process keeps its own: the descriptor limit lowered with setrlimit, and
// the pty limit of a devpts instance of the child's own (a private mount
// namespace; the machine's kernel.pty.max is never touched).

func init() {
	childModes["fd-limit"] = func() { limitChild(lowerFDLimit) }
	childModes["pty-limit"] = func() { limitChild(privatePtys) }
}

// limitReport is what a limit child saw, as JSON on its stdout.
type limitReport struct {
	Skip         string
	Started      int    // sessions that started before the refusal
	Err          string // the refusal
	TooMany      bool   // errors.Is(err, ErrTooManySessions)
	Errno        string // the system call's error under it
	FDsBefore    []string
	FDsAfter     []string // the refused start's descriptors, before and after it
	KidsBefore   []int
	KidsAfter    []int // this process's children, before and after it
	GroupLeft    string
	LeftAtClose  []int // processes of the sessions still running after Close
	Filled       int   // descriptors opened to reach the limit before the ending
	KillErr      string
	CloseErr     string
	GroupsClosed bool // the Manager's cgroup is gone after Close
}

// limitChild starts sessions until one is refused, with limit set up
// first, and reports what the refusal left.
func limitChild(limit func(r *limitReport)) {
	var r limitReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(r) }()
	m := NewManager(Options{Shell: containShell, MaxSessions: 100})
	var pids []int
	start := func() error {
		res, err := m.Start(context.Background(), StartRequest{Command: readyCat, WaitFor: "ready"})
		if err == nil {
			s, _ := m.Session(res.ID)
			pids = append(pids, s.PID())
		}
		return err
	}
	// The first start makes the Manager's cgroup, watchdog and private
	// directory, which a start under the limit would otherwise make.
	if err := start(); err != nil {
		r.Skip = "the first start failed: " + err.Error()
		return
	}
	if limit(&r); r.Skip != "" {
		m.Close()
		return
	}
	for i := 0; i < 60; i++ {
		fds, kids := openFDList(), childPids()
		err := start()
		if err == nil {
			r.Started++
			continue
		}
		r.Err, r.TooMany = err.Error(), errors.Is(err, ErrTooManySessions)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = unix.ErrnoName(errno)
		}
		r.FDsBefore, r.FDsAfter, r.KidsBefore, r.KidsAfter = fds, openFDList(), kids, childPids()
		r.GroupLeft = groupOf(m, "pty-"+strconv.Itoa(r.Started+2))
		break
	}
	host := hostDir(m)
	// At the limit: every descriptor left is taken, as on a farm's host
	// that reached it. Ending sessions still works (see fdRoom).
	fill := fillFDs()
	if _, err := m.Kill(context.Background(), "pty-1"); err != nil {
		r.KillErr = err.Error()
	}
	if err := m.Close(); err != nil {
		r.CloseErr = err.Error()
	}
	r.Filled = len(fill)
	for _, f := range fill {
		f.Close()
	}
	for _, pid := range pids {
		r.LeftAtClose = append(r.LeftAtClose, proc.Members(pid)...)
	}
	_, err := os.Stat(host)
	r.GroupsClosed = host == "" || errors.Is(err, os.ErrNotExist)
}

// lowerFDLimit leaves this process room for a few more sessions: the
// limit caps a new descriptor's number, and a new one takes the lowest
// number free.
func lowerFDLimit(*limitReport) {
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	lim.Cur = uint64(len(openFDList()) + 8*fdsPerSession)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(1)
	}
}

// privatePtys gives this process a devpts instance of its own that holds
// at most three terminals, and makes /dev/ptmx its multiplexer (the child
// runs in a mount namespace of its own, made private by the runtime).
func privatePtys(r *limitReport) {
	if err := unix.Mount("devpts", "/dev/pts", "devpts", 0, "newinstance,max=3,ptmxmode=0666"); err != nil {
		r.Skip = "cannot mount a devpts instance of its own: " + err.Error()
		return
	}
	if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
		r.Skip = "cannot bind its ptmx over /dev/ptmx: " + err.Error()
	}
}

// openFDList names this process's open descriptors.
func openFDList() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+" "+target)
	}
	return out
}

// fillFDs brings this process to its descriptor limit: the limit comes
// down to just above its highest descriptor, and os.DevNull is opened
// into every number free below it until the limit refuses it. It returns
// what it opened.
func fillFDs() []*os.File {
	high := 0
	for _, fd := range openFDList() {
		n, _ := strconv.Atoi(strings.Fields(fd)[0])
		high = max(high, n)
	}
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	lim.Cur = min(lim.Cur, uint64(high+1))
	_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	var fs []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return fs
		}
		fs = append(fs, f)
	}
}

// childPids lists the live (not zombie) children of this process.
func childPids() []int {
	var out []int
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok && !st.Gone() && st.PPID == os.Getpid() {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// hostDir is the Manager's cgroup, "" where it has none.
func hostDir(m *Manager) string {
	if g := anyGroup(m); g != "" {
		return filepath.Dir(g)
	}
	return ""
}

func anyGroup(m *Manager) string {
	for _, info := range m.List() {
		if s, ok := m.Session(info.ID); ok {
			if g := sessionGroup(s); g != nil {
				return g.Dir()
			}
		}
	}
	return ""
}

// groupOf reports the cgroup of the session name if it exists, "" if not.
func groupOf(m *Manager, name string) string {
	host := hostDir(m)
	if host == "" {
		return ""
	}
	d := filepath.Join(host, name)
	if _, err := os.Stat(d); err == nil {
		return d
	}
	return ""
}

// runLimitChild runs the helper child in mode and returns its report.
func runLimitChild(t *testing.T, mode string, attr *syscall.SysProcAttr) limitReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
	cmd.SysProcAttr = attr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper child %s: %v\n%s", mode, err, out)
	}
	var r limitReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper child %s: %v\n%s", mode, err, out)
	}
	if r.Skip != "" {
		lacks(t, "%s", r.Skip)
	}
	return r
}

// checkRefusal checks that a start was refused with ErrTooManySessions,
// with a message holding every one of words, and left nothing behind.
func checkRefusal(t *testing.T, r limitReport, errno string, words ...string) {
	t.Helper()
	if r.Err == "" {
		t.Fatalf("%d sessions started and none was refused", r.Started)
	}
	t.Logf("refused after %d more sessions: %s", r.Started, r.Err)
	if !r.TooMany || r.Errno != errno {
		t.Errorf("the refusal is ErrTooManySessions %v, errno %q; want true and %s", r.TooMany, r.Errno, errno)
	}
	for _, w := range words {
		if !strings.Contains(r.Err, w) {
			t.Errorf("the refusal does not say %q", w)
		}
	}
	if !slices.Equal(r.FDsBefore, r.FDsAfter) {
		t.Errorf("the refused start left descriptors: before %q, after %q", r.FDsBefore, r.FDsAfter)
	}
	if !slices.Equal(r.KidsBefore, r.KidsAfter) {
		t.Errorf("the refused start left processes: children before %v, after %v", r.KidsBefore, r.KidsAfter)
	}
	if r.GroupLeft != "" {
		t.Errorf("the refused start left its cgroup %s", r.GroupLeft)
	}
	if len(r.LeftAtClose) > 0 || r.KillErr != "" || r.CloseErr != "" || !r.GroupsClosed {
		t.Errorf("Kill and Close with every descriptor taken (%d more opened): processes left %v, errors %q and %q, cgroups removed %v", r.Filled, r.LeftAtClose, r.KillErr, r.CloseErr, r.GroupsClosed)
	}
}

// A start past the process's descriptor limit is refused with
// ErrTooManySessions naming RLIMIT_NOFILE and its value, and leaves no
// descriptor, process or cgroup behind.
func TestStartOverDescriptorLimit(t *testing.T) {
	r := runLimitChild(t, "fd-limit", nil)
	checkRefusal(t, r, "EMFILE", "RLIMIT_NOFILE", "is reached", "MaxSessions")
	if f := strings.Fields(r.Err[strings.Index(r.Err, "RLIMIT_NOFILE"):]); len(f) < 2 || f[1] == "0" {
		t.Errorf("the refusal does not give the limit's value: %q", r.Err)
	}
}

// A start past the kernel's pty limit (here a devpts instance's own max=3,
// which opening /dev/ptmx reports as the machine-wide one would, ENOSPC)
// is refused with ErrTooManySessions naming kernel.pty.max, and leaves
// nothing behind.
func TestStartOverPtyLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		lacks(t, "a devpts instance of its own needs root")
	}
	r := runLimitChild(t, "pty-limit", &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS})
	checkRefusal(t, r, "ENOSPC", "pseudo-terminal limit", "kernel.pty.max "+procValue("/proc/sys/kernel/pty/max"), "max=3 on the devpts")
	// Fewer start where the machine's other terminals leave this devpts
	// less than its own max (kernel.pty.reserve).
	if r.Started > 3 {
		t.Errorf("%d sessions started in a devpts of 3 (the first started before it)", r.Started)
	}
}

var lacks = testkit.Lacks
