package agentpty

import (
	"fmt"
	"strconv"
)

// A printable character bound to one of the terminal's special characters
// is not text: typed at a prompt it kills the line (VKILL), a word
// (VWERASE) or a character (VERASE), quotes the next one (VLNEXT), sends a
// signal (VINTR, VQUIT, VSUSP) or ends the line early (VEOL, VEOL2). The
// kernel's line discipline acts on them in canonical mode, and readline
// binds VERASE, VKILL, VWERASE and VLNEXT to its own editing commands, so
// a line judged as text would run as something else. Under
// Options.ApproveWrites a write holding one is refused.

// controlChar is one of the terminal's special characters (termios c_cc).
type controlChar struct {
	name string // the termios name: "VKILL"
	stty string // what stty calls it: "kill"
	b    byte
}

// controlCharReader is the capability of a Terminal that reads its
// special characters; a remote terminal lacks it (see Options.ApproveWrites).
type controlCharReader interface {
	controlChars() ([]controlChar, error)
}

// printable reports whether b is a byte typed as text: not a C0 control
// character nor DEL (a byte of UTF-8 counts: the line discipline
// compares bytes).
func printable(b byte) bool { return b >= 0x20 && b != 0x7f }

// boundPrintable returns the first special character of ccs that is
// printable and occurs in input.
func boundPrintable(input []byte, ccs []controlChar) (controlChar, bool) {
	var bound [256]int8 // index+1 into ccs
	for i, c := range ccs {
		if printable(c.b) && bound[c.b] == 0 {
			bound[c.b] = int8(i + 1)
		}
	}
	for _, b := range input {
		if i := bound[b]; i > 0 {
			return ccs[i-1], true
		}
	}
	return controlChar{}, false
}

// checkControlChars refuses input that holds a printable character the
// terminal of s binds to a special character, naming the character and
// the control. A terminal that cannot report them is not checked.
func (s *Session) checkControlChars(tool string, input []byte) error {
	r, ok := s.term.(controlCharReader)
	if !ok {
		return nil
	}
	what := tool + " " + s.id + " " + quoteShort(string(input))
	ccs, err := r.controlChars()
	if err != nil {
		if _, exited := s.ended(); exited {
			return nil // the write reports the exit
		}
		return fmt.Errorf("%w: %s: the terminal's special characters cannot be read, so the input cannot be judged as the terminal reads it: %v", ErrDenied, what, err)
	}
	if c, found := boundPrintable(input, ccs); found {
		return fmt.Errorf("%w: %s: types %s, which the terminal binds to %s (stty %s): the terminal or the line editor acts on it instead of reading it as text",
			ErrDenied, what, strconv.QuoteRune(rune(c.b)), c.name, c.stty)
	}
	return nil
}
