package main

import (
	"encoding/json"
	"strings"

	"github.com/agentpty/agentpty"
)

// guide is what the model is told, a paragraph per capability; one whose
// tool or argument ("tool" or "tool.argument") the manager does not offer
// is left out, so the text stays true for the tools there are. A
// "tool.name" is an argument or a result field.
var guide = []struct{ needs, text string }{
	{"pty-start", "These tools give you real interactive terminals. Use them for what a pipe-based shell tool cannot drive: REPLs (python3, node), debuggers, ssh, sudo and other password prompts, watch-mode servers, full-screen programs (vim, less, htop, top)."},
	{"pty-start", "pty-start runs a command in a new terminal and returns its id (\"pty-1\") for the other tools. A program takes a moment to start (by default the login profile runs first): wait for its prompt before typing, or the first keys may be lost."},
	{"pty-run", "For a sequence of shell commands, start an interactive shell once (pty-start with shell: true) and run each command with pty-run: it waits for the prompt to come back and returns that command's output and exit_code, so you need not guess how long it takes."},
	{"pty-write", "pty-write types into a session. input decodes backslash escapes: \\r is Enter, \\t Tab, \\x03 Ctrl-C, \\x04 Ctrl-D; submit: true presses Enter last."},
	{"pty-write.keys", "To press keys, above all arrows in menus, editors and full-screen programs (htop, vim, mc, dialog), give keys: key names as tmux's send-keys spells them, such as [\"Down\", \"Down\", \"Enter\"], \"Escape\", \"BSpace\", \"C-c\", \"M-x\", \"F5\"; each is sent after input, as the terminal's keyboard sends it in the program's current mode."},
	{"pty-write.literal", "To type text that holds backslashes as they are (code, regular expressions, Windows paths, JSON), set literal: true; otherwise a \\n in your code is typed as a newline."},
	{"pty-write", "Do not guess waits with wait_ms: use wait_for with text you expect (the next prompt, such as \">>> \") and the call returns the moment it appears."},
	{"pty-write.wait_for_regex", "wait_for_regex does the same for an RE2 pattern, for text that varies (a prompt that holds a path, a count)."},
	{"pty-write.wait_until", "wait_until: \"input\" returns as soon as the program waits for input, whatever it printed: the best wait after typing into a REPL, an installer or a menu."},
	{"pty-write", "Every wait ends after at most 30 s, or when the program exits; if a long job is still running, call pty-write again with empty input to read on. output is what the program printed since your last read, as plain text, with edited lines in their final form."},
	{"pty-write.state", "Read state on each result: \"waiting_input\" means the program in the foreground (named by foreground) waits for you to type; \"running\" means it is still working: wait or read again; \"exited\" means it ended (see exit_code or signal)."},
	{"pty-write.waited", "waited says why a call's wait ended: \"input\" (the kernel shows the program waiting for you), \"match\" (your wait_for appeared), \"exit\", \"timeout\" (it is still working: read again), or \"quiet\": output stopped in a program whose far side cannot be seen (ssh, tmux, sudo). \"quiet\", and state_guessed: true beside waiting_input, are guesses: the far side may still be working, so wait_for the prompt you expect before you type."},
	{"pty-write", "input_hidden: true means the program is reading a password or other secret: do not invent one; ask the user. A password prompt on the far side of ssh or telnet does not set input_hidden: recognise it by its text and ask the user the same way."},
	{"pty-write.screen", "Full-screen programs show their screen as output. screen: \"full\" returns the whole screen with the cursor and the highlighted spans (a menu's selected item, a focused button); screen: \"diff\" returns only what changed, which is how to see the effect of a Tab or an arrow key."},
	{"pty-list", "pty-list lists the sessions still held, with their command, state, last line of output and exit status: use it to find a server or job started earlier instead of starting another."},
	{"pty-kill", "Kill every session you no longer need with pty-kill: a session holds one of a limited number of slots until it is killed, even after its program has exited."},
}

// instructions returns the server's instructions for tools.
func instructions(tools []agentpty.Tool) string {
	offered := map[string]bool{}
	for _, t := range tools {
		offered[t.Name] = true
		for _, s := range []json.RawMessage{t.InputSchema, t.OutputSchema} {
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(s, &schema)
			for p := range schema.Properties {
				offered[t.Name+"."+p] = true
			}
		}
	}
	var b strings.Builder
	for _, g := range guide {
		if offered[g.needs] {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(g.text)
		}
	}
	return b.String()
}
