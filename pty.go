package agentpty

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Tool names, as a model sees them.
const (
	ToolStart = "pty-start"
	ToolWrite = "pty-write"
	ToolKill  = "pty-kill"
)

// Errors returned by the library. Each returned error wraps one of these
// for errors.Is and names the session and the value involved.
var (
	ErrNoSession       = errors.New("agentpty: no such session")
	ErrExited          = errors.New("agentpty: session has exited")
	ErrTooManySessions = errors.New("agentpty: too many sessions")
	ErrDenied          = errors.New("agentpty: denied")
	ErrClosed          = errors.New("agentpty: manager is closed")
	ErrInvalid         = errors.New("agentpty: invalid argument")
	ErrUnsupported     = errors.New("agentpty: unsupported on this platform")
)

// errorf wraps a sentinel with the particulars, so the message reads
// "agentpty: invalid argument: pty-3: cols 5000 is outside 1-1000".
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

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

// waitedText tells a model what a result's waited and state_guessed say.
const waitedText = "waited says why the wait ended: \"match\" (wait_for appeared), \"input\" (the kernel shows the program waiting for input), " +
	"\"exit\" (it exited; for pty-run, the command ended), \"timeout\" (the wait ran out: the program may still be working), " +
	"\"quiet\" (output stopped for a program whose far side cannot be seen, such as ssh, tmux or sudo, or a start's first output paused). " +
	"\"quiet\" and state_guessed: true are guesses: the far side may still be working, so read again (wait_for its prompt) before typing. "

// Tool describes one tool for a model: its name, what it does, the JSON
// Schema of its arguments and of its result, and hints for the host.
type Tool struct {
	Name string `json:"name"`
	// Title is a short human-readable name for a host's UI.
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the JSON Schema of the result Call returns; results
	// may carry fields it does not list.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations tell a host what calling the tool may do.
	Annotations ToolAnnotations `json:"annotations"`
}

// ToolAnnotations are hints about a tool's effects, named as MCP names
// them. A host may use them to decide what needs a person's consent; they
// are hints, not guarantees.
type ToolAnnotations struct {
	// ReadOnlyHint: the tool changes nothing.
	ReadOnlyHint bool `json:"readOnlyHint"`
	// DestructiveHint: the tool may destroy or overwrite (a command the
	// model runs can delete files; a kill ends a program's state).
	DestructiveHint bool `json:"destructiveHint"`
	// IdempotentHint: calling it again with the same arguments has no
	// further effect.
	IdempotentHint bool `json:"idempotentHint"`
	// OpenWorldHint: the tool reaches beyond the host's own sessions (the
	// network, other machines through ssh).
	OpenWorldHint bool `json:"openWorldHint"`
}

// runs is what starting or typing into a program may do: anything a
// command can.
var runs = ToolAnnotations{DestructiveHint: true, OpenWorldHint: true}

var tools = []Tool{
	{
		Name:         ToolStart,
		Title:        "Start a terminal program",
		Annotations:  runs,
		OutputSchema: outputSchema(StartResult{}),
		Description: "Start a program in a new interactive terminal (a pseudo-terminal, like a person's). " +
			"Use it for anything that needs a terminal: REPLs (python3, node), debuggers, ssh, sudo and other password prompts, " +
			"watch-mode servers, full-screen programs (vim, less, htop). The command runs as `bash -lc COMMAND`. " +
			"Returns the session id for pty-write and pty-kill, and the output so far as plain text; " +
			"for a full-screen program, the screen as a person sees it; move in it with pty-write's keys ([\"Down\", \"Enter\"]). " +
			"state says whether the program now waits for input (waiting_input), is running, or exited; foreground names it. " +
			waitedText +
			"With shell: true it starts an interactive bash for pty-run. truncated and output_lost are as in pty-write.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "Shell command to run, e.g. \"python3\" or \"vim notes.txt\"."},
    "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Terminal width in columns (default 120)."},
    "rows": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Terminal height in rows (default 32)."},
    "cwd": {"type": "string", "description": "Working directory."},
    "wait_for": {"type": "string", "description": "Return as soon as this literal text appears in the output, e.g. a prompt like \">>> \"."},
    "wait_for_regex": {"type": "string", "description": "Like wait_for, an RE2 regular expression, e.g. \"\\\\$ $\" for a shell prompt ending the output; (?m) makes ^ and $ match at every line. Give wait_for or wait_for_regex, not both."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 30000, "description": "Longest wait in milliseconds (default 10000 with wait_for or wait_until, else until output goes quiet, at most 700)."},
    "wait_until": {"type": "string", "enum": ["input", "settled"], "description": "\"input\": return as soon as the program waits for input (state waiting_input), with no text to wait for. \"settled\": for programs that redraw and never wait for input (top, watch, dashboards): return once the output has stayed still for settle_ms; waited says \"settled\" or \"timeout\"."},
    "settle_ms": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "With wait_until \"settled\": how long the output must stay still, in milliseconds (default 300)."},
    "shell": {"type": "boolean", "description": "Start an interactive bash for pty-run, which returns each command's own output and exit code; command is then optional and runs first."},
    "screen": {"type": "string", "enum": ["full", "diff"], "description": "For full-screen programs (menus, dialogs, editors): \"full\" returns the whole rendered screen as output, \"diff\" a unified diff of it; both add cursor {row, col} and highlights [{row, col, len, text}] (zero-based), the selected or focused items."}
  },
  "additionalProperties": false
}`),
	},
	{
		Name:         ToolWrite,
		Title:        "Type into a terminal",
		Annotations:  runs,
		OutputSchema: outputSchema(WriteResult{}),
		Description: "Type into a terminal session and read what it printed since the last read, as plain text " +
			"(colours and cursor movement removed, edited lines shown in their final form; for a full-screen program, the screen). " +
			"Backslash escapes in input are decoded: \\r is Enter, \\x03 is Ctrl-C, \\x04 Ctrl-D, \\t Tab. " +
			"To press keys, above all to move in menus, editors and full-screen programs (htop, vim, dialog, mc), give keys, a list of key names as tmux's send-keys spells them: " +
			"[\"Down\", \"Down\", \"Enter\"], \"Up\", \"Left\", \"Right\", \"Home\", \"End\", \"PageUp\", \"PageDown\", \"Tab\", \"BTab\", \"Escape\", \"BSpace\", \"Space\", \"F1\"…\"F12\", \"C-c\", \"M-x\", \"C-Left\"; " +
			"they are sent as a keyboard sends them in the program's current mode, after input. " +
			"When the input is code or text that holds backslashes of its own (print(\"a\\nb\"), C:\\temp, a regex), set literal so it is typed exactly, and press Enter with submit. " +
			"Set submit to press Enter last, after input and keys. Use wait_for (or wait_for_regex) to return the moment some text (such as the next prompt) appears in what the program printed; the echo of your own input never matches. " +
			"Empty input just reads new output. input_hidden means the program is reading a password. " +
			"truncated counts the output bytes the session lost over its whole life (dropped from its scrollback before any read returned them); " +
			"output_lost is how many of them this result's own output lost: 0 means this output holds everything since the last read. " +
			"wait_until: \"input\" returns once the program waits for input, without guessing a wait. " +
			waitedText +
			"In a menu, dialog or editor, screen: \"diff\" shows what a key changed (the highlighted item, the cursor) and screen: \"full\" the whole screen.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "Session id from pty-start, e.g. \"pty-1\"."},
    "input": {"type": "string", "description": "Text to type; escapes like \\r, \\x03, \\t are decoded unless literal is set. For arrows and other keys, use keys."},
    "keys": {"type": "array", "items": {"type": "string"}, "description": "Keys to press after input, in order, named as tmux's send-keys names them: Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, Enter, Tab, BTab, Escape, BSpace, Space, F1-F12, KP0-KP9, KPEnter, a single character; C- (Ctrl), M- (Alt) and S- (Shift) before a name: C-c, C-d, M-x, C-Left, S-F5. Each is sent as the terminal's keyboard would send it in the program's current mode, e.g. [\"Down\", \"Down\", \"Enter\"] to pick the third item of a menu."},
    "literal": {"type": "boolean", "description": "Type input exactly as given, decoding no escapes. Use it for code or text that holds backslashes, such as print(\"a\\nb\"), a Windows path or a regex; press Enter with submit."},
    "submit": {"type": "boolean", "description": "Press Enter last, after input and keys."},
    "wait_for": {"type": "string", "description": "Return as soon as this literal text appears in what the program printed since the last read (the echo of the input typed does not count)."},
    "wait_for_regex": {"type": "string", "description": "Like wait_for, an RE2 regular expression, e.g. \"\\\\$ $\" for a shell prompt ending the output; (?m) makes ^ and $ match at every line. Give wait_for or wait_for_regex, not both."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 30000, "description": "Longest wait in milliseconds (default 10000 with wait_for or wait_until, else 700)."},
    "wait_until": {"type": "string", "enum": ["input", "settled"], "description": "\"input\": return as soon as the program waits for input (state waiting_input). \"settled\": for programs that redraw and never wait for input (top, watch, dashboards): return once the output not yet read has stayed still for settle_ms, between two redraws; waited says \"settled\" or \"timeout\"."},
    "settle_ms": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "With wait_until \"settled\": how long the output must stay still, in milliseconds (default 300)."},
    "screen": {"type": "string", "enum": ["full", "diff"], "description": "\"full\": output is the whole rendered screen, to look at a full-screen program (menu, dialog, editor). \"diff\": output is a unified diff of the screen before and after this call (hunk headers give 1-based rows, e.g. @@ -5 +5 @@; the header lines give the cursor; a row whose highlight alone changed is a context line under a header naming the highlighted text): use it after a keystroke such as Tab or an arrow to see what moved. Both add cursor {row, col} and highlights [{row, col, len, text}] (zero-based): the spans drawn in reverse video or on a distinct background, such as the selected menu item or the focused button. A row of key labels (a function-key bar) is never listed; after the first read of a screen, highlights lists what changed first and leaves out spans that looked the same on every read (a status bar)."},
    "peek": {"type": "boolean", "description": "Look without consuming: the next read returns this output again."},
    "send_signal": {"type": "string", "description": "Signal for the foreground program, sent before typing: a name like \"SIGINT\", \"TERM\", or a number. Use it when a control key is not read (raw mode) or to send one with no key (SIGTERM, SIGHUP)."},
    "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Resize the terminal to this many columns before typing (the program is told, SIGWINCH)."},
    "rows": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Resize the terminal to this many rows before typing."}
  },
  "required": ["id"],
  "additionalProperties": false
}`),
	},
	{
		Name:         ToolRun,
		Title:        "Run a shell command",
		Annotations:  runs,
		OutputSchema: outputSchema(RunResult{}),
		Description: "Run one shell command in a shell session (pty-start with shell: true) and wait for the prompt to return. " +
			"Returns the command's output only (no echo, no prompt) and its exit_code, with prompt_after: true. " +
			"prompt_after: false means the timeout ran out or the command waits for input (state waiting_input): " +
			"continue it with pty-write (\\x03 interrupts it); the write during which the prompt returns carries prompt_after and exit_code. " +
			waitedText +
			"Shell state (cd, variables, functions) persists between runs. truncated and output_lost are as in pty-write.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "Shell session id from pty-start with shell: true."},
    "command": {"type": "string", "description": "Shell command line, typed as it is (may span lines)."},
    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 30000, "description": "Longest wait for the prompt in milliseconds (default 10000)."},
    "wait_until": {"type": "string", "enum": ["input"], "description": "A run always returns early when the command waits for input; \"input\" says so explicitly."}
  },
  "required": ["id", "command"],
  "additionalProperties": false
}`),
	},
	{
		Name:         ToolKill,
		Title:        "End a terminal session",
		Annotations:  ToolAnnotations{DestructiveHint: true, IdempotentHint: true},
		OutputSchema: outputSchema(KillResult{}),
		Description: "End a terminal session: stop its program and everything it started, and free the terminal. " +
			"Returns the output not yet read and how the program ended; truncated and output_lost are as in pty-write.",
		InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "Session id from pty-start, e.g. \"pty-1\"."}
  },
  "required": ["id"],
  "additionalProperties": false
}`),
	},
	listTool,
}

// Tools returns the tools with descriptions written for a model, the JSON
// Schemas of their arguments and results, and their annotations. The
// slice is the caller's; a host registers every tool in it as it is.
func (m *Manager) Tools() []Tool {
	out := make([]Tool, len(tools))
	copy(out, tools)
	for i := range out {
		out[i].InputSchema = m.sizeDefaults(out[i].InputSchema)
		if out[i].Name == ToolStart {
			out[i].Description = m.shellNamed(out[i].Description)
		}
	}
	return out
}

// shellNamed writes the manager's Options.Shell into pty-start's
// description, so the model reads the command line its command runs
// under; with a shell snapshot, what runs instead.
func (m *Manager) shellNamed(desc string) string {
	if m.snap != nil {
		return strings.Replace(desc, "The command runs as `bash -lc COMMAND`.", snapshotNamed, 1)
	}
	return strings.Replace(desc, "`bash -lc COMMAND`", "`"+strings.Join(m.opts.Shell, " ")+" COMMAND`", 1)
}

// snapshotNamed is how pty-start's description says a command runs from
// the login shell's snapshot (Options.ShellSnapshot).
const snapshotNamed = "The command runs as `bash -c COMMAND` with what the login profile sets up " +
	"(variables, PATH, functions, aliases, shell options) loaded from a snapshot taken once; the profile itself does not run again " +
	"(if the snapshot cannot be made, the command runs as `bash -lc COMMAND`)."

// sizeDefaults writes the manager's default terminal size into a schema's
// descriptions, so the model reads the size it will get.
func (m *Manager) sizeDefaults(schema json.RawMessage) json.RawMessage {
	if m.opts.Cols != DefaultCols {
		schema = bytes.ReplaceAll(schema, []byte(fmt.Sprintf("columns (default %d)", DefaultCols)), []byte(fmt.Sprintf("columns (default %d)", m.opts.Cols)))
	}
	if m.opts.Rows != DefaultRows {
		schema = bytes.ReplaceAll(schema, []byte(fmt.Sprintf("rows (default %d)", DefaultRows)), []byte(fmt.Sprintf("rows (default %d)", m.opts.Rows)))
	}
	return schema
}

// Call runs the tool name with JSON arguments and returns its JSON result,
// for hosts that dispatch tool calls by name.
func (m *Manager) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	var res any
	var err error
	switch name {
	case ToolStart:
		var req StartRequest
		if err := decodeArgs(name, args, &req); err != nil {
			return nil, err
		}
		res, err = m.Start(ctx, req)
	case ToolWrite:
		var req WriteRequest
		if err := decodeArgs(name, args, &req); err != nil {
			return nil, err
		}
		res, err = m.Write(ctx, req)
	case ToolRun:
		var req RunRequest
		if err := decodeArgs(name, args, &req); err != nil {
			return nil, err
		}
		res, err = m.Run(ctx, req)
	case ToolKill:
		var req KillRequest
		if err := decodeArgs(name, args, &req); err != nil {
			return nil, err
		}
		res, err = m.Kill(ctx, req.ID)
	case ToolList:
		var req ListRequest
		if err := decodeArgs(name, args, &req); err != nil {
			return nil, err
		}
		res, err = m.ListSessions(ctx)
	default:
		return nil, errorf(ErrInvalid, "unknown tool %q (want %s, %s, %s, %s or %s)", name, ToolStart, ToolWrite, ToolRun, ToolKill, ToolList)
	}
	if err != nil {
		return nil, err
	}
	return marshal(res)
}

// marshal encodes a result without HTML escaping: a model reads ">>> ",
// not "\u003e\u003e\u003e ".
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeArgs is strict: a misspelt argument is an error the model can act
// on, not a silently ignored field.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if len(args) > maxArgsBytes {
		return errorf(ErrInvalid, "%s: arguments are %d bytes of JSON, more than the %d a call may have", tool, len(args), maxArgsBytes)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return errorf(ErrInvalid, "%s: arguments must be a JSON object, not a JSON %s", tool, typeErr.Value)
		case errors.As(err, &typeErr):
			return errorf(ErrInvalid, "%s: argument %q must be %s, not a JSON %s", tool, typeErr.Field, typeErr.Type, typeErr.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return errorf(ErrInvalid, "%s: unknown argument %s", tool, strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return errorf(ErrInvalid, "%s: malformed JSON arguments %.200q: %v", tool, args, err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(ErrInvalid, "%s: malformed JSON arguments %.200q: trailing data", tool, args)
	}
	return nil
}
