package agentpty

import (
	"errors"
	"fmt"
)

// Errors returned by the library. Each returned error wraps one of these
// for errors.Is and names the session and the value involved.
var (
	ErrNoSession       = errors.New("agentpty: no such session")
	ErrExited          = errors.New("agentpty: session has exited")
	ErrTooManySessions = errors.New("agentpty: too many sessions")
	ErrDenied          = errors.New("agentpty: denied")
	ErrClosed          = errors.New("agentpty: manager is closed")
	ErrInvalid         = errors.New("agentpty: invalid argument")
	ErrUnsupported     = errors.New("agentpty: unsupported on this platform")
)

// errorf wraps a sentinel with the particulars, so the message reads
// "agentpty: invalid argument: pty-3: cols 5000 is outside 1-1000".
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
