package contain

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	rel     string // its path in the hierarchy, as /proc/PID/cgroup says it
	pidsDir string // a cgroup v1 pids directory, when pids.max lives on v1
	memDir  string // a cgroup v1 memory directory, when the memory bound lives on v1
	v2pids  bool   // pids.max is set in each group's own dir
	memory  bool   // the sessions' memory is bounded
	limits  Limits

	watchdog *exec.Cmd
	wdPipe   *os.File // the only write end; its closing tells the watchdog
	closed   sync.Once
	closeErr error
}

var hostSeq atomic.Int64

// NewHost makes the cgroup for one Manager's sessions, bounded by l where
// a pids or memory controller is reachable, and starts its watchdog. It
// returns ErrUnavailable (wrapped with the reason) where no cgroup v2 is
// mounted or the host may not write its own.
func NewHost(l Limits) (*Host, error) {
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
	h := &Host{dir: filepath.Join(base, name), rel: filepath.Join(v2Path(string(own)), name), limits: l}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "cgroup.kill")); err != nil {
		os.Remove(h.dir)
		return nil, fmt.Errorf("%w: the kernel has no cgroup.kill (Linux 5.14+)", ErrUnavailable)
	}
	// pids.max: on v2 where the host's cgroup passes the controller down,
	// else on a v1 pids hierarchy beside it. The same for memory.
	controllers := readFile(filepath.Join(h.dir, "cgroup.controllers"))
	if hasWord(controllers, "pids") &&
		writeFile(filepath.Join(h.dir, "cgroup.subtree_control"), "+pids") == nil {
		h.v2pids = true
	} else {
		h.pidsDir = v1Dir(string(mounts), string(own), "pids", name)
	}
	if err := h.limit(string(mounts), string(own), name, hasWord(controllers, "memory")); err != nil {
		h.remove()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := h.startWatchdog(); err != nil {
		h.remove()
		return nil, fmt.Errorf("%w: watchdog: %v", ErrUnavailable, err)
	}
	return h, nil
}

// v2Path is the cgroup v2 path in a /proc/PID/cgroup, "" where there is
// none.
func v2Path(cgroup string) string {
	for _, line := range strings.Split(cgroup, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// v1Dir makes the cgroup name in this process's cgroup of the v1 hierarchy
// of controller, and returns it, or "" where there is none.
func v1Dir(mounts, own, controller, name string) string {
	v1, ok := cgroupDir(mounts, own, controller)
	if !ok {
		return ""
	}
	if os.Mkdir(filepath.Join(v1, name), 0o755) != nil {
		return ""
	}
	return filepath.Join(v1, name)
}

// limit sets the bounds of all the sessions together on the Host's own
// cgroups: pids.max where the pids controller is, and the memory bound on
// v2 where the parent passes the memory controller down (v2mem), else on a
// v1 memory cgroup of the Host's own, which each group joins at start.
func (h *Host) limit(mounts, own, name string, v2mem bool) error {
	if n := h.limits.TotalPids; n > 0 {
		dir := h.dir
		if !h.v2pids {
			dir = h.pidsDir
		}
		if dir != "" {
			if err := writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(n)); err != nil {
				return fmt.Errorf("pids.max %d: %w", n, err)
			}
		}
	}
	b := h.limits.Memory
	if b <= 0 {
		return nil
	}
	v := strconv.FormatInt(b, 10)
	if v2mem {
		if err := writeFile(filepath.Join(h.dir, "memory.max"), v); err != nil {
			return fmt.Errorf("memory.max %s: %w", v, err)
		}
		h.memory = true
		return nil
	}
	if h.memDir = v1Dir(mounts, own, "memory", name); h.memDir == "" {
		return nil // no memory controller is reachable
	}
	if err := writeFile(filepath.Join(h.memDir, "memory.limit_in_bytes"), v); err != nil {
		return fmt.Errorf("memory.limit_in_bytes %s: %w", v, err)
	}
	h.memory = true
	return nil
}

// Memory reports whether the sessions' memory is bounded (Limits.Memory
// was set and a memory controller is reachable).
func (h *Host) Memory() bool { return h.memory }

// watchdogScript waits for end of file on its stdin, which comes when the
// host's write end closes however the host ended, then kills the host's
// cgroup and removes the directories given, and the cgroups a session's
// program made inside them, deepest first. It ignores the signals a
// terminal or a process group would send the host, so it outlives them.
const watchdogScript = `exec 2>/dev/null
trap '' INT TERM HUP QUIT
rmtree() {
  local s
  for s in "$1"/*/; do [ -d "$s" ] && rmtree "${s%/}"; done
  rmdir "$1"
}
read -r _
echo 1 >"$1/cgroup.kill"
for _ in {1..200}; do
  left=0
  for d in "$@"; do
    [ -d "$d" ] || continue
    rmtree "$d" || left=1
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
	for _, d := range []string{h.pidsDir, h.memDir} {
		if d != "" {
			args = append(args, d)
		}
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

func (h *Host) remove() error { return removeAll(h.pidsDir, h.memDir, h.dir) }

// removeAll removes each of dirs that is not "", with the cgroups inside
// it, deepest first; it returns the first error.
func removeAll(dirs ...string) error {
	var first error
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if err := removeTree(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeTree removes the cgroup dir and those a program made inside it;
// a cgroup is removed with rmdir once it has no processes and no children.
func removeTree(dir string) error {
	// Most sessions make no cgroup of their own: try the one rmdir first,
	// and list the directory only when it holds cgroups (EBUSY).
	switch err := unix.Rmdir(dir); err {
	case nil, unix.ENOENT:
		return nil
	}
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	var first error
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil && first == nil {
				first = err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) && first == nil {
		first = err
	}
	return first
}

// Group is the cgroup of one session.
type Group struct {
	dir, pidsDir string
	rel          string // the path of dir in the hierarchy
	memDir       string // the Host's v1 memory cgroup, which the group's processes join
	fd           int    // the open directory, for CLONE_INTO_CGROUP, until Started
}

// Dir is the group's cgroup v2 directory.
func (g *Group) Dir() string { return g.dir }

// NewGroup makes the cgroup for one session named name.
func (h *Host) NewGroup(name string) (*Group, error) {
	g := &Group{dir: filepath.Join(h.dir, name), rel: filepath.Join(h.rel, name), memDir: h.memDir, fd: -1}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("contain: %w", err)
	}
	max := strconv.Itoa(h.limits.SessionPids)
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

// Started finishes the start: where pids or memory are bounded on cgroup
// v1, it moves the group's processes into those cgroups while the group is
// frozen, so none can fork in between.
func (g *Group) Started() error {
	g.closeFD()
	var v1 []string
	for _, d := range []string{g.pidsDir, g.memDir} {
		if d != "" {
			v1 = append(v1, d)
		}
	}
	if len(v1) == 0 {
		return nil
	}
	if err := g.freeze(true); err != nil {
		return err
	}
	var err error
	for _, d := range v1 {
		for _, pid := range g.Members() {
			if e := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); e != nil && err == nil {
				err = fmt.Errorf("contain: move into %s: %w", d, e)
			}
		}
	}
	if e := g.freeze(false); err == nil {
		err = e
	}
	return err
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
	return waitEvent(ctx, g.dir, "frozen 1", time.Millisecond)
}

// Members returns the pids in the group now, those in cgroups a program
// made inside it included.
func (g *Group) Members() []int {
	var pids []int
	for dirs := []string{g.dir}; len(dirs) > 0; {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		for _, f := range strings.Fields(readFile(filepath.Join(d, "cgroup.procs"))) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		// A cgroup directory's link count is 2 and one for each cgroup
		// inside it: one stat spares listing its thirty-odd files.
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil && st.Nlink <= 2 {
			continue
		}
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(d, e.Name()))
			}
		}
	}
	return pids
}

// Left reports whether process pid has left the group (and the cgroups
// inside it) for another cgroup; false for a process that is gone.
func (g *Group) Left(pid int) bool {
	p := v2Path(readFile("/proc/" + strconv.Itoa(pid) + "/cgroup"))
	// An exiting process keeps its cgroup here after it left cgroup.procs.
	return p != "" && p != g.rel && !strings.HasPrefix(p, g.rel+"/")
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

// Kill sends SIGKILL to every process in the group and the cgroups inside
// it at once (cgroup.kill): nothing can fork its way out while it runs.
func (g *Group) Kill() error {
	return writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
}

// WaitEmpty waits until no process is left in the group or the cgroups
// inside it ("populated 0"), woken by the kernel's notice on
// cgroup.events, or until ctx ends.
func (g *Group) WaitEmpty(ctx context.Context) error {
	return waitEvent(ctx, g.dir, "populated 0", 50*time.Millisecond)
}

// Populated reports whether a process is left in the group or the
// cgroups inside it; true when the kernel cannot say.
func (g *Group) Populated() bool {
	return !slices.Contains(strings.Split(readFile(filepath.Join(g.dir, "cgroup.events")), "\n"), "populated 0")
}

// WaitEmpty waits until no process is left in any group of the Host
// (one notice for all of them), or until ctx ends.
func (h *Host) WaitEmpty(ctx context.Context) error {
	return waitEvent(ctx, h.dir, "populated 0", 50*time.Millisecond)
}

// Kill sends SIGKILL to every process of every group of the Host at once.
func (h *Host) Kill() error {
	return writeFile(filepath.Join(h.dir, "cgroup.kill"), "1")
}

// waitEvent waits until the cgroup.events of the cgroup dir holds the
// line want, looking at least every interval.
func waitEvent(ctx context.Context, dir, want string, every time.Duration) error {
	fd, err := unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
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

// Remove removes the group's cgroups, those a program made inside them
// first; it fails while processes are left.
func (g *Group) Remove() error {
	err := g.TryRemove()
	// A process that has just been killed holds its cgroup until it is
	// reaped (by init, when it was orphaned), a moment after the group
	// reads as empty: the kernel says nothing when that happens, so a
	// cgroup busy with nothing but the dying is tried again for a while
	// (up to DyingBound: on a loaded machine the reaper may run late). One
	// a live process holds (a frozen one, say) fails at once.
	for deadline := time.Now().Add(DyingBound); errors.Is(err, unix.EBUSY) && onlyDying(g.pidsDir, g.dir) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		err = removeAll(g.pidsDir, g.dir)
	}
	return err
}

// TryRemove is Remove without waiting for the dying: it fails (EBUSY)
// while any process is left, even one that is only waiting to be reaped.
// A cgroup it removed stays removed when it fails on another.
func (g *Group) TryRemove() error {
	g.closeFD()
	return removeAll(g.pidsDir, g.dir)
}

// onlyDying reports whether every process listed in the cgroups dirs
// (those that are not "") is gone or a zombie.
func onlyDying(dirs ...string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, f := range strings.Fields(readFile(filepath.Join(d, "cgroup.procs"))) {
			stat := readFile("/proc/" + f + "/stat")
			if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' {
				return false
			}
		}
	}
	return true
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

// readFile reads a small kernel file (a cgroup's, a process's) with
// plain system calls: os.ReadFile would also stat it and offer it to the
// runtime's poller, which Close pays for thousands of times.
func readFile(path string) string {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var out []byte
	for {
		n, err := unix.Read(fd, buf[:])
		if n <= 0 || err != nil {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
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
