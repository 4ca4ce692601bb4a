package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveRulesTerminalSettings: "stty *" approved stty kill @, after
// which "ls *" approved a line that bash runs as rm -rf d (readline binds
// the terminal's kill character to unix-line-discard); tset -k @ and
// reset -k @ set it too, and stty lnext @ makes @ quote the next
// character. The control types both lines unconfined and d is
// gone; under the rules the settings are refused, naming them, the line
// after them runs as ls, and d stays.
func TestApproveRulesTerminalSettings(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	for _, tc := range []struct{ set, line string }{
		{"stty kill @", "ls -d d @rm -rf d"}, {"tset -k @ -Q", "ls -d d @rm -rf d"}, {"reset -Q -k @", "ls -d d @rm -rf d"},
		// readline binds VLNEXT to quoted-insert and hides it from the
		// terminal while it reads: only the rules keep it unset.
		{"stty lnext @", `ls -d d \@'; rm -rf d #'`},
	} {
		set := tc.set
		t.Run(strings.ReplaceAll(set, " ", "_"), func(t *testing.T) {
			rules := Rules{Allow: []string{promptCommand(""), "stty *", "tset *", "reset *", "ls *"}}
			for _, confined := range []bool{false, true} {
				m := promptManager(t, rules, confined)
				res, dir := promptSession(t, m, "")
				_, err := typeLine(ctx, m, res.ID, set)
				if !confined {
					if err != nil {
						t.Fatal(err)
					}
					if _, err := typeLine(ctx, m, res.ID, tc.line); err != nil || !removed(dir) {
						t.Fatalf("control: the line after %q left d (%v): the attack does nothing", set, err)
					}
					m.Close()
					continue
				}
				if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), "which sets a special character") &&
					!strings.Contains(err.Error(), "which changes how the terminal reads what is typed") {
					t.Errorf("%q: %v; want ErrDenied naming the setting", set, err)
				}
				if _, err := typeLine(ctx, m, res.ID, tc.line); err != nil || removed(dir) {
					t.Errorf("the line after the refused %q: %v; removed d: %v", set, err, removed(dir))
				}
			}
		})
	}
}

// TestApproveRulesTerminalSettingsJudged: stty may read the terminal and
// size it; every other setting, and tset or reset setting a character,
// is refused wherever it runs.
func TestApproveRulesTerminalSettingsJudged(t *testing.T) {
	testkit.Parallel(t)
	all := Rules{Allow: []string{"*"}}
	for _, c := range []string{"stty", "stty -a", "stty -g", "stty size", "stty rows 40 cols 100", "stty -F /dev/tty -a",
		"stty --file=/dev/tty size", "tset -Q", "reset", "tset -I -Q xterm"} {
		if err := all.Approve(context.Background(), agentpty.ApprovalRequest{Command: c}); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	for c, want := range map[string]string{
		"stty kill @":              "stty kill, which changes how the terminal reads",
		"stty werase '#'":          "stty werase",
		"stty erase @":             "stty erase",
		"stty lnext @":             "stty lnext",
		"stty eol ';'":             "stty eol",
		"stty istrip":              "stty istrip",
		"stty -icanon":             "stty -icanon",
		"stty iuclc":               "stty iuclc",
		"stty sane":                "stty sane",
		"stty $X":                  "stty with $X, a setting only the shell knows",
		"/bin/stty intr @":         "/bin/stty intr",
		"sudo -u root stty intr @": "stty intr",
		"bash -c 'stty susp @'":    "stty susp",
		"tset -k @":                "tset -k, which sets a special character",
		"tset -Qe@":                "tset -Qe@",
		"reset -i @":               "reset -i",
		"tset -I *":                "tset with *",
	} {
		err := all.Approve(context.Background(), agentpty.ApprovalRequest{Command: c})
		if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want ErrDenied ...%s", c, err, want)
		}
	}
}
