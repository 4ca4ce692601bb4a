//go:build linux

package sshpty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/backendtest"
	"golang.org/x/crypto/ssh"
)

// The cases every backend runs (internal/backendtest), over a real
// OpenSSH server: shell sessions and pty-run, python3, vim, secrets,
// exit codes, resize and signals.
func TestBackendCases(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.NewManager {
		_, c := connect(t)
		return managersOver(c)
	})
}

// managersOver makes the shared cases' managers over c.
func managersOver(c *ssh.Client) backendtest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) }
}

func TestShellNeedsFiles(t *testing.T) {
	_, c := connect(t)
	backendtest.ShellNeedsFiles(t, New(c), managersOver(c))
}

func TestShellLostConnection(t *testing.T) {
	srv, c := connect(t)
	backendtest.ShellLostConnection(t, managersOver(c), srv.Kill)
}

// A session's files land on the host, through the probe shell.
func TestFiles(t *testing.T) {
	_, c := connect(t)
	backendtest.Files(t, New(c))
}
