package sshpty

import (
	"sync"

	"golang.org/x/crypto/ssh"
)

// syncer orders probes after typed input. Typed input travels on the
// session's channel, a probe on the probe channel: a request on the
// session's channel, answered once the server has taken what came before
// it, keeps a probe from looking at the program before the input reached
// its terminal. A request goes out as soon as a write's bytes are out,
// one at a time (the client waits for each answer in turn), so that a
// probe seldom waits; a write still under way (the window is full) is
// not waited for, as its bytes are not out.
type syncer struct {
	mu       sync.Mutex
	writes   uint64        // writes whose bytes are out
	covered  uint64        // writes an answered request came after
	inFlight chan struct{} // closed when the request under way is answered; nil when none
}

// wrote counts a write whose bytes are out and sends a request for it,
// unless one is under way (the next covers it).
func (y *syncer) wrote(sess *ssh.Session) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.writes++
	if y.inFlight == nil {
		y.send(sess)
	}
}

// send sends a request covering the writes so far. Call with mu held.
func (y *syncer) send(sess *ssh.Session) {
	done, upTo := make(chan struct{}), y.writes
	y.inFlight = done
	go func() {
		// An error is a closed channel or connection: nothing more
		// will reach the terminal, so the writes count as taken.
		_, _ = sess.SendRequest("sync@agentpty", true, nil)
		y.mu.Lock()
		y.covered, y.inFlight = upTo, nil
		if y.writes > upTo {
			y.send(sess)
		}
		y.mu.Unlock()
		close(done)
	}()
}

// wait returns once the server has taken every write that was out when
// it was called.
func (y *syncer) wait() {
	y.mu.Lock()
	target := y.writes
	for y.covered < target {
		done := y.inFlight
		y.mu.Unlock()
		<-done
		y.mu.Lock()
	}
	y.mu.Unlock()
}
