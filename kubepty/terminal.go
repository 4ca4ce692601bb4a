package kubepty

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// LostError is how a session ends whose exec stream broke before its
// status arrived: the API server or the node went away, or the network
// between. The command's fate is unknown.
type LostError struct {
	Backend string // "kube NAMESPACE/POD/CONTAINER"
	Session string // the session's id
	Err     error  // what the stream reported; nil when it ended silently
}

func (e *LostError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("agentpty: %s: %s: connection lost (the stream ended without the command's status)", e.Session, e.Backend)
	}
	return fmt.Sprintf("agentpty: %s: %s: connection lost: %v", e.Session, e.Backend, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// Start runs cmd in the container under a new terminal, as
// `env AGENTPTY_ID=NONCE VARS... ARGV...` (in cmd.Dir through sh when
// one is given), and returns once the exec stream is established. A
// missing pod is an error wrapping ErrNoPod.
func (b *Backend) Start(ctx context.Context, cmd agentpty.Command) (agentpty.Terminal, error) {
	if len(cmd.Argv) == 0 {
		return nil, fmt.Errorf("%w: %s: %s: empty command", agentpty.ErrInvalid, cmd.Name, b)
	}
	t := newTerminal(b, cmd)
	exe, err := b.executor(t.argv(cmd), true, true, false, &t.watch)
	if err != nil {
		return nil, fmt.Errorf("agentpty: %s: %s: %w", cmd.Name, b, err)
	}
	go t.stream(exe)
	select {
	case <-t.ready:
		return t, nil
	case <-t.exited:
		// Ended before its streams were set up: the request failed. A
		// missing pod says so only to a GET.
		_, werr := t.Wait()
		if werr == nil { // it ran, and ended before the stream asked for a size
			return t, nil
		}
		t.Close()
		if _, err := b.getPod(ctx); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("agentpty: %s: %s: exec: %w", cmd.Name, b, errors.Unwrap(werr))
	case <-ctx.Done():
		t.Close()
		t.Wait()
		return nil, fmt.Errorf("agentpty: %s: start on %s: %w", cmd.Name, b, ctx.Err())
	}
}

// terminal is one command under an exec stream's TTY. It implements
// agentpty.Terminal and agentpty.StateReader.
type terminal struct {
	b     *Backend
	name  string
	nonce string
	watch statusWatch

	ctx    context.Context // the stream's; Close cancels it, which ends the stream
	cancel context.CancelFunc

	in      *input
	outR    *io.PipeReader
	outW    *io.PipeWriter
	writing atomic.Int32 // writes of output under way: output waiting for Read
	unread  atomic.Bool  // the last Read returned bytes and no Read has begun since

	sizes     chan remotecommand.TerminalSize // the newest size not yet sent
	sizeMu    sync.Mutex                      // orders Resize's replacement of it
	ready     chan struct{}                   // closed once the stream asks for the size: it is set up
	readyOnce sync.Once

	exited  chan struct{} // closed when the stream has ended
	status  agentpty.ExitStatus
	waitErr error

	leader atomic.Pointer[leader] // the command's process, once a probe found it

	closeOnce sync.Once
}

// leader is the command's process in the container: its pid and start
// time, which tell it from a later process given the same pid.
type leader struct {
	pid   int
	start string
}

func newTerminal(b *Backend, cmd agentpty.Command) *terminal {
	var n [12]byte
	_, _ = rand.Read(n[:])
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	t := &terminal{b: b, name: cmd.Name, nonce: hex.EncodeToString(n[:]), ctx: ctx, cancel: cancel,
		in: newInput(), outR: outR, outW: outW,
		sizes: make(chan remotecommand.TerminalSize, 1), ready: make(chan struct{}), exited: make(chan struct{})}
	t.sizes <- remotecommand.TerminalSize{Width: uint16(cmd.Cols), Height: uint16(cmd.Rows)}
	return t
}

// argv is what the container runs: the command under env, which sets the
// nonce and the session's variables, in cmd.Dir when one is given.
func (t *terminal) argv(cmd agentpty.Command) []string {
	argv := append([]string{"env", "AGENTPTY_ID=" + t.nonce}, cmd.Env...)
	argv = append(argv, cmd.Argv...)
	if cmd.Dir != "" {
		argv = append([]string{"sh", "-c", `cd -- "$1" || exit 127; shift; exec "$@"`, "sh", cmd.Dir}, argv...)
	}
	return argv
}

// stream runs the exec until it ends and records how.
func (t *terminal) stream(exe remotecommand.Executor) {
	err := exe.StreamWithContext(t.ctx, remotecommand.StreamOptions{
		Stdin: t.in, Stdout: (*outWriter)(t), Tty: true, TerminalSizeQueue: t,
	})
	var code exec.CodeExitError
	switch {
	case err == nil && t.watch.lost():
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name}
	case err == nil:
		t.status = agentpty.ExitStatus{Code: 0}
	case errors.As(err, &code):
		t.status = agentpty.ExitStatus{Code: code.Code}
	case t.ctx.Err() != nil:
		t.waitErr = fmt.Errorf("agentpty: %s: %s: the terminal was closed before the command exited", t.name, t.b)
	default:
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name, Err: err}
	}
	t.outW.Close()
	t.in.close()
	close(t.exited)
}

// outWriter is the stream's stdout: it counts writes under way, which are
// output the session has not read yet.
type outWriter terminal

func (w *outWriter) Write(p []byte) (int, error) {
	w.writing.Add(1)
	defer w.writing.Add(-1)
	return w.outW.Write(p)
}

// Next gives the stream the terminal's size: the first call says the
// stream is set up; later ones wait for a Resize. nil ends the queue.
func (t *terminal) Next() *remotecommand.TerminalSize {
	t.readyOnce.Do(func() { close(t.ready) })
	select {
	case s := <-t.sizes:
		return &s
	case <-t.ctx.Done():
		return nil
	case <-t.exited:
		return nil
	}
}

// Read returns what the command wrote to the terminal.
func (t *terminal) Read(p []byte) (int, error) {
	t.unread.Store(false)
	n, err := t.outR.Read(p)
	t.unread.Store(n > 0)
	return n, err
}

// Write types p: it returns once the stream took it.
func (t *terminal) Write(p []byte) (int, error) {
	select {
	case <-t.exited:
		return 0, t.writeErr()
	default:
	}
	return t.in.write(p, t.exited)
}

func (t *terminal) writeErr() error {
	if t.waitErr != nil {
		return t.waitErr
	}
	return io.ErrClosedPipe
}

// SetWriteDeadline bounds Write.
func (t *terminal) SetWriteDeadline(tm time.Time) error {
	t.in.deadline.set(tm)
	return nil
}

// Resize sends the new size on the resize channel; the node's runtime sets
// it on the terminal, and the kernel tells the command (SIGWINCH). Only the
// newest size not yet sent is kept.
func (t *terminal) Resize(cols, rows int) error {
	t.sizeMu.Lock()
	defer t.sizeMu.Unlock()
	select {
	case <-t.sizes:
	default:
	}
	t.sizes <- remotecommand.TerminalSize{Width: uint16(cols), Height: uint16(rows)}
	return nil
}

// Wait blocks until the stream ends: the exit code from the status
// channel (a runtime reports a command a signal ended as 128 plus the
// signal's number), or a LostError.
func (t *terminal) Wait() (agentpty.ExitStatus, error) {
	<-t.exited
	return t.status, t.waitErr
}

// Close ends the stream: the node closes the terminal, which hangs it up
// where the runtime does so (see the package's README section).
func (t *terminal) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		t.in.close()
		t.outR.CloseWithError(os.ErrClosed)
	})
	return nil
}

// PID is the command's process id in the container, once a probe found it.
func (t *terminal) PID() int {
	if l := t.leader.Load(); l != nil {
		return l.pid
	}
	return 0
}

// OutputPending reports output the stream handed over that Read has not
// returned yet.
func (t *terminal) OutputPending() bool {
	return t.writing.Load() > 0 || t.unread.Load()
}

var (
	_ agentpty.Terminal    = (*terminal)(nil)
	_ agentpty.StateReader = (*terminal)(nil)
)
