package agentpty_test

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
)

// This machine's pseudo-terminals pass the conformance suite every
// Backend runs (a nil Backend is the local one).
func TestLocalBackendConformance(t *testing.T) {
	agentptytest.TestBackend(t, func(t *testing.T) agentpty.Backend { return nil })
}
