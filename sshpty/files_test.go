//go:build linux

package sshpty

import (
	"testing"

	"github.com/agentpty/agentpty/internal/backendtest"
)

// A session's files land on the host, through the probe shell.
func TestFiles(t *testing.T) {
	_, c := connect(t)
	backendtest.Files(t, New(c))
}
