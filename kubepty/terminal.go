package kubepty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/remote"
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

// Start runs cmd in the container under a new terminal, through sh and
// env (startScript), and returns once the command runs. A missing pod is
// an error wrapping ErrNoPod.
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
	pid := remote.PID(t.out.AwaitStart(ctx))
	if pid == 0 && ctx.Err() != nil {
		t.Close()
		t.Wait()
		return nil, fmt.Errorf("agentpty: %s: start on %s: %w", cmd.Name, b, ctx.Err())
	}
	if pid > 0 {
		t.leader.Store(&leader{pid: pid})
	} else if t.out.Err() != nil { // the stream ended before the command ran, or with it
		if _, err := t.Wait(); err != nil {
			return nil, t.startErr(ctx, err)
		}
	}
	return t, nil
}

// startErr says why a start failed: a missing pod says so only to a GET.
func (t *terminal) startErr(ctx context.Context, werr error) error {
	t.Close()
	if _, err := t.b.getPod(ctx); err != nil {
		return err
	}
	return fmt.Errorf("agentpty: %s: %s: exec: %w", t.name, t.b, errors.Unwrap(werr))
}

// terminal is one command under an exec stream's TTY: the stream is its
// transport, remote's Output and Input do the rest. It implements
// agentpty.Terminal and agentpty.StateReader.
type terminal struct {
	b     *Backend
	name  string
	nonce string
	watch statusWatch

	ctx    context.Context // the stream's; Close cancels it, which ends the stream
	cancel context.CancelFunc

	out *remote.Output // the stream's stdout
	in  *remote.Input  // the stream's stdin

	sizes  chan remotecommand.TerminalSize // the newest size not yet sent
	sizeMu sync.Mutex                      // orders Resize's replacement of it

	exited  chan struct{} // closed when the stream has ended
	status  agentpty.ExitStatus
	waitErr error

	leader atomic.Pointer[leader] // the command's process, once a probe found it
	sent   atomic.Uint64          // bit N: signal N was sent to the command (Signal, End)
	// signalling is read-held by a Signal until it knows whether the
	// command was among those its signal reached: an exit that comes
	// meanwhile is read once it does.
	signalling sync.RWMutex

	probes atomic.Uint64     // numbers the probes and their marks
	typed  atomic.Int64      // when a Write last handed input to the stream (UnixNano)
	cache  remote.ProbeCache // the last probe's answer (see EchoOff)

	closeOnce sync.Once
}

// leader is the command's process in the container.
type leader struct{ pid int }

func newTerminal(b *Backend, cmd agentpty.Command) *terminal {
	ctx, cancel := context.WithCancel(context.Background())
	t := &terminal{b: b, name: cmd.Name, nonce: remote.NewNonce(), ctx: ctx, cancel: cancel,
		in: remote.NewInput(), sizes: make(chan remotecommand.TerminalSize, 1), exited: make(chan struct{})}
	t.out = remote.NewOutput(t.nonce, t.cache.Output)
	t.sizes <- remotecommand.TerminalSize{Width: uint16(cmd.Cols), Height: uint16(cmd.Rows)}
	return t
}

// startScript runs in /bin/sh (not the sh of the image's PATH) as the
// command's first moments: it prints its pid in the start mark
// (remote.Output; the command keeps that pid, as exec keeps it), enters
// the directory, and execs env, which sets the nonce and the session's
// variables and runs the command.
const startScript = `printf '` + remote.MarkFormat + `' "$0" "$$"; [ -z "$1" ] || cd -- "$1" || exit 127; shift; exec env "$@"`

// argv is what the container runs: startScript, then the command.
func (t *terminal) argv(cmd agentpty.Command) []string {
	argv := []string{"/bin/sh", "-c", startScript, t.nonce, cmd.Dir, "AGENTPTY_ID=" + t.nonce}
	argv = append(argv, cmd.Env...)
	return append(argv, cmd.Argv...)
}

// stream runs the exec until it ends and records how.
func (t *terminal) stream(exe remotecommand.Executor) {
	err := exe.StreamWithContext(t.ctx, remotecommand.StreamOptions{
		Stdin: t.in, Stdout: t.out, Tty: true, TerminalSizeQueue: t,
	})
	var code exec.CodeExitError
	switch {
	case err == nil && t.watch.lost():
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name}
	case err == nil && !t.watch.spdy.Load() && !t.exitConfirmed():
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name}
	case err == nil:
		t.status = agentpty.ExitStatus{Code: 0}
	case errors.As(err, &code):
		t.signalling.Lock()
		t.status = t.exitStatus(code.Code)
		t.signalling.Unlock()
	case t.ctx.Err() != nil:
		t.waitErr = fmt.Errorf("agentpty: %s: %s: the terminal was closed before the command exited", t.name, t.b)
	default:
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name, Err: err}
	}
	t.out.End(io.EOF) // the command is gone: no probe waits for a mark of it
	t.in.Close(io.ErrClosedPipe)
	close(t.exited)
}

// exitConfirmed checks a WebSocket stream's nil with a probe: client-go
// returns nil also when the connection closed abruptly, and only a
// command that is gone from the container exited 0.
func (t *terminal) exitConfirmed() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	lines, err := t.probe(ctx, "state", "")
	return err == nil && len(lines) > 0 && lines[len(lines)-1] == "gone"
}

// sending notes that sig is on its way to the command itself.
func (t *terminal) sending(sig syscall.Signal) {
	if sig > 0 && sig < 64 {
		t.sent.Or(1 << sig)
	}
}

// unsent takes back sending: the command was not among those sig reached.
func (t *terminal) unsent(sig syscall.Signal) {
	if sig > 0 && sig < 64 {
		t.sent.And(^uint64(1 << sig))
	}
}

// exitStatus is the status for code: a signal's death (see Wait) when the
// session sent the command signal code-128.
func (t *terminal) exitStatus(code int) agentpty.ExitStatus {
	if n := syscall.Signal(code - 128); n > 0 && n < 64 && t.sent.Load()&(1<<n) != 0 {
		if name := signalName(n); name != "" {
			return agentpty.ExitStatus{Code: -1, Signal: name}
		}
	}
	return agentpty.ExitStatus{Code: code}
}

// Next gives the stream the terminal's size, first the initial one, then
// each Resize's. nil ends the queue.
func (t *terminal) Next() *remotecommand.TerminalSize {
	select {
	case s := <-t.sizes:
		return &s
	case <-t.ctx.Done():
		return nil
	case <-t.exited:
		return nil
	}
}

// Read returns what the command wrote to the terminal, less the marks.
func (t *terminal) Read(p []byte) (int, error) { return t.out.Read(p) }

// Write types p: it returns once the stream sent it (see remote.Input).
func (t *terminal) Write(p []byte) (int, error) {
	defer t.cache.Changed()
	n, err := t.in.Write(p)
	if n > 0 {
		t.typed.Store(time.Now().UnixNano())
	}
	if errors.Is(err, io.ErrClosedPipe) {
		select {
		case <-t.exited:
			return n, t.writeErr()
		default:
		}
	}
	return n, err
}

func (t *terminal) writeErr() error {
	if t.waitErr != nil {
		return t.waitErr
	}
	return io.ErrClosedPipe
}

// SetWriteDeadline bounds Write.
func (t *terminal) SetWriteDeadline(tm time.Time) error {
	t.in.SetDeadline(tm)
	return nil
}

// Resize sends the new size on the resize channel; the node's runtime sets
// it on the terminal, and the kernel tells the command (SIGWINCH). Only the
// newest size not yet sent is kept.
func (t *terminal) Resize(cols, rows int) error {
	t.sizeMu.Lock()
	defer t.sizeMu.Unlock()
	defer t.cache.Changed()
	select {
	case <-t.sizes:
	default:
	}
	t.sizes <- remotecommand.TerminalSize{Width: uint16(cols), Height: uint16(rows)}
	return nil
}

// Wait blocks until the stream ends: the exit code from the status
// channel, or a LostError. The exec API has no signal field: a runtime
// reports a command a signal ended as code 128 plus the signal's number.
// Such a code is reported as the signal when the session sent that signal
// to the command itself (Signal to a foreground group the command leads,
// End's TERM, HUP and KILL), and as the code otherwise (a signal from
// elsewhere, or a program that chose that code).
func (t *terminal) Wait() (agentpty.ExitStatus, error) {
	<-t.exited
	return t.status, t.waitErr
}

// Close ends the stream: the node closes the terminal, which hangs it up
// where the runtime does so (see the package's README section).
func (t *terminal) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		t.in.Close(io.ErrClosedPipe)
		t.out.Close()
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
func (t *terminal) OutputPending() bool { return t.out.Pending() }

var (
	_ agentpty.Terminal    = (*terminal)(nil)
	_ agentpty.StateReader = (*terminal)(nil)
)
