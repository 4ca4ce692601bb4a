package sshpty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/remote"
	"golang.org/x/crypto/ssh"
)

// terminal is one command on the host under a pseudo-terminal: one
// session channel of the connection. It implements agentpty.Terminal.
// The channel is its transport; remote's Output and Input do the rest.
type terminal struct {
	b     *Backend
	name  string
	sess  *ssh.Session
	chIn  io.Writer // the channel's
	info  *hostInfo
	pid   int    // set by Start before the terminal is returned
	nonce string // of the marks written into the terminal's output
	held  bool   // it holds the backend's probe shell

	out *remote.Output
	in  *remote.Input

	exited  chan struct{} // closed once watch knows how the command ended
	status  agentpty.ExitStatus
	waitErr error

	closeOnce sync.Once
	closedCh  chan struct{} // closed by Close

	order syncer            // orders a probe after the input written before it
	cache remote.ProbeCache // what the probes found, and what happened since
}

func newTerminal(b *Backend, name, nonce string, sess *ssh.Session, in io.Writer, info *hostInfo) *terminal {
	t := &terminal{b: b, name: name, nonce: nonce, sess: sess, chIn: in, info: info, in: remote.NewInput(), exited: make(chan struct{}), closedCh: make(chan struct{})}
	t.out = remote.NewOutput(nonce, t.cache.Output)
	return t
}

// copyIn sends what Write hands over on the channel, and asks for a
// probe's order after each chunk. A channel's write blocks only while
// the host's window is full (the command does not read its input).
func (t *terminal) copyIn() {
	buf := make([]byte, remote.WriteChunk)
	for {
		n, err := t.in.Read(buf)
		if err != nil {
			return
		}
		if _, err := t.chIn.Write(buf[:n]); err != nil {
			t.in.Close(t.writeErr(err))
			return
		}
		t.order.wrote(t.sess)
	}
}

// awaitPID waits for the start mark and returns the process id (0 when
// the command ended or the host printed too much before the mark).
func (t *terminal) awaitPID(ctx context.Context) (int, error) {
	payload := t.out.AwaitStart(ctx)
	if err := ctx.Err(); err != nil && payload == "" {
		return 0, fmt.Errorf("%s (%s): start: %w", t.b, t.name, err)
	}
	if payload == "nodir" {
		return 0, fmt.Errorf("%w: %s: %s: no working directory there", agentpty.ErrInvalid, t.name, t.b)
	}
	return remote.PID(payload), nil
}

// Read returns what the command wrote, io.EOF once the host closed the
// channel, and io.ErrClosedPipe after Close.
func (t *terminal) Read(p []byte) (int, error) { return t.out.Read(p) }

// Write types p; see remote.Input for the deadline.
func (t *terminal) Write(p []byte) (int, error) {
	t.changed()
	defer t.changed() // and once it went: a probe begun in between may have looked before it
	return t.in.Write(p)
}

// writeErr says why a write failed: the command's end, or the connection's.
func (t *terminal) writeErr(err error) error {
	select {
	case <-t.exited:
		if t.waitErr != nil {
			return t.waitErr
		}
	default:
	}
	if errors.Is(err, io.EOF) && !t.b.alive() {
		return &LostError{Backend: t.b.String(), Session: t.name, Err: err}
	}
	return err
}

// changed counts input, a signal or a resize: a probe's answer from
// before it is not reused.
func (t *terminal) changed() { t.cache.Changed() }

// SetWriteDeadline bounds Write, as on an os.File.
func (t *terminal) SetWriteDeadline(tm time.Time) error {
	t.in.SetDeadline(tm)
	return nil
}

// Resize sends window-change; the host's kernel tells the command.
func (t *terminal) Resize(cols, rows int) error {
	defer t.changed()
	if err := t.sess.WindowChange(rows, cols); err != nil {
		return t.writeErr(err)
	}
	return nil
}

// Signal sends sig to the terminal's foreground process group: through
// the probe shell (kill to the group /proc names) on a Linux host,
// otherwise as a "signal" request, which OpenSSH (7.9 and later) delivers
// to the command's own process group, except on a root login.
func (t *terminal) Signal(sig os.Signal) error {
	name, ok := signalName(sig)
	if !ok {
		return fmt.Errorf("%w: %s: signal %v has no name the host knows", agentpty.ErrInvalid, t.name, sig)
	}
	defer t.changed()
	if t.held {
		if out, err := t.b.shellRun(context.Background(), fmt.Sprintf("sig %d %s", t.pid, name), false); err == nil && bytes.Contains(out, []byte("sent")) {
			return nil
		}
	}
	if err := t.sess.Signal(ssh.Signal(name)); err != nil {
		return t.writeErr(err)
	}
	return nil
}

// watch waits for exit-status or exit-signal. A channel that closes
// without either, on a connection that is gone, is a lost connection.
func (t *terminal) watch() {
	err := t.sess.Wait()
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		t.status = agentpty.ExitStatus{}
	case errors.As(err, &exit) && exit.Signal() != "":
		t.status = agentpty.ExitStatus{Code: -1, Signal: "SIG" + exit.Signal()}
	case errors.As(err, &exit):
		t.status = agentpty.ExitStatus{Code: exit.ExitStatus()}
	case errors.As(err, &missing) && !t.b.alive():
		t.waitErr = &LostError{Backend: t.b.String(), Session: t.name, Err: io.EOF}
	case errors.As(err, &missing):
		t.waitErr = fmt.Errorf("%s (%s): the channel closed without an exit status", t.b, t.name)
	default:
		t.waitErr = fmt.Errorf("%s (%s): %w", t.b, t.name, err)
	}
	close(t.exited)
}

// Wait returns how the command ended; after Close, at once, with an
// error if the host had not said yet.
func (t *terminal) Wait() (agentpty.ExitStatus, error) {
	select {
	case <-t.exited:
		return t.status, t.waitErr
	case <-t.closedCh:
		select {
		case <-t.exited:
			return t.status, t.waitErr
		default:
		}
		return agentpty.ExitStatus{Code: -1}, fmt.Errorf("%s (%s): the terminal was closed before the command's exit was known", t.b, t.name)
	}
}

// Close closes the channel: a Read or Write under way returns, and the
// host hangs up the terminal if the command still runs.
func (t *terminal) Close() error {
	t.closeOnce.Do(func() {
		t.out.Close()
		t.in.Close(io.ErrClosedPipe)
		close(t.closedCh)
		t.sess.Close()
		if t.held {
			t.b.release()
		}
	})
	return nil
}

// PID is the command's process id on the host; 0 when it is unknown.
func (t *terminal) PID() int { return t.pid }

// stateTerminal is a terminal on a Linux host whose /proc the probe shell
// reads: it adds agentpty.StateReader.
type stateTerminal struct{ *terminal }

var (
	_ agentpty.Terminal    = (*terminal)(nil)
	_ agentpty.StateReader = stateTerminal{}
)
