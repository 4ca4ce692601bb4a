package kubepty

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentpty/agentpty"
	"k8s.io/client-go/tools/remotecommand"
)

// Files in the container, for what the library keeps beside a session
// where its commands run (a shell session's rcfile, pty-run's command
// files): Backend implements agentpty.Files. Each is one exec of sh
// without a TTY (mktemp, cat and rm, which any image with a shell has),
// a file's text on the exec's stdin; nothing is copied there but the
// text.
var _ agentpty.Files = (*Backend)(nil)

// The scripts take the path as $1 and print "ok" (mktemp: the path) once
// done, so that an answer cut short is known as such.
const (
	mkdirScript  = `umask 077 && d=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXXXX") && echo "ok $d"`
	writeScript  = `umask 077 && set -C && cat >"$1" && echo ok`
	removeScript = `rm -rf -- "$1" && echo ok`
)

// MkdirTemp makes a new directory only the container's user can enter,
// under $TMPDIR or /tmp there, and returns its path.
func (b *Backend) MkdirTemp(ctx context.Context, pattern string) (string, error) {
	if strings.ContainsAny(pattern, "/\x00") {
		return "", fmt.Errorf("agentpty: %s: MkdirTemp: pattern %q holds a slash or NUL", b, pattern)
	}
	out, err := b.fileExec(ctx, mkdirScript, pattern, nil)
	dir, ok := strings.CutPrefix(out, "ok ")
	if err == nil && (!ok || !strings.HasPrefix(dir, "/")) {
		err = fmt.Errorf("mktemp printed %q", out)
	}
	if err != nil {
		return "", fmt.Errorf("agentpty: %s: MkdirTemp %q: %w", b, pattern, err)
	}
	return dir, nil
}

// WriteFile writes data to a new file at path in the container, mode
// 0600; a file already there is an error (the shell's noclobber).
func (b *Backend) WriteFile(ctx context.Context, path string, data []byte) error {
	return b.fileOK(ctx, "WriteFile", writeScript, path, data)
}

// RemoveAll removes path and what it holds in the container.
func (b *Backend) RemoveAll(ctx context.Context, path string) error {
	return b.fileOK(ctx, "RemoveAll", removeScript, path, nil)
}

// fileOK runs script on path (see fileExec), which says "ok" once done.
func (b *Backend) fileOK(ctx context.Context, op, script, path string, stdin []byte) error {
	out, err := b.fileExec(ctx, script, path, stdin)
	if err == nil && out != "ok" {
		err = fmt.Errorf("sh said %q", out)
	}
	if err != nil {
		return fmt.Errorf("agentpty: %s: %s %q: %w", b, op, path, err)
	}
	return nil
}

// fileExec runs script in sh in the container with arg as $1 and stdin
// (when not nil) on its standard input, and returns what it printed,
// trimmed. The exec's own error (a non-zero exit, a lost stream) wins.
func (b *Backend) fileExec(ctx context.Context, script, arg string, stdin []byte) (string, error) {
	if strings.ContainsRune(arg, 0) {
		return "", fmt.Errorf("%q holds a NUL byte", arg)
	}
	exe, err := b.executor([]string{"/bin/sh", "-c", script, "kubepty", arg}, false, stdin != nil, false, nil)
	if err != nil {
		return "", err
	}
	var out lockedBuffer // a stream cut short by ctx may still be writing
	opts := remotecommand.StreamOptions{Stdout: &out}
	if stdin != nil {
		opts.Stdin = io.Reader(bytes.NewReader(stdin))
	}
	err = exe.StreamWithContext(ctx, opts)
	return strings.TrimSpace(out.String()), err
}
