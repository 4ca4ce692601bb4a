package agentpty

import (
	"bytes"
	"strings"
)

type settleEvents uint8

const (
	evQuery settleEvents = 1 << iota
	evAltEnter
	evAltLeave
)

type settler struct {
	buf     []byte
	readPos int
}

func newSettler(int) *settler { return &settler{} }
func (s *settler) write(p []byte) settleEvents {
	s.buf = append(s.buf, p...)
	if bytes.Contains(p, []byte("\x1b[6n")) {
		return evQuery
	}
	return 0
}
func (s *settler) altScreen() bool { return false }
func (s *settler) read(max int) string {
	out := strings.ReplaceAll(string(s.buf[s.readPos:]), "\r", "")
	s.readPos = len(s.buf)
	return strings.TrimSuffix(out, "\n")
}
func (s *settler) unread() bool          { return s.readPos < len(s.buf) }
func (s *settler) match(lit string) bool { return bytes.Contains(s.buf[s.readPos:], []byte(lit)) }

