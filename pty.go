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
