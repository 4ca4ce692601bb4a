package agentpty

import (
	"context"
	"time"
)

// idleClock is the host's bounds on a session (Options.IdleTimeout,
// MaxLifetime); guarded by Session.mu.
type idleClock struct {
	idle, life *time.Timer // nil once killed
	calls      int         // calls in progress; the idle clock waits for none
}

// use stops the idle clock for a call; the func it returns restarts it
// once no call is in progress.
func (s *Session) use() func() {
	s.mu.Lock()
	s.clock.calls++
	if s.clock.idle != nil {
		s.clock.idle.Stop()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.clock.calls--; s.clock.calls == 0 && s.clock.idle != nil {
			s.clock.idle.Reset(s.m.opts.IdleTimeout)
		}
	}
}

// armTimers starts the host's bounds on the session. Called with the
// manager's mu held, once the session has its id.
func (s *Session) armTimers() {
	reap := func() { _, _ = s.m.end(context.Background(), s, EventReaped) }
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.m.opts.IdleTimeout; d > 0 {
		s.clock.idle = time.AfterFunc(d, reap)
	}
	if d := s.m.opts.MaxLifetime; d > 0 {
		s.clock.life = time.AfterFunc(d, reap)
	}
}
