package agentpty

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Query replies (cursor position, device attributes) go to the program
// through one writer per session, which runs while replies wait: the screen
// never blocks on a program that asked but does not read, and what such a
// program leaves unread beyond maxReplyBytes is dropped, as a terminal
// whose input buffer is full would lose it.

// replier holds the query replies on their way to the reply writer.
type replier struct {
	mu      sync.Mutex // a leaf: nothing is taken under it
	queue   []byte     // at most maxReplyBytes; count of them are counted in display.answering
	count   int32
	running bool // the reply writer is running
	stopped bool // the session is being killed: replies are not sent
	wg      sync.WaitGroup
}

// stop drops the replies from now on; the reply writer under way ends
// after its write.
func (r *replier) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// isStopped reports whether stop was called.
func (r *replier) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// queueReply hands reply, whole replies each beginning with ESC, to the
// reply writer, starting it if it is not running; replies that do not fit
// under maxReplyBytes are dropped.
func (s *Session) queueReply(reply []byte) {
	if len(reply) == 0 {
		return
	}
	s.rep.mu.Lock()
	defer s.rep.mu.Unlock()
	if s.rep.stopped {
		return
	}
	if room := maxReplyBytes - len(s.rep.queue); len(reply) > room {
		// Whole replies only: each begins with ESC.
		reply = reply[:max(bytes.LastIndexByte(reply[:room+1], 0x1b), 0)]
	}
	if len(reply) > 0 {
		// State counts it as an answer on its way until it is typed.
		s.disp.answerQueued()
		s.rep.count++
	}
	s.rep.queue = append(s.rep.queue, reply...)
	if !s.rep.running && len(s.rep.queue) > 0 {
		s.rep.running = true
		s.rep.wg.Add(1)
		go s.writeReplies()
	}
}

// writeReplies types the queued replies until none is left. A write the
// program does not take within replyTimeout is dropped.
func (s *Session) writeReplies() {
	defer s.rep.wg.Done()
	var batch []byte
	for {
		s.rep.mu.Lock()
		batch, s.rep.queue = s.rep.queue, batch[:0]
		n := s.rep.count
		s.rep.count = 0
		if len(batch) == 0 || s.rep.stopped {
			s.rep.running = false
			s.rep.queue = nil
			s.rep.mu.Unlock()
			s.disp.answersTyped(n)
			return
		}
		s.rep.mu.Unlock()
		_, _ = s.writeTerminal(context.Background(), batch, time.Now().Add(replyTimeout))
		s.disp.answersTyped(n)
	}
}
