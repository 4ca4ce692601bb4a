package agentpty

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// typing is the session's side of the terminal's input.
type typing struct {
	// mu: one writer at a time on the terminal, input and query replies.
	// It is held across the write, as poll.FD holds its own.
	mu    sync.Mutex
	dying atomic.Bool  // Kill has begun: no more writes; set before, and the terminal closed under, mu
	last  atomic.Int64 // when input was last typed, unix ns; read with lastOutput by State's quietFor
}

// typeInput types input as writeTerminal does, after telling the taps
// (recordings with RecordInput) what is typed: every path that types
// input, not query answers, goes through it.
func (s *Session) typeInput(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	s.tapInput(p)
	return s.writeTerminal(ctx, p, deadline)
}

// writeTerminal types p, giving up at deadline or when ctx ends.
// A write that Kill overtakes fails with ErrNoSession.
func (s *Session) writeTerminal(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	s.typing.mu.Lock()
	defer s.typing.mu.Unlock()
	if s.typing.dying.Load() {
		return 0, s.errKilled()
	}
	s.changing()
	// Most input fits in the local terminal's buffer at once; only what
	// does not needs a deadline.
	defer s.typing.last.Store(time.Now().UnixNano())
	done := 0
	if tw, ok := s.term.(TryWriter); ok {
		if done = tw.TryWrite(p); done == len(p) {
			return done, nil
		}
	}
	p = p[done:]
	_ = s.term.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = s.term.SetWriteDeadline(time.Now()) })
	n, err := s.term.Write(p)
	stop()
	_ = s.term.SetWriteDeadline(time.Time{})
	if err != nil && s.typing.dying.Load() {
		err = s.errKilled()
	}
	return done + n, err
}

func (s *Session) errKilled() error {
	return errorf(ErrNoSession, "%s: the session was killed", s.id)
}

// stopWrites makes every write from now on fail with ErrNoSession and
// wakes one under way.
func (s *Session) stopWrites() {
	s.changing()
	s.typing.dying.Store(true)
	_ = s.term.SetWriteDeadline(time.Now())
}
