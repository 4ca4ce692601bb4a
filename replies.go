package agentpty

import (
	"bytes"
	"context"
	"time"
)

// Query replies (cursor position, device attributes) go to the program
// through one writer per session, which runs while replies wait: the screen
// never blocks on a program that asked but does not read, and what such a
// program leaves unread beyond maxReplyBytes is dropped, as a terminal
// whose input buffer is full would lose it.

// queueReply hands reply, whole replies each beginning with ESC, to the
// reply writer, starting it if it is not running; replies that do not fit
// under maxReplyBytes are dropped.
func (s *Session) queueReply(reply []byte) {
	if len(reply) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noReplies {
		return
	}
	if room := maxReplyBytes - len(s.replyQueue); len(reply) > room {
		// Whole replies only: each begins with ESC.
		reply = reply[:max(bytes.LastIndexByte(reply[:room+1], 0x1b), 0)]
	}
	if len(reply) > 0 {
		// State counts it as an answer on its way until it is typed.
		s.disp.answering.Add(1)
		s.replyCount++
	}
	s.replyQueue = append(s.replyQueue, reply...)
	if !s.replyRunning && len(s.replyQueue) > 0 {
		s.replyRunning = true
		s.replies.Add(1)
		go s.writeReplies()
	}
}

// writeReplies types the queued replies until none is left. A write the
// program does not take within replyTimeout is dropped.
func (s *Session) writeReplies() {
	defer s.replies.Done()
	var batch []byte
	for {
		s.mu.Lock()
		batch, s.replyQueue = s.replyQueue, batch[:0]
		n := s.replyCount
		s.replyCount = 0
		if len(batch) == 0 || s.noReplies {
			s.replyRunning = false
			s.replyQueue = nil
			s.mu.Unlock()
			s.disp.answering.Add(-n)
			return
		}
		s.mu.Unlock()
		_, _ = s.writeTerminal(context.Background(), batch, time.Now().Add(replyTimeout))
		s.disp.answering.Add(-n)
	}
}
