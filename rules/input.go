package rules

import (
	"path"
	"slices"
	"strings"
)

// Commands that change what a shell reads next, or where from, beyond
// set and shopt: the terminal's special characters and input modes
// (stty, tset, reset), the shell's own input rebound by exec, and the
// history list, which history reads and writes as files.

// ttySettings are the words stty takes that only read or size the
// terminal; every other setting may make a printable character a special
// one (stty kill @) or change the bytes a program reads (istrip, iuclc,
// icanon), so that a typed line runs as other than what was judged.
var ttySettings = map[string]int{ // the words each takes after it
	"-a": 0, "--all": 0, "-g": 0, "--save": 0, "size": 0, "speed": 0,
	"rows": 1, "cols": 1, "columns": 1, "-F": 1, "--file": 1,
}

// terminalChange says why stty, tset or reset with args changes how the
// terminal reads what is typed, or "".
func terminalChange(name string, args []token) string {
	switch path.Base(name) {
	case "stty":
		for i := 0; i < len(args); i++ {
			v := args[i].val
			if !args[i].static {
				return name + " with " + clip(args[i].raw) + ", a setting only the shell knows"
			}
			n, ok := ttySettings[v]
			if !ok && !strings.HasPrefix(v, "--file=") && !(strings.HasPrefix(v, "-F") && len(v) > 2) {
				return name + " " + clip(v) + ", which changes how the terminal reads what is typed"
			}
			i += n
		}
	case "tset", "reset":
		// -e, -i and -k set the erase, interrupt and kill characters
		// (tset -k @); the rest restore the defaults, which are control
		// characters.
		for _, a := range args {
			if !a.static {
				return name + " with " + clip(a.raw) + ", an option only the shell knows"
			}
			if len(a.val) > 1 && a.val[0] == '-' && strings.ContainsAny(a.val[1:], "eik") {
				return name + " " + clip(a.val) + ", which sets a special character of the terminal"
			}
		}
	}
	return ""
}

// historyChange says why history with args does more than list or clear
// the history: -a, -n, -r and -w read or write a file it names (or
// HISTFILE), -s adds a line and -p expands one, or "".
func historyChange(args []token) string {
	for i := 0; i < len(args); i++ {
		switch v := args[i].val; {
		case v == "-c":
		case v == "-d" && i+1 < len(args):
			i++
		case strings.HasPrefix(v, "-d") && len(v) > 2:
		case len(args) == 1 && isDigits(v):
		default:
			return "history " + clip(args[i].raw) + ", which reads or writes a file it names, or adds to the history"
		}
	}
	return ""
}

// rebindsShell says why c, an exec that runs no command, keeps its
// redirections for the shell itself, or "": exec < x.sh makes an
// interactive shell read x.sh as its commands, exec 2>f sends its prompt
// away. Reached through command, builtin or time too. Every redirection
// counts, a compound command's included ({ exec; } < x.sh is refused
// though bash undoes it).
func (c *simpleCmd) rebindsShell() string {
	if !slices.ContainsFunc(c.toks, func(t token) bool { return t.kind == tokOp }) {
		return ""
	}
	for _, run := range c.runs {
		if run[0].static && run[0].val == "exec" {
			if inner, _ := unwrap(run); len(inner) == 0 {
				return "exec with redirections and no command, which rebinds the shell's own input or output"
			}
		}
	}
	return ""
}
