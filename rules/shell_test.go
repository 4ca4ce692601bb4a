package rules

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestRulesReadWordsAsBash: the words Rules see are the words bash passes
// to the program, byte for byte: quotes, escapes, $'...' and line
// continuations. printf prints each argument bash gave it between < >.
func TestRulesReadWordsAsBash(t *testing.T) {
	testkit.Parallel(t)
	words := []string{
		`plain`, `'single'`, `"double"`, `a\ b`, `\$x`, `"\$x"`, `"a\"b"`, `"a\\b"`, `"a\b"`, `'a\b'`, `a"b"'c'`,
		`$'\x41\101\x4a\u00e9\U0001F600'`, `$'\a\b\e\E\f\n\r\t\v\\\'\"\?'`, `$'\x'`, `$'\q'`, `$'\1234'`, `$'\cA\cz\c['`, `$'\c?'`, `$'\c'`, `$'\c\\'`,
		`$'\x7e\x7'`, `$'\u41'`, `\\`, `x\`, `'#'`, `a#b`, `{}`, `[`, `]`,
		`"$"`, `$`, `a$`, `"'"`, `'"'`, `\'`, `\"`, `é`, `$'\xff'`, `$'\u00e9'`, `$'\U110000'`, `$'\ud800'`, `$'\U7fffffff'`,
	}
	for _, w := range words {
		command := "printf '<%s>' " + w
		sc, err := parseCommand(command)
		if err != nil {
			t.Errorf("%q: %v", w, err)
			continue
		}
		if len(sc.cmds) != 1 {
			t.Errorf("%q: %d commands", w, len(sc.cmds))
			continue
		}
		var want strings.Builder
		static := true
		for _, tok := range sc.cmds[0].toks[2:] {
			want.WriteString("<" + tok.val + ">")
			static = static && tok.static
		}
		if !static {
			continue // an expansion: Rules know it by its text, not its value
		}
		out, err := exec.Command("bash", "-c", command).Output()
		if err != nil {
			t.Errorf("bash on %q: %v", command, err)
			continue
		}
		if string(out) != want.String() {
			t.Errorf("%q: bash passes %q, Rules read %q", w, out, want.String())
		}
	}
}

// TestGlobMatch: * any characters, ? one character (not one byte), a
// backslash the next character literally.
func TestGlobMatch(t *testing.T) {
	testkit.Parallel(t)
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"", "", true}, {"a", "a", true}, {"a", "b", false}, {"*", "", true}, {"*", "abc", true},
		{"a*c", "abbbc", true}, {"a*c", "abcd", false}, {"?", "é", true}, {"??", "é", false}, {"*.py", "x.py", true},
		{"*.py", "x.pyc", false}, {`\*`, "*", true}, {`\*`, "a", false}, {`a\?`, "a?", true}, {`a\?`, "ab", false},
		{"*a*b*c", "xaybzc", true}, {"*a*b*c", "xaybz", false}, {"go test -run=*", "go test -run=X", true},
		{"é*", "éa", true}, {"\xff", "\xfe", false}, {`x\`, `x\`, true},
	} {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pat, tc.s, got)
		}
	}
}
