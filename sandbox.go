package agentpty

import "os/exec"

// Sandbox confines a session's child. The host injects one through
// Options.Sandbox; NewSandbox builds one enforced by the kernel.
type Sandbox interface {
	// Prepare adjusts the command before it starts. An error stops the
	// start: a child is never run unconfined because confinement failed.
	Prepare(cmd *exec.Cmd) error
}

// SandboxPolicy says what a sandboxed child may do.
type SandboxPolicy struct {
	// WritableRoots are the directories (and everything below them) the
	// child may write; everything else is read-only.
	WritableRoots []string
	// AllowNetwork lets the child use the network; false leaves it only a
	// loopback of its own.
	AllowNetwork bool
}
