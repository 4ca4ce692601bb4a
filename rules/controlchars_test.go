package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveWritesSpecialCharacters: with a printable character bound to
// one of the terminal's special characters, a line the rules read as ls
// runs rm -rf d, since readline (like the line discipline) edits the line
// with it: VKILL discards what comes before, VWERASE and VERASE take the
// quote that hid the rest. The terminal's settings are made by the start
// command, which the rules never read as typed text. The control types
// the line unconfined and d is gone; the rules approve the line on its
// own; under ApproveWrites the write is refused, naming the character and
// the control, and d stays.
func TestApproveWritesSpecialCharacters(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	for _, tc := range []struct{ stty, control, line string }{
		{"stty kill @", "VKILL", "ls -d d @rm -rf d"},
		{"stty werase @", "VWERASE", "ls -d d '@; rm -rf d #'"},
		{"stty erase @", "VERASE", "ls -d d '@; rm -rf d #'"},
	} {
		t.Run(tc.control, func(t *testing.T) {
			rules := Rules{Allow: []string{promptCommand(tc.stty), "ls *"}}
			if err := rules.Approve(ctx, agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Input: tc.line + "\r", Foreground: "bash"}); err != nil {
				t.Fatalf("the rules refuse %q on its own: %v; the test would not show the fault", tc.line, err)
			}
			for _, confined := range []bool{false, true} {
				m := promptManager(t, rules, confined)
				res, dir := promptSession(t, m, tc.stty)
				_, err := typeLine(ctx, m, res.ID, tc.line)
				if !confined {
					if err != nil || !removed(dir) {
						t.Fatalf("control: %q typed after %q left d (%v): the attack does nothing", tc.line, tc.stty, err)
					}
					m.Close()
					continue
				}
				want := "types '@', which the terminal binds to " + tc.control
				if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), res.ID) {
					t.Errorf("%q after %q: %v; want ErrDenied naming %s and ...%s", tc.line, tc.stty, err, res.ID, want)
				}
				if removed(dir) {
					t.Errorf("%q after %q removed d", tc.line, tc.stty)
				}
				// A line without the character is still approved.
				if _, err := typeLine(ctx, m, res.ID, "ls -d d"); err != nil {
					t.Errorf("a line without @: %v", err)
				}
			}
		})
	}
}

// TestApproveWritesEveryControlChar: each special character the terminal
// reports, set to a printable one, refuses a write that types it, whoever
// approves (here an approver that approves everything), and names it; so
// do istrip and iuclc, which change the bytes typed. VLNEXT, VDISCARD and
// istrip are read under dash, which reads lines in canonical mode:
// readline disables the first two while it reads (binding VLNEXT's
// character to quoted-insert itself, which no check here can see; the
// rules refuse the stty that would set it) and clears istrip.
func TestApproveWritesEveryControlChar(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	all := agentpty.ApproverFunc(func(context.Context, agentpty.ApprovalRequest) error { return nil })
	m := newManager(t, agentpty.Options{Shell: []string{"bash", "-c"}, Approver: all, ApproveWrites: true})
	type setting struct{ stty, want, shell, line string }
	cases := []setting{
		{"istrip", "types the byte 0xc2, which the terminal strips to 7 bits (stty istrip)", "exec dash -i", "echo x»rm"},
		{"iuclc", `types 'A', which the terminal turns into lower case (stty iuclc)`, "", "echo A"},
	}
	for _, c := range []struct{ stty, control string }{
		{"intr", "VINTR"}, {"quit", "VQUIT"}, {"susp", "VSUSP"}, {"eof", "VEOF"}, {"eol", "VEOL"}, {"eol2", "VEOL2"},
		{"rprnt", "VREPRINT"}, {"discard", "VDISCARD"}, {"start", "VSTART"}, {"stop", "VSTOP"}, {"lnext", "VLNEXT"},
	} {
		sh := ""
		if c.stty == "lnext" || c.stty == "discard" {
			sh = "exec dash -i"
		}
		cases = append(cases, setting{c.stty + " @", "types '@', which the terminal binds to " + c.control + " (stty " + c.stty + ")", sh, "echo a@b"})
	}
	for _, tc := range cases {
		pre := "stty " + tc.stty
		cmd := promptCommand(pre)
		if tc.shell != "" {
			testkit.Need(t, "dash")
			cmd = pre + "; " + tc.shell
		}
		res := mustStart(t, m, agentpty.StartRequest{Command: cmd, WaitUntil: agentpty.WaitUntilInput})
		_, err := typeLine(ctx, m, res.ID, tc.line)
		if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrDenied ...%s", pre, err, tc.want)
		}
		if _, err := typeLine(ctx, m, res.ID, "echo ab"); err != nil {
			t.Errorf("%s: a line without them: %v", pre, err)
		}
		if _, err := m.Kill(ctx, res.ID); err != nil {
			t.Fatal(err)
		}
	}
}
