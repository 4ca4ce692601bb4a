package sshpty

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentpty/agentpty"
)

// Files on the host, for what the library keeps beside a session where
// its commands run (a shell session's rc file, pty-run's command files):
// Backend implements agentpty.Files. They go through the probe shell: one
// round trip each, no channel and no program copied there; data is text
// (no NUL byte).
var _ agentpty.Files = (*Backend)(nil)

// MkdirTemp makes a new directory only the connection's user can read,
// under $TMPDIR or /tmp on the host, and returns its path there.
func (b *Backend) MkdirTemp(ctx context.Context, pattern string) (string, error) {
	if strings.ContainsAny(pattern, "/\x00") {
		return "", fmt.Errorf("%s: MkdirTemp: pattern %q holds a slash or NUL", b, pattern)
	}
	out, err := b.fileCall(ctx, fmt.Sprintf(`d=$(umask 077; mktemp -d "${TMPDIR:-/tmp}/"%s.XXXXXXXX) && echo "$Q $d"`, quote(pattern)))
	dir := strings.TrimSpace(out)
	if err == nil && !strings.HasPrefix(dir, "/") {
		err = fmt.Errorf("mktemp printed %q", dir)
	}
	if err != nil {
		return "", fmt.Errorf("%s: MkdirTemp %q: %w", b, pattern, err)
	}
	return dir, nil
}

// WriteFile writes data to a new file at path on the host, mode 0600;
// a file already there is an error.
func (b *Backend) WriteFile(ctx context.Context, path string, data []byte) error {
	if strings.ContainsRune(path, 0) || strings.ContainsRune(string(data), 0) {
		return fmt.Errorf("%s: WriteFile %q: a NUL byte cannot reach the host's shell", b, path)
	}
	out, err := b.fileCall(ctx, fmt.Sprintf(`(umask 077; set -C; printf %%s %s >%s) && echo "$Q ok"`, quote(string(data)), quote(path)))
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("it could not be created")
	}
	if err != nil {
		return fmt.Errorf("%s: WriteFile %q: %w", b, path, err)
	}
	return nil
}

// RemoveAll removes path and what it holds on the host.
func (b *Backend) RemoveAll(ctx context.Context, path string) error {
	out, err := b.fileCall(ctx, fmt.Sprintf(`rm -rf -- %s && echo "$Q ok"`, quote(path)))
	if err == nil && strings.TrimSpace(out) != "ok" {
		err = fmt.Errorf("it could not be removed")
	}
	if err != nil {
		return fmt.Errorf("%s: RemoveAll %q: %w", b, path, err)
	}
	return nil
}

// fileCall runs call in the probe shell, holding it for the call.
func (b *Backend) fileCall(ctx context.Context, call string) (string, error) {
	b.hold()
	defer b.release()
	out, err := b.shellRun(ctx, call, false)
	return string(out), err
}
