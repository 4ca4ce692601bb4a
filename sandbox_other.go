//go:build !linux && !darwin

package agentpty

import "runtime"

// NewSandbox returns an error wrapping ErrUnsupported: agentpty knows no
// kernel sandbox on this system, and Start never runs a child unconfined.
func NewSandbox(p SandboxPolicy) (Sandbox, error) {
	return nil, errorf(ErrUnsupported, "sandbox: agentpty has no kernel sandbox for %s (Landlock on Linux and Seatbelt on macOS are supported)", runtime.GOOS)
}
