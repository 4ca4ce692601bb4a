package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveRulesExecRebindsShell: exec with redirections and no command
// keeps them for the shell itself, so exec < x.sh makes the interactive
// shell read x.sh, unjudged, as its commands; "exec *" approved it, also
// reached through command. The control types it unconfined and x.sh's
// rm -rf d runs; under the rules each is refused and d stays. builtin
// exec < x.sh, which bash 5.2 undoes after the builtin, is refused too.
func TestApproveRulesExecRebindsShell(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	rules := Rules{Allow: []string{promptCommand(""), "exec *", "command *", "builtin *", "ls *"}}
	for _, line := range []string{"exec < x.sh", "command exec 0< x.sh"} {
		for _, confined := range []bool{false, true} {
			m := promptManager(t, rules, confined)
			res, dir := promptSession(t, m, "")
			if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("rm -rf d\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: line, Submit: true, WaitMS: ms(10000), WaitFor: "no-such-text"})
			if !confined {
				// bash reads x.sh and then its end: it exits.
				if err != nil || !removed(dir) {
					t.Fatalf("control: %q left d (%v): the attack does nothing", line, err)
				}
				m.Close()
				continue
			}
			want := "exec with redirections and no command, which rebinds the shell's own input or output"
			if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v; want ErrDenied ...%s", line, err, want)
			}
			if removed(dir) {
				t.Errorf("%q removed d", line)
			}
			m.Close()
		}
	}
	// exec that runs a command keeps being judged as a wrapper.
	if err := rules.Approve(context.Background(), agentpty.ApprovalRequest{Command: "exec ls -l > /dev/null"}); err != nil {
		t.Errorf("exec ls: %v", err)
	}
	all := Rules{Allow: []string{"*"}}
	for _, c := range []string{"builtin exec < x.sh", "command -p exec <x.sh", "exec 2>log", "exec 3<x.sh", "time exec <x.sh", "bash -c 'exec <x.sh'", "exec -a x <x.sh", "{ exec; } <x.sh"} {
		if err := all.Approve(context.Background(), agentpty.ApprovalRequest{Command: c}); !errors.Is(err, agentpty.ErrDenied) {
			t.Errorf("%q: %v; want ErrDenied", c, err)
		}
	}
}
