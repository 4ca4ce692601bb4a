package agentpty

import (
	"context"
	"time"
)

// use stops the idle clock for a call; the func it returns restarts it
// once no call is in progress.
func (s *Session) use() func() {
	s.mu.Lock()
	s.calls++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.calls--; s.calls == 0 && s.idle != nil {
			s.idle.Reset(s.m.opts.IdleTimeout)
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
		s.idle = time.AfterFunc(d, reap)
	}
	if d := s.m.opts.MaxLifetime; d > 0 {
		s.life = time.AfterFunc(d, reap)
	}
}
