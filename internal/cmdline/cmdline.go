// Package cmdline holds what the library and its rules (package rules)
// agree on about a command line: the longest one exec runs, the shells
// whose typed lines read as bash reads them, how a word is quoted for
// bash, and how a command or an input is quoted in a message.
package cmdline

import (
	"fmt"
	"strings"
)

// MaxBytes is the longest command the rules read and Start runs: exec
// refuses a single argument of 128 KiB (MAX_ARG_STRLEN, its NUL included).
const MaxBytes = 128<<10 - 1

// shells run the string after -c as a command line: true for those that
// read it with bash's grammar (dash's sh and ash among them), false for
// those in a language the rules do not read.
var shells = map[string]bool{"bash": true, "rbash": true, "sh": true, "dash": true, "ash": true,
	"zsh": false, "ksh": false, "mksh": false}

// Shell reports whether name, a program's base name, is a shell that runs
// a command line after -c (known), and whether it reads typed lines and
// command lines with bash's grammar (bashLike): the rules judge lines
// typed only into those, and the library empties their line before an
// approved write.
func Shell(name string) (bashLike, known bool) {
	bashLike, known = shells[name]
	return bashLike, known
}

// Quote quotes s for a message, eliding the middle of a long one.
func Quote(s string) string {
	const keep = 100
	if len(s) <= 3*keep {
		return fmt.Sprintf("%q", s)
	}
	head, tail := strings.ToValidUTF8(s[:keep], ""), strings.ToValidUTF8(s[len(s)-keep:], "")
	return fmt.Sprintf("%q...(%d bytes)...%q", head, len(s)-2*keep, tail)
}

// ShellQuote quotes s for bash as one word.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
