//go:build linux

package sshpty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/backendtest"
)

// Shell sessions and pty-run on the host: the library's cases for every
// backend (internal/backendtest), over a real OpenSSH server.

func TestShellRuns(t *testing.T) {
	_, c := connect(t)
	backendtest.ShellRuns(t, func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) })
}

func TestShellFiles(t *testing.T) {
	_, c := connect(t)
	backendtest.ShellFiles(t, func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) })
}

func TestShellNeedsFiles(t *testing.T) {
	_, c := connect(t)
	backendtest.ShellNeedsFiles(t, New(c), func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) })
}

func TestShellLostConnection(t *testing.T) {
	srv, c := connect(t)
	backendtest.ShellLostConnection(t, func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) }, srv.Kill)
}
