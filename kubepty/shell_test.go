package kubepty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/backendtest"
)

// Shell sessions and pty-run in the pod: the library's cases for every
// backend (internal/backendtest), against the stand-in.

// managers makes the shared cases' managers on b (or on opts.Backend).
func managers(b *Backend) backendtest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager {
		if opts.Backend == nil {
			opts.Backend = b
		}
		return newManagerOpts(t, opts, false)
	}
}

func TestShellRuns(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellRuns(t, managers(b))
}

func TestShellFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellFiles(t, managers(b))
}

func TestShellNeedsFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellNeedsFiles(t, b, managers(b))
}
