package agentpty

import (
	"context"
	"sync"
)

// lane runs a session's calls one at a time, in the order they arrived: a
// call that finds it busy queues, and leaving hands it to the first in the
// queue.
type lane struct {
	mu     sync.Mutex // guards the fields below; nothing else is taken under it
	busy   bool
	queue  []chan struct{} // closed to hand the lane to that call
	queued func()          // tests: told, outside mu, each time a call queues
}

// enter takes the lane, waiting for the calls queued before this one, or
// gives up when ctx ends.
func (l *lane) enter(ctx context.Context) error {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.queue = append(l.queue, ch)
	queued := l.queued
	l.mu.Unlock()
	if queued != nil {
		queued()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, c := range l.queue {
		if c == ch {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			l.mu.Unlock()
			return ctx.Err()
		}
	}
	l.mu.Unlock()
	l.leave() // handed the lane as ctx ended: pass it on
	return ctx.Err()
}

// leave hands the lane to the first queued call, or frees it.
func (l *lane) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.busy = false
		return
	}
	close(l.queue[0])
	l.queue = l.queue[1:]
}
