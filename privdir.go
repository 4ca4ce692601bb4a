package agentpty

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// privDir is the manager's private directory (mode 0700, under the
// host's temporary directory): each shell session's rcfile and the
// commands pty-run hands to its shell live there, so the command text
// never passes through the terminal, and the Python startup file that
// keeps REPL history out of the user's home (history.go). It is made on
// the first start and removed by Close.
type privDir struct {
	mu      sync.Mutex
	path    string // real path, symlinks resolved; "" until made
	closed  bool
	release func() // ends the sandbox's keeping it read-only
}

// get makes the directory on first use and returns its path. A sandbox
// that can keep it read-only for its children (readOnlyKeeper) is asked
// to before any child starts, so no child of this manager ever had it
// writable, even where it lies inside a writable root.
func (d *privDir) get(sb Sandbox) (string, error) {
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
	// The sandbox binds it by this path: no symlink in it may lead the
	// bind elsewhere.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("private directory: %w", err)
	}
	if err := writeNew(filepath.Join(real, pythonStartupName), pythonStartup); err != nil {
		os.RemoveAll(real)
		return "", fmt.Errorf("private directory: %w", err)
	}
	if k, ok := sb.(readOnlyKeeper); ok {
		d.release = k.keepReadOnly(real)
	}
	d.path = real
	return real, nil
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
	if d.release != nil {
		d.release()
	}
	err := os.RemoveAll(d.path)
	d.path = ""
	return err
}

// readOnlyKeeper is the seam for a sandbox that can keep paths read-only
// for its children even where they lie inside its writable roots: the
// Linux sandbox binds them read-only over the roots. A sandboxed shell
// then cannot change the commands the library hands it.
type readOnlyKeeper interface {
	// keepReadOnly keeps path read-only in every child started from now
	// on, until release is called.
	keepReadOnly(path string) (release func())
}

// keptPaths is the set of paths a sandbox keeps read-only; its
// keepReadOnly makes the sandbox a readOnlyKeeper.
//
// A start binds the kept paths it read some time after reading them: a
// release waits until the starts that read its path have bound it (or
// failed), so no start ever binds a path its manager's Close is removing.
// Starts that did not read it, and other paths' releases, do not wait.
type keptPaths struct {
	keptMu sync.Mutex
	paths  []string       // one entry per keepReadOnly not yet released
	held   map[string]int // starts that read a path and have not bound it yet
	let    *sync.Cond     // on keptMu: a start let go of its paths
}

func (k *keptPaths) keepReadOnly(path string) func() {
	k.keptMu.Lock()
	defer k.keptMu.Unlock()
	k.paths = append(k.paths, path)
	var once sync.Once
	return func() {
		once.Do(func() {
			k.keptMu.Lock()
			defer k.keptMu.Unlock()
			if i := slices.Index(k.paths, path); i >= 0 {
				k.paths = slices.Delete(k.paths, i, i+1)
			}
			for k.held[path] > 0 {
				k.let.Wait() // held is not empty: hold made let
			}
		})
	}
}

// hold returns the paths kept now; the caller calls done once its child
// has bound them or will not start.
func (k *keptPaths) hold() (paths []string, done func()) {
	k.keptMu.Lock()
	defer k.keptMu.Unlock()
	paths = slices.Clone(k.paths)
	if k.held == nil {
		k.held, k.let = make(map[string]int), sync.NewCond(&k.keptMu)
	}
	for _, p := range paths {
		k.held[p]++
	}
	return paths, func() {
		k.keptMu.Lock()
		defer k.keptMu.Unlock()
		for _, p := range paths {
			if k.held[p]--; k.held[p] == 0 {
				delete(k.held, p)
			}
		}
		k.let.Broadcast()
	}
}
