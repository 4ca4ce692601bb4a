package agentpty

import "time"

// The values of a result's state.
const (
	// StateWaitingInput: the terminal's foreground program is blocked
	// reading the terminal (or in poll/select on it), it has read all that
	// was typed, and everything it printed has been rendered.
	StateWaitingInput = "waiting_input"
	// StateRunning: anything else while the program lives.
	StateRunning = "running"
	// StateExited: the session's program has exited.
	StateExited = "exited"
)

// The values of a result's waited: why the call's wait ended.
const (
	// WaitedMatch: wait_for or wait_for_regex appeared.
	WaitedMatch = "match"
	// WaitedInput: the kernel shows the program blocked reading the
	// terminal (wait_until "input"; a pty-run's command at a prompt).
	WaitedInput = "input"
	// WaitedExit: the program exited (for pty-run, the command ended and
	// the prompt came back).
	WaitedExit = "exit"
	// WaitedTimeout: the wait ran its whole length.
	WaitedTimeout = "timeout"
	// WaitedQuiet: output stopped, and the wait ended on that alone: a
	// relay's wait for input guessed from the pause (TerminalState.Guessed),
	// or a start's first output that paused. A guess: the program may
	// still be working.
	WaitedQuiet = "quiet"
	// WaitedSettled: wait_until "settled": the output changed, then
	// stayed still for settle_ms.
	WaitedSettled = "settled"
)

// waitedHow names why a wait ended: matched, the program exited, the
// state st ended a wait for input (input), or output paused (quiet);
// else it ran out.
func waitedHow(matched, exited, input, quiet bool, st TerminalState) string {
	switch {
	case matched:
		return WaitedMatch
	case exited:
		return WaitedExit
	case input && st.State == StateWaitingInput && st.Guessed:
		return WaitedQuiet
	case input && st.State == StateWaitingInput:
		return WaitedInput
	case quiet:
		return WaitedQuiet
	}
	return WaitedTimeout
}

// WaitUntilInput is the value of wait_until that returns once the
// foreground program waits for input (WaitUntilSettled is the other).
const WaitUntilInput = "input"

// TerminalState says what the terminal's foreground program is doing, as
// the kernel reports it.
type TerminalState struct {
	// State is StateWaitingInput, StateRunning or StateExited.
	State string
	// Foreground names the program that holds the terminal ("vim",
	// "python3", "bash"); empty once exited or where the platform cannot say.
	Foreground string
	// InputHidden is true while the terminal does not echo in line mode:
	// a password prompt.
	InputHidden bool
	// Guessed, with StateWaitingInput, says the state is a guess: the
	// program relays the terminal to something the library cannot see
	// into (ssh, a tmux or screen client, sudo's pty), and it counts as
	// waiting only because its output and input have paused (see
	// Foreground.Guessed). A kernel-known wait leaves it false.
	Guessed bool
}

// fgReport is what the platform's foreground function tells about the
// terminal's foreground process group.
type fgReport struct {
	name    string        // the program: the one waiting on the terminal, else a running leader, else the newest in the group
	pid     int           // ... and its process id
	waiting bool          // a process of the group is blocked on the terminal and none is running
	quiet   time.Duration // ... which counts once output and input have paused this long
	guessed bool          // ... and is a guess: the program waits on more than the terminal
	unread  bool          // the terminal holds typed input the program has not read yet
}

// resultState is the state a result reports beside its exit fields: the
// state is read before the output is collected, and the program may exit
// in between, so a result that says exited says so in its state too.
func resultState(st TerminalState, exited bool) TerminalState {
	if exited {
		return TerminalState{State: StateExited}
	}
	return st
}
