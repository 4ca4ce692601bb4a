package agentpty

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// How long and how much query replies may wait to be typed.
const (
	replyTimeout  = time.Second // a program that asked a query but reads nothing
	maxReplyBytes = 4 << 10     // query replies waiting to be typed; more are dropped
)

// Query replies (cursor position, device attributes) go to the program
// through one writer per session, which runs while replies wait: the screen
// never blocks on a program that asked but does not read, and what such a
// program leaves unread beyond maxReplyBytes is dropped, as a terminal
// whose input buffer is full would lose it.

// answerCounter counts the answers on their way to the program, from
// queued to typed (the display, for State).
type answerCounter interface {
	answerQueued()
	answersTyped(n int32)
}

// replier holds the query replies on their way to the reply writer.
type replier struct {
	mu      sync.Mutex // a leaf: nothing is taken under it
	pending []byte     // at most maxReplyBytes; count of them are counted as answers owed (display)
	count   int32
	running bool // the reply writer is running
	stopped bool // the session is being killed: replies are not sent
	wg      sync.WaitGroup
}

// stop drops the replies from now on, and waits for the reply writer
// under way to end after its write.
func (r *replier) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.wg.Wait()
}

// isStopped reports whether stop was called.
func (r *replier) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// queue hands reply, whole replies each beginning with ESC, to the reply
// writer, which types them through t, starting it if it is not running;
// replies that do not fit under maxReplyBytes are dropped. answers
// counts the replies on their way until they are typed (see State).
func (r *replier) queue(reply []byte, answers answerCounter, t *typing) {
	if len(reply) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if room := maxReplyBytes - len(r.pending); len(reply) > room {
		// Whole replies only: each begins with ESC.
		reply = reply[:max(bytes.LastIndexByte(reply[:room+1], 0x1b), 0)]
	}
	if len(reply) > 0 {
		// State counts it as an answer on its way until it is typed.
		answers.answerQueued()
		r.count++
	}
	r.pending = append(r.pending, reply...)
	if !r.running && len(r.pending) > 0 {
		r.running = true
		r.wg.Add(1)
		go r.write(answers, t)
	}
}

// write types the queued replies until none is left. A write the program
// does not take within replyTimeout is dropped.
func (r *replier) write(answers answerCounter, t *typing) {
	defer r.wg.Done()
	var batch []byte
	for {
		r.mu.Lock()
		batch, r.pending = r.pending, batch[:0]
		n := r.count
		r.count = 0
		if len(batch) == 0 || r.stopped {
			r.running = false
			r.pending = nil
			r.mu.Unlock()
			answers.answersTyped(n)
			return
		}
		r.mu.Unlock()
		_, _ = t.write(context.Background(), batch, time.Now().Add(replyTimeout))
		answers.answersTyped(n)
	}
}
