package rules

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveWritesRules: Rules judge typed lines as a shell would read
// them. The control shows the same write removes d when writes are not
// approved.
func TestApproveWritesRules(t *testing.T) {
	testkit.Parallel(t)
	rules := Rules{Allow: []string{"bash --norc --noprofile", "echo *"}, Deny: []string{"rm *"}}
	for _, approveWrites := range []bool{false, true} {
		t.Run("ApproveWrites="+strconv.FormatBool(approveWrites), func(t *testing.T) { writeRules(t, rules, approveWrites) })
	}
}

// writeRules starts a shell approved by rules and types rm -rf d into it.
func writeRules(t *testing.T, rules Rules, approveWrites bool) {
	dir := t.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, agentpty.Options{Shell: []string{"bash", "-c"}, Approver: rules, ApproveWrites: approveWrites})
	res := mustStart(t, m, agentpty.StartRequest{Command: "bash --norc --noprofile", Cwd: dir, WaitFor: "bash-"})
	prompt := res.Output[strings.LastIndex(res.Output, "bash-"):] // bash-5.2#
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "echo hi", Submit: true, WaitFor: "hi\n" + prompt})
	_, err := m.Write(waitCtx(t), agentpty.WriteRequest{ID: res.ID, Input: "rm -rf d", Submit: true, WaitFor: prompt})
	_, statErr := os.Stat(d)
	// History expansion rewrites an approved-looking line into another:
	// the quotes of the line before are stripped and touch runs.
	pwn := filepath.Join(dir, "pwn")
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "echo 'x;touch pwn'", Submit: true, WaitFor: "x;touch pwn\n" + prompt})
	_, histErr := m.Write(waitCtx(t), agentpty.WriteRequest{ID: res.ID, Input: "echo !!:1:gs/'//", Submit: true, WaitFor: prompt})
	_, pwnErr := os.Stat(pwn)
	if !approveWrites {
		if err != nil || statErr == nil {
			t.Fatalf("control: write %v, d %v; want d removed", err, statErr)
		}
		if histErr != nil || pwnErr != nil {
			t.Fatalf("control: write %v, pwn %v; want pwn created", histErr, pwnErr)
		}
		return
	}
	if !errors.Is(histErr, agentpty.ErrDenied) || pwnErr == nil {
		t.Errorf("history expansion: write %v, pwn %v; want denied and no pwn", histErr, pwnErr)
	}
	if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), `matches deny rule "rm *"`) {
		t.Errorf("Write: %v; want the deny rule named", err)
	}
	if statErr != nil {
		t.Errorf("d: %v after a denied write", statErr)
	}
	for input, want := range map[string]string{
		"echo a":             "types a partial line",
		"echo a \\\r":        "ends in a line continuation",
		"\x15rm -rf d\r":     `types the control character '\x15'`,
		"ls\r":               "matches no allow rule",
		"echo x\t\r":         `types the control character '\t'`,
		"echo !!:1:gs/'//\r": "which an interactive shell expands from its history",
		"^echo^rm\r":         "which an interactive shell expands from its history",
	} {
		if _, err := m.Write(waitCtx(t), agentpty.WriteRequest{ID: res.ID, Input: input}); !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) {
			t.Errorf("Write(%q): %v; want ...%s", input, err, want)
		}
	}
}
