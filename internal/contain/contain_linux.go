package contain

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Host is the cgroup of one Manager, under the host process's own cgroup.
type Host struct {
	dir     string // the cgroup v2 directory
	pidsDir string // a cgroup v1 pids directory, when pids.max lives on v1
	v2pids  bool   // pids.max is set in each group's own dir
	maxPids int

	watchdog *exec.Cmd
	wdPipe   *os.File // the only write end; its closing tells the watchdog
	closed   sync.Once
	closeErr error
}

var hostSeq atomic.Int64

// NewHost makes the cgroup for one Manager's sessions, each limited to
// maxPids processes where a pids controller is reachable, and starts its
// watchdog. It returns ErrUnavailable (wrapped with the reason) where no
// cgroup v2 is mounted or the host may not write its own.
func NewHost(maxPids int) (*Host, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	base, ok := cgroupDir(string(mounts), string(own), "")
	if !ok {
		return nil, fmt.Errorf("%w: no cgroup2 mount holds this process's cgroup", ErrUnavailable)
	}
	name := "agentpty-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(hostSeq.Add(1), 10)
	h := &Host{dir: filepath.Join(base, name), maxPids: maxPids}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "cgroup.kill")); err != nil {
		os.Remove(h.dir)
		return nil, fmt.Errorf("%w: the kernel has no cgroup.kill (Linux 5.14+)", ErrUnavailable)
	}
	// pids.max: on v2 where the host's cgroup passes the controller down,
	// else on a v1 pids hierarchy beside it.
	if hasWord(readFile(filepath.Join(h.dir, "cgroup.controllers")), "pids") &&
		writeFile(filepath.Join(h.dir, "cgroup.subtree_control"), "+pids") == nil {
		h.v2pids = true
	} else if v1, ok := cgroupDir(string(mounts), string(own), "pids"); ok {
		if err := os.Mkdir(filepath.Join(v1, name), 0o755); err == nil {
			h.pidsDir = filepath.Join(v1, name)
		}
	}
	if err := h.startWatchdog(); err != nil {
		h.remove()
		return nil, fmt.Errorf("%w: watchdog: %v", ErrUnavailable, err)
	}
	return h, nil
}

// watchdogScript waits for end of file on its stdin, which comes when the
// host's write end closes however the host ended, then kills the host's
// cgroup and removes the directories given. It ignores the signals a
// terminal or a process group would send the host, so it outlives them.
const watchdogScript = `exec 2>/dev/null
trap '' INT TERM HUP QUIT
read -r _
echo 1 >"$1/cgroup.kill"
for _ in {1..200}; do
  left=0
  for d in "$@"; do
    [ -d "$d" ] || continue
    for s in "$d"/*/; do [ -d "$s" ] && rmdir "$s"; done
    rmdir "$d" || left=1
  done
  [ $left = 0 ] && exit 0
  sleep 0.05
done`

func (h *Host) startWatchdog() error {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return err
	}
	r, w, err := os.Pipe() // close-on-exec: no session child inherits w
	if err != nil {
		return err
	}
	args := []string{"-c", watchdogScript, "agentpty-watchdog", h.dir}
	if h.pidsDir != "" {
		args = append(args, h.pidsDir)
	}
	cmd := exec.Command(bash, args...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	h.watchdog, h.wdPipe = cmd, w
	return nil
}

// Kind says which containment the Host gives: Cgroup or CgroupUnbounded.
func (h *Host) Kind() string {
	if h.v2pids || h.pidsDir != "" {
		return Cgroup
	}
	return CgroupUnbounded
}

// Close removes the Host's cgroups once its groups are gone: the watchdog
// kills what is left and removes them, and Close waits for it.
// Later calls return the first result.
func (h *Host) Close() error {
	h.closed.Do(func() {
		h.wdPipe.Close()
		err := h.watchdog.Wait()
		if err == nil {
			err = h.remove()
		}
		if err != nil {
			h.closeErr = fmt.Errorf("contain: remove %s: %w", h.dir, err)
		}
	})
	return h.closeErr
}

func (h *Host) remove() error {
	var first error
	for _, d := range []string{h.pidsDir, h.dir} {
		if d == "" {
			continue
		}
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// Group is the cgroup of one session.
type Group struct {
	dir, pidsDir string
	fd           int // the open directory, for CLONE_INTO_CGROUP, until Started
}

// Dir is the group's cgroup v2 directory.
func (g *Group) Dir() string { return g.dir }

// NewGroup makes the cgroup for one session named name.
func (h *Host) NewGroup(name string) (*Group, error) {
	g := &Group{dir: filepath.Join(h.dir, name), fd: -1}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("contain: %w", err)
	}
	max := strconv.Itoa(h.maxPids)
	err := error(nil)
	if h.v2pids {
		err = writeFile(filepath.Join(g.dir, "pids.max"), max)
	} else if h.pidsDir != "" {
		g.pidsDir = filepath.Join(h.pidsDir, name)
		if err = os.Mkdir(g.pidsDir, 0o755); err == nil {
			err = writeFile(filepath.Join(g.pidsDir, "pids.max"), max)
		}
	}
	if err == nil {
		g.fd, err = unix.Open(g.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		g.Remove()
		return nil, fmt.Errorf("contain: %w", err)
	}
	return g, nil
}

// Prepare makes the child start inside the group: the clone itself puts
// it there, so nothing runs outside it even for an instant.
func (g *Group) Prepare(a *syscall.SysProcAttr) {
	a.UseCgroupFD, a.CgroupFD = true, g.fd
}

// Started finishes the start: on cgroup v1 pids it moves the group's
// processes into the pids cgroup while the group is frozen, so none can
// fork in between.
func (g *Group) Started() error {
	g.closeFD()
	if g.pidsDir == "" {
		return nil
	}
	if err := g.freeze(true); err != nil {
		return err
	}
	var err error
	for _, pid := range g.Members() {
		if e := writeFile(filepath.Join(g.pidsDir, "cgroup.procs"), strconv.Itoa(pid)); e != nil && err == nil {
			err = e
		}
	}
	if e := g.freeze(false); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("contain: move into %s: %w", g.pidsDir, err)
	}
	return nil
}

func (g *Group) closeFD() {
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
}

// freeze freezes the group and waits until the kernel says it is frozen,
// or thaws it, which needs no wait.
func (g *Group) freeze(on bool) error {
	v := map[bool]string{true: "1", false: "0"}[on]
	if err := writeFile(filepath.Join(g.dir, "cgroup.freeze"), v); err != nil || !on {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Freezing takes the kernel well under a millisecond, and its notice
	// does not always wake a poller: look every millisecond.
	return g.waitEvent(ctx, "frozen 1", time.Millisecond)
}

// Members returns the pids in the group now.
func (g *Group) Members() []int {
	var pids []int
	for _, f := range strings.Fields(readFile(filepath.Join(g.dir, "cgroup.procs"))) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// Signal sends each of sigs, in order, to every process in the group and
// returns how many the group holds (a process born during the call is
// counted, not signalled). A pid is signalled through a pidfd opened
// while the pid was listed and checked to be listed still afterwards, so
// a process outside that reused the number of a member that just exited
// is never signalled.
func (g *Group) Signal(sigs ...syscall.Signal) int {
	first := g.Members()
	fds := make(map[int]int, len(first))
	for _, pid := range first {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			fds[pid] = fd
		}
	}
	now := g.Members()
	for _, pid := range now {
		if fd, ok := fds[pid]; ok {
			for _, sig := range sigs {
				_ = unix.PidfdSendSignal(fd, sig, nil, 0)
			}
		}
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	return len(now)
}

// Kill sends SIGKILL to every process in the group at once (cgroup.kill):
// nothing can fork its way out while it runs.
func (g *Group) Kill() error {
	return writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
}

// WaitEmpty waits until no process is left in the group, woken by the
// kernel's notice on cgroup.events, or until ctx ends.
func (g *Group) WaitEmpty(ctx context.Context) error {
	return g.waitEvent(ctx, "populated 0", 50*time.Millisecond)
}

// waitEvent waits until cgroup.events holds the line want, looking at
// least every interval.
func (g *Group) waitEvent(ctx context.Context, want string, every time.Duration) error {
	fd, err := unix.Open(filepath.Join(g.dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			return err
		}
		if slices.Contains(strings.Split(string(buf[:n]), "\n"), want) {
			return nil
		}
		// The kernel wakes pollers of cgroup.events with POLLPRI when it
		// changes; poll cannot watch ctx, so wake every interval to check it.
		ms := int(every / time.Millisecond)
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			if left <= 0 {
				return context.DeadlineExceeded
			}
			ms = min(ms, int(left/time.Millisecond)+1)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, ms); err != nil && err != unix.EINTR {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Remove removes the group's cgroups; it fails while processes are left.
func (g *Group) Remove() error {
	g.closeFD()
	var first error
	for _, d := range []string{g.pidsDir, g.dir} {
		if d == "" {
			continue
		}
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// cgroupDir finds where this process's cgroup lives: in the cgroup2 mount
// when controller is "", else in the cgroup v1 mount of controller.
func cgroupDir(mountinfo, self, controller string) (string, bool) {
	path, ok := "", false
	for _, line := range strings.Split(self, "\n") {
		// "ID:controllers:path"; v2 is "0::path".
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if (controller == "" && f[0] == "0" && f[1] == "") || (controller != "" && slices.Contains(strings.Split(f[1], ","), controller)) {
			path, ok = f[2], true
		}
	}
	if !ok {
		return "", false
	}
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		// "id parent maj:min root mountpoint opts [optional...] - fstype source superopts"
		pre, post, found := strings.Cut(sc.Text(), " - ")
		if !found {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		root, mnt := unescape(a[3]), unescape(a[4])
		switch {
		case controller == "" && b[0] == "cgroup2":
		case controller != "" && b[0] == "cgroup" && slices.Contains(strings.Split(b[2], ","), controller):
		default:
			continue
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // this mount shows another part of the hierarchy
		}
		return filepath.Join(mnt, rel), true
	}
	return "", false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasWord(s, w string) bool { return slices.Contains(strings.Fields(s), w) }

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// writeFile writes one value to a cgroup file; the kernel takes it in one
// write and reports a refusal there.
func writeFile(path, v string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(v))
	return err
}
