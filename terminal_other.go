//go:build !linux && !darwin

package agentpty

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/agentpty/agentpty/internal/contain"
)

// Terminals here are Unix pseudo-terminals; elsewhere every start on this
// machine fails with ErrUnsupported, so no local session ever exists.
// Options.Backend still reaches other machines.

func (localBackend) Start(context.Context, Command) (Terminal, error) {
	return nil, errorf(ErrUnsupported, "%s: pseudo-terminal sessions need Linux or macOS", ToolStart)
}

func startChild(*exec.Cmd, int, int) (*os.File, error) {
	return nil, errorf(ErrUnsupported, "%s: pseudo-terminal sessions need Linux or macOS", ToolStart)
}

func readBlocks(any) bool { return false }

func parseSignal(string) (os.Signal, bool) { return nil, false }

func killAll(int, *contain.Group) {}

func closePidfd(*exec.Cmd) {}

// AtPrompt knows no program here (see ProgramChecker).
func (localBackend) AtPrompt(Terminal) (name, exe string) { return "", "" }

// CheckPrograms refuses: no local terminal exists here.
func (localBackend) CheckPrograms(Terminal, []string) error {
	return errors.New("pseudo-terminal sessions need Linux or macOS")
}

// endTogether has nothing to end together here: Close ends each session
// on its own.
func (m *Manager) endTogether([]*Session) func() { return func() {} }
