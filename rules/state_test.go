package rules_test

import (
	"testing"

	"github.com/agentpty/agentpty/internal/cmdline"
	"github.com/agentpty/agentpty/rules"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveRulesShellState: builtins that change how bash reads the
// lines after them (history expansion in a script, # no longer a comment
// in an interactive shell), the builtin jobs -x, which runs a command,
// and bash -c under the name rbash. The control runs each through bash for real and shows d
// removed; the rules must deny it.
func TestApproveRulesShellState(t *testing.T) {
	testkit.Parallel(t)
	set := rules.Rules{Allow: []string{"echo *", "set *"}}
	shopt := rules.Rules{Allow: []string{"echo *", "shopt *"}}
	jobs := rules.Rules{Allow: []string{"echo *", "jobs *"}}
	deny := rules.Rules{Allow: []string{"*"}, Deny: []string{"rm *"}}
	history := "set -o history -H\necho \"/;rm -rf d #\" !#:1:t\n"
	runDeniedAttacks(t, []deniedAttack{
		{"HistoryScript", set, attack{command: history}, false, "uses set -o history, which changes how the shell reads what follows"},
		{"HistoryShellC", rules.Rules{Allow: []string{"echo *", "set *", "bash -c *"}}, attack{command: "bash -c " + cmdline.ShellQuote(history)}, false,
			"set -o history, which changes how the shell reads what follows"},
		{"HistoryLetter", set, attack{command: "set -H -o history\necho \"/;rm -rf d #\" !#:1:t\n"}, false, "uses set -H"},
		{"InteractiveComments", shopt, attack{command: "shopt -u interactive_comments\necho x # ; rm -rf d\n", interactive: true}, true,
			"uses shopt interactive_comments, which changes how the shell reads what follows"},
		{"InteractiveCommentsBuiltin", rules.Rules{Allow: []string{"echo *", "shopt *", "builtin *"}}, attack{command: "builtin shopt -u interactive_comments\necho x # ; rm -rf d\n", interactive: true}, true,
			"uses shopt interactive_comments"},
		{"JobsX", jobs, attack{command: "jobs -x rm -rf d"}, false, `runs "rm -rf d", which matches no allow rule`},
		{"RbashDeny", deny, attack{command: "rbash -c 'rm -rf d'"}, false, `matches deny rule "rm *"`},
		{"JobsXDeny", deny, attack{command: "builtin jobs -x rm -rf d"}, false, `matches deny rule "rm *"`},
	})
	// What the options leave modelled still passes.
	for _, c := range []string{"set -euo pipefail", "set -- a -H", "shopt -s nullglob globstar", "shopt -p", "jobs -l", "jobs -x echo %1"} {
		r := rules.Rules{Allow: []string{"echo *", "set *", "shopt *", "jobs *"}}
		if err := approve(r, c); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
}
