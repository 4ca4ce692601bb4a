package screen

import (
	"strings"
	"testing"
)

// KeyModes follows DECCKM and DECKPAM as the program sets and resets them,
// in sequences split anywhere, and keeps them through a rebuild.
func TestKeyModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		out            string
		cursor, keypad bool
	}{
		{"", false, false},
		{"\x1b[?1h", true, false},
		{"\x1b=", false, true},
		{"\x1b[?1h\x1b=", true, true}, // ncurses' smkx for xterm
		{"\x1b[?1h\x1b=\x1b[?1l\x1b>", false, false},
		{"\x1b[?1049;1h", true, false},
		{"\x1b[?1h\x1b=\x1b[!p", false, false}, // DECSTR
		{"\x1b[?1h\x1b=\x1bc", false, false},   // RIS
		{"\x1b[1h\x1b[?2h", false, false},      // not DECCKM
	} {
		for size := 1; size <= max(len(c.out), 1); size++ {
			s := New(20, 5)
			for p := []byte(c.out); len(p) > 0; p = p[min(size, len(p)):] {
				s.Write(nil, p[:min(size, len(p))])
			}
			if cur, kp := s.KeyModes(); cur != c.cursor || kp != c.keypad {
				t.Errorf("%q in pieces of %d: cursor keys %v, keypad %v; want %v, %v", c.out, size, cur, kp, c.cursor, c.keypad)
			}
		}
	}
	s := New(20, 5)
	s.Write(nil, []byte("\x1b[?1h\x1b=hi"))
	s.rebuild()
	if cur, kp := s.KeyModes(); !cur || !kp {
		t.Errorf("after a rebuild: cursor keys %v, keypad %v", cur, kp)
	}
	if got := string(s.Redraw(nil)); !strings.Contains(got, "\x1b[?1h") || !strings.Contains(got, "\x1b=") {
		t.Errorf("vt10x lost the modes in the rebuild: redraw %q", got)
	}
}
