package sshpty

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentpty/agentpty"
	"golang.org/x/crypto/ssh"
)

// dialer opens another connection to the host; stop, when not nil, ends
// what it added to the connection (keepalives) once the connection is
// closed.
type dialer func(ctx context.Context) (c *ssh.Client, stop func(), err error)

// newSession opens a session channel on the first connection that takes
// it: this one, then those dial added (newest first: the older ones were
// full when it was dialed), then one dial adds now. A server that refuses
// the channel is at its limit (OpenSSH says only "open failed" and logs
// "no more sessions"): without dial the start fails with an error that
// says so, at once.
func (b *Backend) newSession(ctx context.Context, name string) (*Backend, *ssh.Session, error) {
	sess, err := b.client.NewSession()
	if err == nil {
		return b, sess, nil
	}
	if !refused(err) {
		return nil, nil, b.lostOr(name, err)
	}
	if b.dial == nil {
		return nil, nil, b.limitError(name, err, nil)
	}
	b.grow.Lock()
	defer b.grow.Unlock()
	b.mu.Lock()
	more := slices.Clone(b.more)
	b.mu.Unlock()
	for i := len(more) - 1; i >= 0; i-- {
		// A connection that is lost or full is passed over; the start
		// fails only when dial fails too.
		if sess, err := more[i].client.NewSession(); err == nil {
			return more[i], sess, nil
		}
	}
	conn, err := b.addConn(ctx)
	if err != nil {
		return nil, nil, b.limitError(name, err, errDial)
	}
	sess, err = conn.client.NewSession()
	if err != nil {
		return nil, nil, conn.lostOr(name, err)
	}
	return conn, sess, nil
}

// addConn dials another connection to the host and keeps it until Close.
func (b *Backend) addConn(ctx context.Context) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, stop, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	conn := &Backend{client: c, host: b.host, stop: stop, parent: b}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		go conn.Close()
		return nil, fmt.Errorf("the backend is closed: %w", agentpty.ErrClosed)
	}
	b.more = append(b.more, conn)
	return conn, nil
}

// errDial marks a limit error whose Options.Dial failed.
var errDial = errors.New("Options.Dial failed")

// refused reports a channel the server refused while the connection
// stays up.
func refused(err error) bool {
	var oc *ssh.OpenChannelError
	return errors.As(err, &oc)
}

// limitError names the server's session limit as the reason a start
// failed: err is the server's refusal, or dial's error when how is
// errDial.
func (b *Backend) limitError(name string, err, how error) error {
	if how == nil {
		return fmt.Errorf("%s (%s): %w: the server refused another session channel on the connection, as sshd does past its MaxSessions (10 unless sshd_config says otherwise; the probe shell is one of them); sshpty.Options.Dial lets the backend open more connections (%w)", b, name, agentpty.ErrTooManySessions, err)
	}
	return fmt.Errorf("%s (%s): %w: the server refused another session channel, as sshd does past its MaxSessions, and %w: %w", b, name, agentpty.ErrTooManySessions, how, err)
}
