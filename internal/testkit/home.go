package testkit

import (
	"fmt"
	"os"
)

// EmptyHome points HOME at a new empty directory for the rest of the test
// binary's run, so that sessions started with `bash -lc` do not run the
// developer's login profile (a slow one would fail the suite); tests
// whose subject is the profile name a HOME of their own. TestMain passes
// the returned function to goleak.Cleanup: it removes the directory and
// exits with code.
func EmptyHome() (cleanup func(code int)) {
	home, err := os.MkdirTemp("", "agentpty-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testkit: an empty HOME for the tests:", err)
		os.Exit(2)
	}
	if err := os.Setenv("HOME", home); err != nil {
		fmt.Fprintln(os.Stderr, "testkit: setting HOME:", err)
		os.Exit(2)
	}
	return func(code int) {
		_ = os.RemoveAll(home)
		os.Exit(code)
	}
}
