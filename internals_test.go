package agentpty

import "time"

// The places tests look inside a session, each in one helper, so that the
// session's parts can move without touching the tests that read them.

// rawOutput returns every byte the ring holds and the offset of the first.
func rawOutput(s *Session) ([]byte, int64) {
	s.out.inMu.Lock()
	defer s.out.inMu.Unlock()
	raw, _ := s.out.ring.appendFrom(nil, 0)
	return raw, s.out.ring.start()
}

// ringEnd is the ring offset of the newest byte read from the terminal.
func ringEnd(s *Session) int64 {
	s.out.inMu.Lock()
	defer s.out.inMu.Unlock()
	return s.out.ring.end()
}

// screenLag is how far the screen's parsing is behind the ring.
func screenLag(s *Session) int64 {
	return ringEnd(s) - s.disp.parsed()
}

// queuedReplies is how many bytes of query replies wait to be typed.
func queuedReplies(s *Session) int {
	s.rep.mu.Lock()
	defer s.rep.mu.Unlock()
	return len(s.rep.pending)
}

// tapCount is how many taps (recordings, attachments) are registered.
func tapCount(s *Session) int {
	s.taps.mu.Lock()
	defer s.taps.mu.Unlock()
	return len(s.taps.taps)
}

// nextChange returns the channel the next rendered output closes, and
// whether the output is complete already.
func nextChange(s *Session) (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.changes(), s.text.complete()
}

// parsedSnapshot parses everything the ring holds into the screen and
// returns it with the offset parsed up to and the ring's bytes.
func parsedSnapshot(s *Session) (Screen, int64, []byte, int64) {
	var scr Screen
	var off int64
	var raw []byte
	var start int64
	s.readScreen(time.Time{}, func(d *display) {
		raw, start = rawOutput(s)
		scr, _, off = d.snapshot(), 0, d.parsed()
	})
	return scr, off, raw, start
}

// onLaneQueue has f told, outside the lane's lock, each time a call
// queues in s's lane.
func onLaneQueue(s *Session, f func()) {
	s.lane.mu.Lock()
	defer s.lane.mu.Unlock()
	s.lane.queued = f
}

// tellMatcher has f told, under mu, what the matcher does (see
// matcher.tell).
func tellMatcher(s *Session, f func(what string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.match.tell = f
}

// matchParked reports whether a call's pattern is parked with the reader.
func matchParked(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.match.free()
}

// stateReads is how many times s's State read the kernel.
func stateReads(s *Session) int {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	return s.seen.reads
}
