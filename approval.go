package agentpty

import "context"

// Approver decides whether a session may start. Approving a start covers
// every later write to that session.
type Approver interface {
	// Approve returns nil to let the request go ahead; any error refuses
	// it, and Start returns it wrapped in ErrDenied.
	Approve(ctx context.Context, req ApprovalRequest) error
}

// ApproverFunc lets a function be an Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) error

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) error { return f(ctx, req) }

// ApprovalRequest is what an Approver is asked about.
type ApprovalRequest struct {
	// Tool is the tool's name, "pty-start".
	Tool string
	// Command is the command as the model gave it, before the shell.
	Command string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Env is what the request adds to the environment.
	Env        []string
	Cols, Rows int
}
