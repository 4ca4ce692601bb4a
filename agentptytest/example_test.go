package agentptytest_test

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
)

// A backend's test file calls TestBackend with a function that makes the
// backend under test for each case: here this machine's own (nil); a
// host's backend returns its own value, with its leak checks in
// t.Cleanup.
func Example() {
	testConformance := func(t *testing.T) {
		agentptytest.TestBackend(t, func(t *testing.T) agentpty.Backend {
			return nil // e.g. sshpty.New(client), mybackend.New(t.Context(), ...)
		})
	}
	_ = testConformance // func TestConformance(t *testing.T) in a _test.go file
}
