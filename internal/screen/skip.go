package screen

// skipPlain is a stub until the skipping is written.
func (s *Screen) skipPlain(p []byte, i int) int {
	s.scanEnd = len(p)
	return i
}
