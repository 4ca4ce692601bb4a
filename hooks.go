package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"time"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// The host's Approver and Sandbox.Prepare are called only through these
// functions, which turn a panic into a denial (OnEvent goes through hand,
// in events.go, which drops a panic): a hook's bug never crashes the host,
// holds a MaxSessions slot or leaves a process behind, since each is
// called before anything starts.

// approve asks the Approver about req; nil approves. Any error or panic
// denies, wrapped in ErrDenied.
func (m *Manager) approve(ctx context.Context, req ApprovalRequest) (err error) {
	if m.opts.Approver == nil {
		return nil
	}
	what := req.Tool + " " + cmdline.Quote(req.Command)
	switch req.Tool {
	case ToolStart:
	case ToolWrite:
		what = req.Tool + " " + req.ID + " " + cmdline.Quote(req.Input)
	default:
		what = req.Tool + " " + req.ID + " " + cmdline.Quote(req.Command)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: the approver panicked: %v", ErrDenied, what, p)
		}
	}()
	if err := m.opts.Approver.Approve(ctx, req); err != nil {
		if errors.Is(err, ErrDenied) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", ErrDenied, what, err)
	}
	return nil
}

// approveReaderWait bounds how long a write under ApproveWrites, or a
// secret, waits for a program to wait for input before it is judged.
const approveReaderWait = time.Second

// awaitReading gives a program that has just printed its prompt a moment
// to read (it prints before it reads), up to approveReaderWait, and
// returns the state it saw last.
func awaitReading(ctx context.Context, s *Session) (TerminalState, error) {
	_, st, err := waitOn(s, time.Now().Add(approveReaderWait)).awaitInput(ctx)
	return st, err
}

// approveWrite asks the Approver, when Options.ApproveWrites is on, before
// input is typed into s by tool. Every call that types input calls it
// first; a denial types nothing. It reports whether the input goes to a
// shell waiting at its prompt, whose line must be emptied first (see
// lineClear). Without an Approver (which would approve) it does nothing,
// not even wait for the program to read.
func (m *Manager) approveWrite(ctx context.Context, tool string, s *Session, input []byte) (atPrompt bool, err error) {
	if !m.opts.ApproveWrites || m.opts.Approver == nil || len(input) == 0 {
		return false, nil
	}
	// The program that would read the input now: Rules approve lines only
	// for a shell at its prompt. A shell prints its prompt before it
	// reads: one that has just printed it is given a moment.
	fg := ""
	if _, ok := s.term.(StateReader); ok {
		st, err := awaitReading(ctx, s)
		if err != nil {
			return false, err
		}
		if st.State == StateWaitingInput {
			fg = st.Foreground
		}
	}
	// Read after the wait: what the terminal binds now is what acts on
	// the input.
	if err := checkControlChars(s.term, s.id, tool, input, s.ended); err != nil {
		return false, err
	}
	if err := m.approve(ctx, ApprovalRequest{Tool: tool, ID: s.id, Command: s.command, Input: string(input), Foreground: fg}); err != nil {
		return false, err
	}
	bashLike, _ := cmdline.Shell(path.Base(fg))
	return bashLike, nil
}

// lineClear goes before an approved write into a shell at its prompt, as
// before pty-run's line: C-g cancels a key sequence left pending, C-e goes
// to the end of the line and C-u (readline's unix-line-discard, the
// terminal's VKILL in canonical mode) kills what is on it. Query replies
// the library typed while the shell waited (a DECRQM reply after printf
// '\e[?2004$p') would otherwise stay on the line and run as the start of
// the approved one. Replies wait their turn behind a write, never inside
// it, so one that comes later lands on the next line, which is cleared in
// its turn.
const lineClear = "\x07\x05\x15"

// prepare runs the sandbox's Prepare; a panic is an error wrapping
// ErrDenied, so the child is not started.
func prepare(sb Sandbox, cmd *exec.Cmd) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: Prepare panicked: %v", ErrDenied, p)
		}
	}()
	return sb.Prepare(cmd)
}
