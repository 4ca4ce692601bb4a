package agentpty

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// privDir is the manager's private directory (mode 0700, under the
// host's temporary directory): each shell session's rcfile and the
// commands pty-run hands to its shell live there, so the command text
// never passes through the terminal, and the Python startup file that
// keeps REPL history out of the user's home (history.go). It is made on
// the first start and removed by Close.
type privDir struct {
	mu     sync.Mutex
	path   string // real path, symlinks resolved; "" until made
	closed bool
}

// get makes the directory on first use and returns its path.
func (d *privDir) get() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errorf(ErrClosed, "%s: the manager is closed", ToolStart)
	}
	if d.path != "" {
		return d.path, nil
	}
	dir, err := os.MkdirTemp("", "agentpty-")
	if err != nil {
		return "", fmt.Errorf("private directory: %w", err)
	}
	// The sandbox binds it read-only by this path: no symlink in it may
	// lead the bind elsewhere.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("private directory: %w", err)
	}
	dir = real
	if err := writeNew(filepath.Join(dir, pythonStartupName), pythonStartup); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("private directory: %w", err)
	}
	d.path = dir
	return dir, nil
}

// remove deletes the directory and everything in it; no later get makes
// it again.
func (d *privDir) remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.path == "" {
		return nil
	}
	err := os.RemoveAll(d.path)
	d.path = ""
	return err
}

// readOnlyKeeper is the seam for a sandbox that can keep paths read-only
// for the child even where they lie inside its writable roots: the Linux
// sandbox binds them read-only over the roots. A sandboxed shell then
// cannot change the commands the library hands it, whatever its roots.
type readOnlyKeeper interface {
	// prepareKeeping is Prepare, keeping the paths read-only.
	prepareKeeping(cmd *exec.Cmd, keep []string) error
}

// keeping is a Sandbox whose Prepare keeps paths read-only.
type keeping struct {
	k    readOnlyKeeper
	keep []string
}

func (k keeping) Prepare(cmd *exec.Cmd) error { return k.k.prepareKeeping(cmd, k.keep) }

// prepareChild applies the sandbox to cmd, keeping the manager's private
// directory read-only inside it where the sandbox can. The directory is
// made before the first sandboxed child starts, so that no child of this
// manager ever had it writable.
func (m *Manager) prepareChild(cmd *exec.Cmd) error {
	sb := m.opts.Sandbox
	if k, ok := sb.(readOnlyKeeper); ok {
		dir, err := m.priv.get()
		if err != nil {
			return err
		}
		sb = keeping{k, []string{dir}}
	}
	return prepare(sb, cmd)
}
