package agentpty

// StartRequest is the argument of pty-start.
type StartRequest struct {
	// Command runs as `bash -lc Command` (see Options.Shell). Required,
	// except in a shell session, where it is the first command run.
	Command string `json:"command,omitempty"`
	// Shell starts an interactive bash whose prompt marks command
	// boundaries and exit codes, for pty-run.
	Shell bool `json:"shell,omitempty"`
	// Cols and Rows size the terminal; 0 means 120 columns by 32 rows.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// Cwd is the working directory; empty means the host's.
	Cwd string `json:"cwd,omitempty"`
	// Env is added to the environment the child inherits (Go only).
	Env []string `json:"-"`
	// WaitFor returns as soon as this literal appears in the output.
	WaitFor string `json:"wait_for,omitempty"`
	// WaitForRegex is WaitFor as an RE2 pattern (Go's regexp syntax);
	// give one or the other.
	WaitForRegex string `json:"wait_for_regex,omitempty"`
	// WaitMS bounds the wait in milliseconds; nil means the default (10000
	// with WaitFor; otherwise until the output has been quiet briefly, at
	// most 700). Any wait is capped at 30000 and ends when the program exits.
	WaitMS *int `json:"wait_ms,omitempty"`
	// WaitUntil "input" returns as soon as the program waits for input
	// (state waiting_input); "settled" once the output has changed and
	// then stayed still for SettleMS, for programs that redraw and never
	// wait for input (top, watch). WaitMS then defaults to 10000.
	WaitUntil string `json:"wait_until,omitempty"`
	// SettleMS is how long the output must stay still for wait_until
	// "settled"; nil means 300. Only with "settled"; at most 10000.
	SettleMS *int `json:"settle_ms,omitempty"`
	// Screen "full" makes Output the rendered screen, "diff" a unified diff
	// of it against a blank one; both add Cursor and Highlights. Empty
	// means the plain output.
	Screen string `json:"screen,omitempty"`
}

// WriteRequest is the argument of pty-write.
type WriteRequest struct {
	// ID names the session ("pty-1"). Required.
	ID string `json:"id"`
	// Input is typed into the terminal after its backslash escapes
	// (\r \n \t \e \xHH \uHHHH \\) are decoded. Empty input just reads.
	// Its cursor keys (\e[A \e[B \e[C \e[D \e[H \e[F) are sent as the
	// keyboard sends them in the terminal's cursor-key mode, as with Keys.
	Input string `json:"input,omitempty"`
	// Literal types Input exactly as it is, with no escape decoding and no
	// cursor-key translation: for code and text that hold backslashes.
	Literal bool `json:"literal,omitempty"`
	// Keys are keys pressed after Input, named as tmux's send-keys names
	// them ("Up", "Enter", "C-c", "M-x", "F5", "C-Left", "a"), each sent as
	// xterm sends it in the modes the program has set (DECCKM, DECKPAM)
	// when the call is made. An unknown name is ErrInvalid and nothing is
	// typed.
	Keys []string `json:"keys,omitempty"`
	// Submit presses Enter (a carriage return) last, after Input and Keys.
	Submit bool `json:"submit,omitempty"`
	// WaitFor returns as soon as this literal appears in the new output,
	// in what the program printed: the echo of Input does not count.
	WaitFor string `json:"wait_for,omitempty"`
	// WaitForRegex is WaitFor as an RE2 pattern (Go's regexp syntax);
	// give one or the other.
	WaitForRegex string `json:"wait_for_regex,omitempty"`
	// WaitMS bounds the wait in milliseconds; nil means the default (10000
	// with WaitFor, else 700) and 0 means do not wait. Capped at 30000;
	// the wait ends early when the program exits.
	WaitMS *int `json:"wait_ms,omitempty"`
	// WaitUntil "input" returns as soon as the program waits for input
	// (state waiting_input); "settled" once the output no result returned
	// yet has stayed still for SettleMS (a redraw of top or watch has
	// ended). WaitMS then defaults to 10000.
	WaitUntil string `json:"wait_until,omitempty"`
	// SettleMS is as in StartRequest.
	SettleMS *int `json:"settle_ms,omitempty"`
	// Screen "full" makes Output the rendered screen; "diff" makes it a
	// unified diff of the screen before and after this call (see
	// screenview.go for its form). Both add Cursor and Highlights. Empty
	// means the plain output.
	Screen string `json:"screen,omitempty"`
	// Peek returns the output without consuming it: the next read returns
	// it again. A peek waits and matches as any read does.
	Peek bool `json:"peek,omitempty"`
	// SendSignal is sent to the terminal's foreground process group
	// before typing: a name with or without "SIG" ("SIGINT", "int") or a
	// number ("2").
	SendSignal string `json:"send_signal,omitempty"`
	// Cols and Rows resize the terminal before typing (the program gets
	// SIGWINCH); 0 keeps the current size.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
}

// StartResult is the result of pty-start.
type StartResult struct {
	ID     string `json:"id"`
	Output string `json:"output"`
	// Matched is true when WaitFor appeared before the wait ran out.
	Matched bool `json:"matched"`
	// Exited is true once the program has exited; ExitCode is set when it
	// exited normally, Signal ("SIGKILL") when a signal ended it.
	Exited   bool   `json:"exited"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Truncated counts the bytes of output that were dropped from the
	// scrollback before any result returned them, over the session's life.
	Truncated int64 `json:"truncated,omitempty"`
	// OutputLost counts the bytes of Truncated that this result's own
	// output lost: 0 when it holds everything since the last read. It is
	// set whenever Truncated is not 0, nil otherwise. A cut to
	// MaxOutputBytes is not a loss: the marker in Output says what it left
	// out, and Spool holds it.
	OutputLost *int64 `json:"output_lost,omitempty"`
	// Spool is the reference Options.Spool returned for the whole output
	// when Output was cut to MaxOutputBytes; empty otherwise.
	Spool string `json:"spool,omitempty"`
	// InputHidden, State and Foreground are as in WriteResult.
	InputHidden bool   `json:"input_hidden,omitempty"`
	State       string `json:"state"`
	Foreground  string `json:"foreground,omitempty"`
	// ForegroundExe is as in WriteResult.
	ForegroundExe string `json:"foreground_exe,omitempty"`
	// PromptAfter: in a shell session started with a command, the prompt
	// came back and ExitCode is the command's.
	PromptAfter bool `json:"prompt_after,omitempty"`
	// Cursor and Highlights come with a screen mode (StartRequest.Screen).
	Cursor     *Cursor     `json:"cursor,omitempty"`
	Highlights []Highlight `json:"highlights,omitempty"`
	// Waited and StateGuessed are as in WriteResult.
	Waited       string `json:"waited,omitempty"`
	StateGuessed bool   `json:"state_guessed,omitempty"`
	// Notice says what kept the start from going as usual: a shell
	// snapshot that could not be made (Options.ShellSnapshot), or a start
	// that has printed nothing yet, how long it waited and what is in
	// front. Empty otherwise.
	Notice string `json:"notice,omitempty"`
}

// WriteResult is the result of pty-write.
type WriteResult struct {
	ID        string `json:"id"`
	Output    string `json:"output"`
	Matched   bool   `json:"matched"`
	Exited    bool   `json:"exited"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	Signal    string `json:"signal,omitempty"`
	Truncated int64  `json:"truncated,omitempty"`
	// OutputLost is as in StartResult.
	OutputLost *int64 `json:"output_lost,omitempty"`
	// InputHidden is true while the terminal does not echo what is typed
	// in line mode: the program is most likely reading a password.
	InputHidden bool `json:"input_hidden,omitempty"`
	// Spool is the reference Options.Spool returned for the whole output
	// when Output was cut to MaxOutputBytes; empty otherwise.
	Spool string `json:"spool,omitempty"`
	// State is "waiting_input", "running" or "exited" (see TerminalState);
	// Foreground names the program that holds the terminal.
	State      string `json:"state"`
	Foreground string `json:"foreground,omitempty"`
	// ForegroundExe is the path of the executable of the program at a
	// password prompt, while InputHidden: who WriteSecret would type into.
	ForegroundExe string `json:"foreground_exe,omitempty"`
	// PromptAfter: in a shell session, a command's prompt came back during
	// this write, and ExitCode is that command's.
	PromptAfter bool `json:"prompt_after,omitempty"`
	// Cursor is where the cursor is, zero-based, with a screen mode.
	Cursor *Cursor `json:"cursor,omitempty"`
	// Highlights are the spans drawn in reverse video or on a background
	// of their own (a selected menu item, a focused button), with a screen
	// mode; at most 16. A row of key labels (a function-key bar) is not
	// listed (see highlights). The first read of a screen lists them top
	// to bottom; later reads list what changed since the previous read
	// first and leave out the spans that have been the same on every read,
	// such as a status bar (see litMemory).
	Highlights []Highlight `json:"highlights,omitempty"`
	// Waited says why the call's wait ended: "match" (wait_for appeared),
	// "input" (the kernel shows the program waiting for input), "exit"
	// (it exited), "timeout" (the wait ran out) or "quiet" (output
	// stopped for a program the library cannot see into, such as ssh or
	// a tmux client, or a start's first output paused: a guess), or
	// "settled" (wait_until "settled": the output changed, then stayed
	// still for settle_ms). See the Waited constants.
	Waited string `json:"waited,omitempty"`
	// StateGuessed is true when State is "waiting_input" only because a
	// relay's output paused (TerminalState.Guessed): the program may
	// still be working on the far side.
	StateGuessed bool `json:"state_guessed,omitempty"`
}

// KillResult is the result of pty-kill.
type KillResult struct {
	ID string `json:"id"`
	// Output is what the program wrote that no result had returned yet.
	Output   string `json:"output"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Truncated counts, as on the other results, the bytes of output
	// dropped from the scrollback before any result returned them.
	Truncated int64 `json:"truncated,omitempty"`
	// OutputLost is as in StartResult.
	OutputLost *int64 `json:"output_lost,omitempty"`
	// Spool is the reference Options.Spool returned for the whole output
	// when Output was cut to MaxOutputBytes; empty otherwise.
	Spool string `json:"spool,omitempty"`
}

// KillRequest is the argument of pty-kill.
type KillRequest struct {
	ID string `json:"id"`
}

// Millis returns a pointer to n, for the optional millisecond fields such
// as WaitMS, where nil means the default: WaitMS: agentpty.Millis(700).
func Millis(n int) *int { return &n }

// Cursor is a zero-based screen position.
type Cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// Highlight is a span of one screen row drawn in reverse video or on a
// background of its own: a menu's selected item, a focused button, a
// selection bar (see highlights for the rule). Row and Col are zero-based; Col and Len
// count terminal columns (a wide character takes two).
type Highlight struct {
	Row int `json:"row"`
	Col int `json:"col"`
	Len int `json:"len"`
	// Text is the span's text, blanks at either end left out.
	Text string `json:"text"`
}

// SecretRequest is the argument of WriteSecretWith: the session, the
// secret, and how to wait for the program's answer, as in WriteRequest.
type SecretRequest struct {
	// ID names the session ("pty-1").
	ID string
	// Secret is typed, then Enter; it holds no control bytes. The caller
	// may wipe it once the call returns.
	Secret []byte
	// WaitFor, WaitForRegex, WaitMS and WaitUntil wait as a write's do:
	// nil WaitMS means 10000 ms with WaitFor, WaitForRegex or WaitUntil,
	// else 700.
	WaitFor      string
	WaitForRegex string
	WaitMS       *int
	WaitUntil    string
}
