package agentpty

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode"

	"github.com/agentpty/agentpty/internal/cmdline"
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

// inputModes is what a terminal does to typed bytes besides passing them
// on: its special characters, and the input modes that change bytes.
type inputModes struct {
	chars []controlChar
	strip bool // istrip: the eighth bit is cleared (UTF-8's » becomes B;)
	lower bool // iuclc: upper case becomes lower case
}

// inputModesReader is the capability of a Terminal that reads its input
// modes; a remote terminal lacks it (see Options.ApproveWrites).
type inputModesReader interface {
	inputModes() (inputModes, error)
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

// checkControlChars refuses input that holds a printable character that
// term (session id's) binds to a special character, naming the character
// and the control, or a byte an input mode changes. A terminal that cannot
// report them is not checked, nor one whose modes cannot be read because
// its program has ended (see ended): the write reports the exit.
func checkControlChars(term Terminal, id, tool string, input []byte, ended func() (ExitStatus, bool)) error {
	r, ok := term.(inputModesReader)
	if !ok {
		return nil
	}
	deny := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s %s: %s", ErrDenied, tool, id, cmdline.Quote(string(input)), fmt.Sprintf(format, args...))
	}
	m, err := r.inputModes()
	if err != nil {
		if _, exited := ended(); exited {
			return nil
		}
		return deny("the terminal's modes cannot be read, so the input cannot be judged as the terminal reads it: %v", err)
	}
	if c, found := boundPrintable(input, m.chars); found {
		ch := fmt.Sprintf("the byte %#02x", c.b)
		if c.b < 0x80 {
			ch = strconv.QuoteRune(rune(c.b))
		}
		return deny("types %s, which the terminal binds to %s (stty %s): the terminal or the line editor acts on it instead of reading it as text",
			ch, c.name, c.stty)
	}
	if i := bytes.IndexFunc(input, func(r rune) bool { return r >= 0x80 }); m.strip && i >= 0 {
		return deny("types the byte %#02x, which the terminal strips to 7 bits (stty istrip)", input[i])
	}
	if i := bytes.IndexFunc(input, unicode.IsUpper); m.lower && i >= 0 {
		return deny("types %q, which the terminal turns into lower case (stty iuclc)", input[i])
	}
	return nil
}
