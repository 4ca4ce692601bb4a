//go:build linux || darwin

package agentpty

import (
	"syscall"

	"github.com/agentpty/agentpty/internal/contain"
)

// masterConn is the local terminal's master side, for ioctls a test makes
// on it as a host would.
func masterConn(s *Session) (syscall.RawConn, error) {
	return s.term.(*localTerminal).f.SyscallConn()
}

// sessionGroup is the local terminal's cgroup; nil where the host has none.
func sessionGroup(s *Session) *contain.Group { return s.term.(*localTerminal).group }
