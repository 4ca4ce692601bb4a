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
type terminal struct {
	b     *Backend
	name  string
	sess  *ssh.Session
	in    io.Writer
	out   io.Reader
	info  *hostInfo
	pid   int    // set by Start before the terminal is returned
	nonce string // of the marks written into the terminal's output
	held  bool   // it holds the backend's probe shell

	pre []byte // read while looking for the process-id mark; the pump's once it runs

	omu     sync.Mutex // guards the fields below
	ocond   *sync.Cond // signalled when buf, oerr or closed change
	buf     []byte     // read from the channel, not yet returned by Read
	oerr    error      // how the channel's output ended
	closed  bool       // Close was called
	waiting bool       // Read waits for output: none is on its way here
	// fenceSeen is the last mark a probe wrote to the terminal that the
	// pump has taken out of the output (see remote.StripFences).
	fenceSeen int

	wmu      sync.Mutex    // guards the fields below
	deadline time.Time     // SetWriteDeadline's
	wake     chan struct{} // closed when the deadline changes
	pending  chan struct{} // closed when a write that timed out has finished; nil when none

	exited  chan struct{} // closed once watch knows how the command ended
	status  agentpty.ExitStatus
	waitErr error

	closeOnce sync.Once
	closedCh  chan struct{} // closed by Close

	order syncer     // orders a probe after the input written before it
	cache probeCache // what the probes found, and what happened since
}

func newTerminal(b *Backend, name string, sess *ssh.Session, in io.Writer, out io.Reader, info *hostInfo) *terminal {
	t := &terminal{b: b, name: name, sess: sess, in: in, out: out, info: info, wake: make(chan struct{}), exited: make(chan struct{}), closedCh: make(chan struct{})}
	t.ocond = sync.NewCond(&t.omu)
	return t
}

// pumpMax bounds what the pump holds that Read has not taken: beyond it
// the channel's window closes and the host's command waits, as a local
// one does when its terminal is not read.
const pumpMax = 256 << 10

// pump moves the channel's output to buf. A channel's Read returns only
// when the host sends or closes, and OpenSSH keeps a channel open while
// its command lives even after the client closed it: the pump lets Read
// and Close return at once, and ends itself when the host closes the
// channel or the connection goes.
func (t *terminal) pump() {
	t.omu.Lock()
	t.buf = t.pre
	t.pre = nil
	// A Read may be waiting already, and what came with the mark may be
	// all the output for a while: no later chunk would wake it.
	t.ocond.Broadcast()
	t.omu.Unlock()
	p := make([]byte, 32<<10)
	prefix := remote.FencePrefix(t.nonce)
	var carry []byte
	for {
		n, err := t.out.Read(p)
		data := p[:n]
		if len(carry) > 0 {
			data = append(carry, data...)
		}
		var fence int
		data, carry, fence = remote.StripFences(data, prefix, err != nil)
		if len(data) > 0 {
			t.cache.output()
		}
		t.omu.Lock()
		for len(t.buf) >= pumpMax && !t.closed {
			t.ocond.Wait()
		}
		if !t.closed {
			t.buf = append(t.buf, data...) // a copy: data may be p's array, read into again
			if err != nil {
				t.oerr = err
			}
			t.fenceSeen = max(t.fenceSeen, fence)
			t.ocond.Broadcast()
		}
		t.omu.Unlock()
		if err != nil {
			return
		}
	}
}

// fenceWait bounds the wait for a probe's mark: a terminal whose output
// is stopped (Ctrl-S) holds it back.
const fenceWait = 2 * time.Second

// awaitFence waits until the pump has taken out mark n, and so everything
// the program wrote before it; false when it did not come.
func (t *terminal) awaitFence(n int) bool {
	// The deadline before the timer: its wake-up must find it passed.
	deadline := time.Now().Add(fenceWait)
	timer := time.AfterFunc(fenceWait, func() {
		t.omu.Lock()
		t.ocond.Broadcast()
		t.omu.Unlock()
	})
	defer timer.Stop()
	t.omu.Lock()
	defer t.omu.Unlock()
	for t.fenceSeen < n && !t.closed && t.oerr == nil && time.Now().Before(deadline) {
		t.ocond.Wait()
	}
	return t.fenceSeen >= n
}

// maxPre bounds what is read before the process-id mark: output the host
// prints before the command (a PAM banner) passes through, and a host that
// never prints the mark leaves the process id unknown.
const maxPre = 64 << 10

// awaitPID reads the terminal's first output until the mark with nonce,
// keeping everything else for Read, and returns the process id (0 when
// the command ended or the host printed too much before the mark).
func (t *terminal) awaitPID(ctx context.Context, nonce string) (int, error) {
	stop := context.AfterFunc(ctx, func() { t.sess.Close() })
	defer stop()
	mark := []byte(markOSC + nonce + ";")
	buf := make([]byte, 4096)
	for {
		if i := bytes.Index(t.pre, mark); i >= 0 {
			end := bytes.IndexByte(t.pre[i:], '\a')
			if end >= 0 {
				payload := string(t.pre[i+len(mark) : i+end])
				t.pre = append(t.pre[:i:i], t.pre[i+end+1:]...)
				if payload == "nodir" {
					return 0, fmt.Errorf("%w: %s: %s: no working directory there", agentpty.ErrInvalid, t.name, t.b)
				}
				return parsePID(payload), nil
			}
		}
		if len(t.pre) > maxPre {
			return 0, nil
		}
		n, err := t.out.Read(buf)
		t.pre = append(t.pre, buf[:n]...)
		if err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("%s (%s): start: %w", t.b, t.name, ctx.Err())
			}
			return 0, nil // ended before its mark: Read and Wait tell the rest
		}
	}
}

// Read returns what the command wrote, io.EOF once the host closed the
// channel, and io.ErrClosedPipe after Close.
func (t *terminal) Read(p []byte) (int, error) {
	t.omu.Lock()
	defer t.omu.Unlock()
	for len(t.buf) == 0 && t.oerr == nil && !t.closed {
		t.waiting = true
		t.ocond.Wait()
	}
	t.waiting = false
	if len(t.buf) > 0 {
		n := copy(p, t.buf)
		t.buf = t.buf[n:]
		if len(t.buf) == 0 {
			t.buf = nil // the pump's next append starts a fresh array
		}
		t.ocond.Broadcast()
		return n, nil
	}
	if t.closed {
		return 0, io.ErrClosedPipe
	}
	return 0, t.oerr
}

// writeChunk is the most a background write holds: what a write that
// timed out may still deliver after it returned.
const writeChunk = 16 << 10

// Write types p. A channel's write blocks only while the host's window is
// full (the command does not read its input); the deadline is kept by
// writing in the background, a chunk at a time, and a chunk still under
// way when a write gives up goes out before the next write's bytes.
func (t *terminal) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		if err := t.writeChunk(chunk); err != nil {
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

func (t *terminal) writeChunk(p []byte) error {
	t.wmu.Lock()
	for t.pending != nil {
		pend := t.pending
		t.wmu.Unlock()
		if !t.await(pend) {
			return os.ErrDeadlineExceeded
		}
		t.wmu.Lock()
	}
	done := make(chan struct{})
	t.pending = done
	t.wmu.Unlock()
	var err error
	go func() {
		_, err = t.in.Write(p)
		t.wmu.Lock()
		if t.pending == done {
			t.pending = nil
		}
		t.wmu.Unlock()
		if err == nil {
			t.order.wrote(t.sess)
		}
		close(done)
	}()
	t.changed()
	defer t.changed() // and once it went: a probe begun in between may have looked before it
	if !t.await(done) {
		return os.ErrDeadlineExceeded
	}
	if err != nil {
		return t.writeErr(err)
	}
	return nil
}

// await waits for done until the write deadline; false when it passed.
func (t *terminal) await(done chan struct{}) bool {
	for {
		t.wmu.Lock()
		dl, wake := t.deadline, t.wake
		t.wmu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				select {
				case <-done:
					return true
				default:
					return false
				}
			}
			tm := time.NewTimer(d)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-done:
			return true
		case <-timeout:
			return false
		case <-wake:
		}
	}
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
func (t *terminal) changed() { t.cache.changed() }

// SetWriteDeadline bounds Write, as on an os.File.
func (t *terminal) SetWriteDeadline(tm time.Time) error {
	t.wmu.Lock()
	t.deadline = tm
	close(t.wake)
	t.wake = make(chan struct{})
	t.wmu.Unlock()
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
		if out, err := t.helperRun(context.Background(), fmt.Sprintf("sig %d %s", t.pid, name), false); err == nil && bytes.Contains(out, []byte("sent")) {
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
		t.omu.Lock()
		t.closed = true
		t.buf = nil
		t.ocond.Broadcast()
		t.omu.Unlock()
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
