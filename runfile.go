package agentpty

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The run channel: a pty-run command reaches the shell as a file in the
// session's private directory, sourced by a fixed typed line, never as
// typed text. The channel is the file system where the shell runs: this
// machine's, or the Backend's Files (a pipe over the terminal is not
// possible there, and a here-doc typed into the shell is text readline
// sees).

// shellFiles is where a shell session's directory, rcfile and run files
// live.
type shellFiles interface {
	// mkdir makes the session's directory, new and private, named after
	// name, and returns its path.
	mkdir(ctx context.Context, name string) (string, error)
	// write creates path, which must not exist, readable by its owner
	// only, holding text.
	write(ctx context.Context, path, text string) error
	// removeRun removes a run file whose command has been read.
	removeRun(path string)
	// removeAll removes the session's directory; ctx bounds a backend's.
	removeAll(ctx context.Context, dir string)
}

// localFiles keeps a shell session's files in the manager's private
// directory base on this machine.
type localFiles struct{ base string }

func (l localFiles) mkdir(_ context.Context, name string) (string, error) {
	dir := filepath.Join(l.base, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

func (localFiles) write(_ context.Context, path, text string) error { return writeNew(path, text) }
func (localFiles) removeRun(path string)                            { os.Remove(path) }
func (localFiles) removeAll(_ context.Context, dir string)          { os.RemoveAll(dir) }

// remoteFileTimeout bounds each file operation on the backend's machine,
// so a connection that stopped answering cannot hold a run, a Kill or
// Close.
const remoteFileTimeout = 10 * time.Second

// remoteFiles keeps a shell session's files where a Backend runs its
// commands, each operation one call of its Files (a round trip there).
type remoteFiles struct {
	f   Files
	who string // the backend, for messages
}

func (r remoteFiles) mkdir(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteFileTimeout)
	defer cancel()
	dir, err := r.f.MkdirTemp(ctx, "agentpty-"+name)
	if err == nil && !strings.HasPrefix(dir, "/") { // never removed: relative to what?
		err = fmt.Errorf("%s: MkdirTemp returned %q, not an absolute path", r.who, dir)
	}
	return dir, err
}

func (r remoteFiles) write(ctx context.Context, path, text string) error {
	ctx, cancel := context.WithTimeout(ctx, remoteFileTimeout)
	defer cancel()
	return r.f.WriteFile(ctx, path, []byte(text))
}

// removeRun leaves the file to the directory's removal when the session
// ends: removing each would add a round trip to every run.
func (remoteFiles) removeRun(string) {}

func (r remoteFiles) removeAll(ctx context.Context, dir string) {
	ctx, cancel := context.WithTimeout(ctx, remoteFileTimeout)
	defer cancel()
	_ = r.f.RemoveAll(ctx, dir) // best effort: a lost connection took the session with it
}

// writeNew creates path, which must not exist, readable by its owner
// only, holding text.
func writeNew(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400) // O_EXCL: never through a symlink
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
