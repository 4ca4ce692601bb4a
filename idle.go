package agentpty

import (
	"sync"
	"time"
)

// idleClock is the host's bounds on a session (Options.IdleTimeout,
// MaxLifetime).
type idleClock struct {
	mu         sync.Mutex  // a leaf: nothing is taken under it
	idle, life *time.Timer // nil once stopped
	timeout    time.Duration
	calls      int // calls in progress; the idle clock waits for none
}

// arm starts the bounds, each of them that is not zero: reap runs once the
// session has been idle for idle, or has lived for life.
func (c *idleClock) arm(idle, life time.Duration, reap func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeout = idle
	if idle > 0 {
		c.idle = time.AfterFunc(idle, reap)
	}
	if life > 0 {
		c.life = time.AfterFunc(life, reap)
	}
}

// use stops the idle clock for a call; the func it returns restarts it
// once no call is in progress.
func (c *idleClock) use() func() {
	c.mu.Lock()
	c.calls++
	if c.idle != nil {
		c.idle.Stop()
	}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.calls--; c.calls == 0 && c.idle != nil {
			c.idle.Reset(c.timeout)
		}
	}
}

// stop stops both bounds for good: a call returning after the kill does
// not rearm them.
func (c *idleClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range []*time.Timer{c.idle, c.life} {
		if t != nil {
			t.Stop()
		}
	}
	c.idle, c.life = nil, nil
}
