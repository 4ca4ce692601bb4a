package agentpty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// Attach lets a person watch the session live and type into it, through
// rw: a terminal in raw mode, a network connection, one side of a pipe.
// The person sees the screen as it is now first, redrawn from the
// session's screen (colours, cursor, the alternate screen when it is up),
// then every byte the program writes. What the person types goes to the
// program; several people may be attached at once, and the one who
// attached first types while the others' keys are dropped (the next in
// line takes over when that one leaves; a dropped key rings the bell on the
// person's terminal). What the program prints in
// answer reaches the model's next read like any other output; the tools
// do not say who typed it.
//
// Attach returns when ctx ends (the error wraps ctx.Err()), when reading
// rw ends (nil when the person left: io.EOF, rw closed, a terminal hung
// up), when writing
// to rw fails, or when the program's output is complete (nil). It leaves
// the session as it was: the terminal's size and modes are not changed,
// and the person's terminal size is not applied. When rw has
// SetReadDeadline (an *os.File such as a terminal, a net.Conn), a read
// under way is cut short at return; otherwise (or when the file's
// descriptor is in blocking mode, as os.File's Fd leaves it) the read
// goroutine stays until its read returns and drops what it read. A person who falls a
// whole scrollback behind gets the screen redrawn and continues from there.
// While attached, the session does not count as idle.
func (s *Session) Attach(ctx context.Context, rw io.ReadWriter) error {
	defer s.clock.use()()
	t := newTap(false, func(kind byte, p []byte) error {
		if kind != 'o' {
			return nil
		}
		_, err := rw.Write(p)
		return err
	})
	a := &attachment{tap: t}
	redraw, _, _, err := startTap(s, t, "attach")
	if err != nil {
		return err
	}
	s.taps.join(a)
	defer s.taps.leave(a)
	if _, err := rw.Write(redraw); err != nil {
		s.taps.drop(t)
		return fmt.Errorf("agentpty: %s: attach: %w", s.id, err)
	}
	go runTap(s, t)
	typed := make(chan error, 1)
	go attachInput(s, a, rw, typed)

	inputDone := false
	select {
	case <-ctx.Done():
		err = fmt.Errorf("agentpty: %s: attach: %w", s.id, ctx.Err())
	case err = <-typed:
		inputDone = true
		if err != nil {
			err = fmt.Errorf("agentpty: %s: attach: read: %w", s.id, err)
		}
	case <-t.ended():
		if werr := t.failure(); werr != nil && !personLeft(werr) { // a write to a hung-up terminal: the person left
			err = fmt.Errorf("agentpty: %s: attach: write: %w", s.id, werr)
		}
	}
	a.leave()
	t.stopTap()
	if d, ok := rw.(interface{ SetWriteDeadline(time.Time) error }); ok && ctx.Err() != nil {
		_ = d.SetWriteDeadline(time.Now()) // a person's stalled terminal must not hold the return
		defer d.SetWriteDeadline(time.Time{})
	}
	<-t.ended()
	// A descriptor in blocking mode (an Fd call makes it so) takes a
	// deadline but cannot honour it: its read is left to end on its own.
	if d, ok := rw.(interface{ SetReadDeadline(time.Time) error }); ok && !inputDone && !readBlocks(rw) {
		if d.SetReadDeadline(time.Now()) == nil {
			<-typed
			_ = d.SetReadDeadline(time.Time{})
		}
	}
	return err
}

// attachment is one person attached.
type attachment struct {
	tap  *tap        // what the person sees
	gone atomic.Bool // Attach has returned: what is read now is dropped
}

// leave notes that Attach has returned: what is read now is dropped.
func (a *attachment) leave() { a.gone.Store(true) }

// left reports whether Attach has returned.
func (a *attachment) left() bool { return a.gone.Load() }

// bell rings the person's bell: someone else has the keyboard.
func (a *attachment) bell() { a.tap.queue(tapMark{kind: 'o', data: []byte("\a")}) }

// attachInput types what the person types, while it is their turn.
func attachInput(s *Session, a *attachment, r io.Reader, done chan<- error) {
	buf := make([]byte, 4<<10)
	for {
		n, err := r.Read(buf)
		switch {
		case n == 0 || a.left():
		case s.taps.typist() == a:
			p := buf[:n]
			// A program that has exited or stopped reading drops the keys,
			// as a terminal would; Attach goes on until its output ends.
			_, _ = s.typeInput(context.Background(), p, time.Now().Add(maxWait))
		default:
			a.bell()
		}
		if err != nil {
			if personLeft(err) || (a.left() && errors.Is(err, os.ErrDeadlineExceeded)) {
				err = nil
			}
			done <- err
			return
		}
	}
}

// personLeft reports an error that says the attached person left: end of
// input, their side closed, their terminal hung up (reads and writes both
// fail with EIO then).
func personLeft(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EIO)
}
