package agentpty

import (
	"fmt"
	"strings"
)

// Validate reports options that contradict each other, or hold a value
// no session could use, in one error naming the fields involved and
// wrapping ErrInvalid; nil when they are fine. NewManager keeps what it
// returns, and every Start of that manager then fails with it before
// anything is approved or runs, so a host learns it at its first start
// rather than as an odd failure of some later call; a host may call it
// itself before NewManager.
//
// What it refuses:
//   - Backend with Sandbox: the sandbox confines commands of this machine
//     only (the error wraps ErrUnsupported too, as starts did before).
//   - Backend with SecretPrograms, when the Backend is no ProgramChecker:
//     every WriteSecret would be refused.
//   - Backend with SecretRelays: whether a relay's terminal echoes
//     nothing itself is read on this machine's terminals only, so every
//     WriteSecret through a relay would be refused.
//   - Backend with MaxMemory or MaxProcesses set: they bound this
//     machine's cgroups only.
//   - Cols or Rows outside 0–1000 and 0–500, an empty (non-nil) Shell,
//     and a default size (Cols×Rows) over MaxCells, which would refuse
//     every start that gives no size.
//
// ApproveWrites without an Approver is no contradiction: nil approves
// everything, so writes are not asked about and cost nothing more.
// ShellSnapshot with a Backend or another Shell is none either: it does
// not apply there, and each start's Notice says so for a Backend.
func (o Options) Validate() error {
	var msgs []string
	bad := func(format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf(format, args...))
	}
	e := &optionsError{is: []error{ErrInvalid}}
	if o.Backend != nil {
		name := backendName(o.Backend)
		if o.Sandbox != nil {
			bad("Options.Backend (%s) and Options.Sandbox: the sandbox confines commands on this machine; the backend cannot apply it", name)
			e.is = append(e.is, ErrUnsupported)
		}
		if _, ok := o.Backend.(ProgramChecker); !ok && o.SecretPrograms != nil {
			bad("Options.Backend (%s) and Options.SecretPrograms: the backend cannot name the programs at its prompts (it is no ProgramChecker), so every WriteSecret would be refused", name)
		}
		if o.SecretRelays != nil {
			bad("Options.Backend (%s) and Options.SecretRelays: whether a relay's terminal echoes nothing itself can be told on this machine only, so every WriteSecret through a relay would be refused", name)
		}
		if o.MaxMemory != 0 {
			bad("Options.Backend (%s) and Options.MaxMemory %d: the bound applies to this machine's sessions only", name, o.MaxMemory)
		}
		if o.MaxProcesses != 0 || o.MaxProcessesTotal != 0 {
			bad("Options.Backend (%s) and Options.MaxProcesses %d / MaxProcessesTotal %d: the bounds apply to this machine's sessions only", name, o.MaxProcesses, o.MaxProcessesTotal)
		}
	}
	if o.Shell != nil && len(o.Shell) == 0 {
		bad("Options.Shell is empty; nil means bash -lc")
	}
	if o.Cols < 0 || o.Cols > maxCols {
		bad("Options.Cols %d is outside 0-%d", o.Cols, maxCols)
	}
	if o.Rows < 0 || o.Rows > maxRows {
		bad("Options.Rows %d is outside 0-%d", o.Rows, maxRows)
	}
	d := o.withDefaults()
	if d.Cols > 0 && d.Rows > 0 && d.Cols*d.Rows > d.MaxCells {
		bad("Options.Cols×Rows (%d×%d) and Options.MaxCells %d: every start without a size would be refused", d.Cols, d.Rows, d.MaxCells)
	}
	if len(msgs) == 0 {
		return nil
	}
	e.msg = ErrInvalid.Error() + ": options: " + strings.Join(msgs, "; ")
	return e
}

// optionsError is Validate's error: its message names the fields, and it
// is ErrInvalid (and ErrUnsupported for a sandbox a backend cannot apply)
// for errors.Is.
type optionsError struct {
	msg string
	is  []error
}

func (e *optionsError) Error() string   { return e.msg }
func (e *optionsError) Unwrap() []error { return e.is }
