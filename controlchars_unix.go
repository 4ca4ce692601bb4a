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

// readInputModes reads what the terminal whose master is f does to typed
// bytes (the ioctl on a master reads its slave's modes): its special
// characters, a disabled one left out, and istrip and iuclc.
func readInputModes(f *os.File) (inputModes, error) {
	var t *unix.Termios
	var ierr error
	if err := control(f, func(fd int) { t, ierr = unix.IoctlGetTermios(fd, ioctlGetTermios) }); err != nil {
		return inputModes{}, err
	}
	if ierr != nil {
		return inputModes{}, ierr
	}
	m := inputModes{chars: make([]controlChar, 0, len(controlCharIndex)),
		strip: t.Iflag&unix.ISTRIP != 0, lower: iuclc != 0 && t.Iflag&iuclc != 0}
	for _, c := range controlCharIndex {
		if b := t.Cc[c.i]; b != vdisable {
			m.chars = append(m.chars, controlChar{name: c.name, stty: c.stty, b: b})
		}
	}
	return m, nil
}

// inputModes reads what the terminal does to typed bytes.
func (t *localTerminal) inputModes() (inputModes, error) { return readInputModes(t.f) }
