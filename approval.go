package agentpty

import "context"

// Approver decides whether a session may start and, with
// Options.ApproveWrites, whether input may be typed into one. Without
// ApproveWrites, approving a start covers every later write to that
// session.
type Approver interface {
	// Approve returns nil to let the request go ahead; any error refuses
	// it, and the call returns it wrapped in ErrDenied. A panic refuses
	// it too: the call returns ErrDenied naming the panic.
	Approve(ctx context.Context, req ApprovalRequest) error
}

// ApproverFunc lets a function be an Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) error

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) error { return f(ctx, req) }

// ApprovalRequest is what an Approver is asked about.
type ApprovalRequest struct {
	// Tool is the tool's name: "pty-start", or "pty-write" with
	// Options.ApproveWrites.
	Tool string
	// Command is the command as the model gave it, before the shell; for
	// a write, the command the session was started with.
	Command string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Env is what the request adds to the environment.
	Env []string
	// Cols and Rows size the terminal of a start.
	Cols, Rows int
	// ID names the session a write goes to ("pty-1"); empty for a start.
	ID string
	// Input is what a write types, exactly as the terminal will get it:
	// escapes decoded, then the keys, each as the terminal's modes make it
	// when the write is asked for, then the \r of submit. A write
	// approved into a shell at its prompt is typed after C-g C-e C-u,
	// which empty the line (see Options.ApproveWrites).
	Input string
	// Foreground names, for a write, the program waiting for input on
	// the terminal when the write is asked for ("bash"); empty when none
	// waits with nothing typed unread.
	Foreground string
}
