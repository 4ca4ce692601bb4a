package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// node is the kubelet's half: exec requests served by the container
// runtime's streaming code, the command run on a local pty as a runtime
// runs it in the container.
type node struct {
	env      []string      // the "container's" environment
	outDelay time.Duration // see OutputDelay
	inDelay  time.Duration // see InputDelay

	mu    sync.Mutex // guards execs
	execs map[int]bool
}

// hangup does at once what closing their terminals does to the commands
// of streams whose API server died: SIGHUP to each one's process group,
// without waiting for each stream's end to reach its terminal.
func (n *node) hangup() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for pid := range n.execs {
		_ = unix.Kill(-pid, unix.SIGHUP)
		_ = unix.Kill(-pid, unix.SIGCONT)
	}
}

func (n *node) track(pid int, live bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.execs == nil {
		n.execs = map[int]bool{}
	}
	if live {
		n.execs[pid] = true
	} else {
		delete(n.execs, pid)
	}
}

func (n *node) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// /exec/NAMESPACE/POD/CONTAINER?command=...
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/exec/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, req)
		return
	}
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := req.URL.Query()["command"]
	remotecommand.ServeExec(w, req, n, parts[1], "uid-"+parts[1], parts[2], cmd, opts,
		4*time.Hour, remotecommand.DefaultStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// ExecInContainer runs cmd under a pty of its own, as a session leader
// with the pty as its controlling terminal (as runc does for an exec with
// a TTY), applies the resize channel, and hangs the terminal up when the
// stream's input ends (the connection closed). A signal's death is
// reported as 128+signal, as container runtimes report it.
func (n *node) ExecInContainer(ctx context.Context, name, uid, container string, argv []string,
	in io.Reader, out, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	if len(argv) == 0 {
		return errors.New("no command")
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = n.env
	c.Dir = "/"
	if !strings.Contains(argv[0], "/") {
		// A runtime finds the program in the container's PATH, not the
		// node's.
		c.Path, c.Err = lookPathIn(argv[0], n.env)
	}
	if !tty {
		return n.execPipes(c, in, out, stderr)
	}
	return n.execTTY(c, in, out, resize)
}

// lookPathIn finds name in the directories of env's PATH (its last).
func lookPathIn(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in the container's $PATH", name)
}

// execTTY runs c on a terminal of the size the client sends first, as the
// kubelet does for a TTY exec: the stream's input typed into it, its
// output copied out, later sizes applied, and the terminal closed when
// the stream goes.
func (n *node) execTTY(c *exec.Cmd, in io.Reader, out io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
	ptmx, err := startTTY(c, firstSize(resize))
	if err != nil {
		return err
	}
	n.track(c.Process.Pid, true)
	defer n.track(c.Process.Pid, false)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		w := io.Writer(out)
		if n.outDelay > 0 {
			w = delayed{out, n.outDelay}
		}
		_, _ = io.Copy(w, ptmx)
	}()
	hangup := make(chan struct{})
	go func() {
		if in != nil {
			w := io.Writer(ptmx)
			if n.inDelay > 0 {
				w = delayed{ptmx, n.inDelay}
			}
			_, _ = io.Copy(w, in)
		}
		close(hangup)
	}()
	go followSizes(ptmx, resize)
	exited := make(chan struct{})
	go func() {
		select {
		case <-hangup: // the stream is gone: close the terminal, as a dropped connection does
			_ = ptmx.Close()
		case <-exited:
		}
	}()
	werr := c.Wait()
	close(exited)
	// As a runtime does, the stream ends once the terminal is drained: its
	// read fails (EIO) when no process holds it any more. A background job
	// that holds it would keep a runtime's stream open until it ends; here
	// it gets drainLimit.
	select {
	case <-outDone:
	case <-time.After(drainLimit):
	}
	_ = ptmx.Close()
	<-outDone
	return exitError(werr)
}

// drainLimit bounds how long a command's terminal is read after it
// exited while another process (a background job) still holds it.
const drainLimit = 5 * time.Second

// firstSizeLimit bounds the wait for the client's first size, which it
// sends as the stream opens: on a loaded machine that may take seconds.
const firstSizeLimit = 10 * time.Second

// startTTY starts c as pty.StartWithSize does, on a master in
// non-blocking mode: creack/pty's ioctls leave it blocking, and a blocking
// master's Close would not end the copy reading it (the drain's bound and
// a closed stream's hangup rely on that).
func startTTY(c *exec.Cmd, size *pty.Winsize) (*os.File, error) {
	ptmx, err := pty.StartWithSize(c, size)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Dup(int(ptmx.Fd()))
	ptmx.Close()
	if err == nil {
		unix.CloseOnExec(fd)
		if err = unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// delayed writes each chunk d after it was handed over.
type delayed struct {
	w io.Writer
	d time.Duration
}

func (d delayed) Write(p []byte) (int, error) {
	time.Sleep(d.d)
	return d.w.Write(p)
}

// firstSize is the size the client sends as the stream opens, or zero if
// none comes within firstSizeLimit.
func firstSize(resize <-chan remotecommand.TerminalSize) *pty.Winsize {
	var size pty.Winsize
	if resize == nil {
		return &size
	}
	select {
	case s, ok := <-resize:
		if ok {
			size = pty.Winsize{Cols: s.Width, Rows: s.Height}
		}
	case <-time.After(firstSizeLimit):
	}
	return &size
}

// followSizes applies each later size to the terminal until resize is
// closed. Through SyscallConn: Fd would race with Close and put the master
// in blocking mode.
func followSizes(ptmx *os.File, resize <-chan remotecommand.TerminalSize) {
	rc, err := ptmx.SyscallConn()
	for s := range resize {
		if err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: s.Width, Row: s.Height})
			})
		}
	}
}

// execPipes runs c without a terminal, its output and errors on streams
// of their own.
func (n *node) execPipes(c *exec.Cmd, in io.Reader, out, stderr io.WriteCloser) error {
	if in != nil {
		c.Stdin = in
	}
	if out != nil {
		c.Stdout = out
	}
	if stderr != nil {
		c.Stderr = stderr
	}
	c.WaitDelay = time.Second // a stdin that never ends must not hold Wait
	return exitError(c.Run())
}

// exitError is how a runtime reports the command's end: its exit code,
// or 128+signal for a signal's death.
func exitError(werr error) error {
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return utilexec.CodeExitError{Err: werr, Code: 128 + int(ws.Signal())}
		}
		return utilexec.CodeExitError{Err: werr, Code: ee.ExitCode()}
	}
	return werr
}

func defaultEnv() []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=standin"}
	if h, err := os.UserHomeDir(); err == nil {
		env = append(env, "HOME="+h)
	}
	return env
}
