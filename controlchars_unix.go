//go:build linux || darwin

package agentpty

import (
	"os"

	"golang.org/x/sys/unix"
)

// ccIndex is where c_cc holds a special character, and its names.
type ccIndex struct {
	name, stty string
	i          int
}

// readControlChars reads the special characters of the terminal whose
// master is f (the ioctl on a master reads its slave's modes); a disabled
// one is left out.
func readControlChars(f *os.File) ([]controlChar, error) {
	var t *unix.Termios
	var ierr error
	if err := control(f, func(fd int) { t, ierr = unix.IoctlGetTermios(fd, ioctlGetTermios) }); err != nil {
		return nil, err
	}
	if ierr != nil {
		return nil, ierr
	}
	out := make([]controlChar, 0, len(controlCharIndex))
	for _, c := range controlCharIndex {
		if b := t.Cc[c.i]; b != vdisable {
			out = append(out, controlChar{name: c.name, stty: c.stty, b: b})
		}
	}
	return out, nil
}

// controlChars reads the terminal's special characters.
func (t *localTerminal) controlChars() ([]controlChar, error) { return readControlChars(t.f) }
