package agentpty

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The property the rules promise, checked for real: a command Rules
// approve under propRules runs, under bash in the library's own sandbox,
// only programs an allow rule names, and changes no file. Commands come
// from every attack the tests hold, mutated, and from a grammar of bash
// (approval_gen_test.go); each approved one runs in a fresh scratch
// directory under strace, which records every execve
// (approval_propbox_test.go). What it finds goes into propCorpusFile,
// replayed first on every run.
//
// AGENTPTY_PROPERTY_BUDGET (a duration) runs it longer than make test's
// short, bounded run; AGENTPTY_PROPERTY_SEED picks another sequence of
// commands ("random": a new one each run, printed).

// propRules is the allow list the property is checked under: programs
// that write no file and run no other program but through a command the
// rules judge, so that anything else that runs, and any file that
// changes, is a bypass. stty, exec, history, command and builtin are
// there because earlier bypasses went through them.
var propRules = Rules{Allow: []string{
	"echo *", "ls *", "cat *", "printf *", "stty *", "exec *", "history *", "command *", "builtin *",
	"true", "false", "pwd", "cd *", "test *", "[ *", "set *", "shopt *", "wc *", "head *", "grep *",
	"nice *", "env *", "timeout *", "xargs *", "bash -c *", "jobs *", "type *", "umask *",
}}

// propKnownOpen are bypasses known and being fixed: a failing case whose
// text matches one is reported and skipped, not failed.
var propKnownOpen = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\bhistory\b`), "history writes the file it names, or HISTFILE (issue 24: history -w)"},
	{regexp.MustCompile(`\b(stty|tset)\b`), "typed lines ignore the terminal's special characters (issue 24: stty kill @)"},
	{regexp.MustCompile(`\bexec\b[^;&|]*<`), "exec < FILE makes the shell read unjudged commands (issue 24: exec < x.sh)"},
}

// propRun is what one case did: the programs it executed (the path's
// base name, then argv[1:]), and the files it changed.
type propRun struct {
	execs   [][]string
	changed []string
	out     string
}

// propBudget is how long and how many commands the property runs, and
// from which seed: make test's short run by default.
func propBudget(t *testing.T) (budget time.Duration, maxRuns int, seed int64) {
	budget, maxRuns, seed = 35*time.Second, 120, 1
	if v := os.Getenv("AGENTPTY_PROPERTY_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("AGENTPTY_PROPERTY_BUDGET=%q: %v", v, err)
		}
		budget, maxRuns = d, 1<<30
	}
	switch v := os.Getenv("AGENTPTY_PROPERTY_SEED"); v {
	case "":
	case "random":
		seed = time.Now().UnixNano()
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("AGENTPTY_PROPERTY_SEED=%q: %v", v, err)
		}
		seed = n
	}
	return budget, maxRuns, seed
}

// propAllowed reports whether argv, a program executed, is one an allow
// rule of propRules names: its words before the rule's first lone *, or
// all of them.
func propAllowed(argv []string) bool {
	for _, rule := range propRules.Allow {
		words := strings.Fields(rule)
		n := slices.Index(words, "*")
		if n < 0 && len(argv) == len(words) || n >= 0 && len(argv) >= n {
			if k := max(n, len(words)*btoi(n < 0)); slices.Equal(argv[:k], words[:k]) {
				return true
			}
		}
	}
	return false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// violations says what c did that no rule allows.
func violations(c propCase, r propRun) []string {
	var out []string
	shell := strings.Fields(propShellStart)[1:]
	for _, argv := range r.execs {
		if c.typed != nil && slices.Equal(argv, shell) {
			shell = nil // the typed cases' own bash, once
			continue
		}
		if !propAllowed(argv) {
			out = append(out, fmt.Sprintf("ran %q", argv))
		}
	}
	for _, ch := range r.changed {
		out = append(out, ch)
	}
	return out
}

// knownOpen returns why c's bypass is a known one, or "".
func knownOpen(c propCase) string {
	for _, k := range propKnownOpen {
		if k.re.MatchString(c.text()) {
			return k.why
		}
	}
	return ""
}

// propStats counts what the property did.
type propStats struct {
	generated, approved, ran, typed, known int
}

// TestApproveRulesProperty: no command the rules approve under propRules
// runs a program no rule names or changes a file, run for real. The
// controls show the oracle sees a program run and a file removed.
func TestApproveRulesProperty(t *testing.T) {
	budget, maxRuns, seed := propBudget(t)
	b := newPropBox(t)
	propControls(t, b)
	started := time.Now()
	var st propStats
	check := func(c propCase) {
		st.ran++
		if c.typed != nil {
			st.typed++
		}
		r, err := b.run(t, c)
		if err != nil {
			if !errors.Is(err, ErrDenied) || c.typed == nil {
				t.Errorf("%s: approved by the rules, then %v", c, err)
			}
			return
		}
		bad := violations(c, r)
		switch why := knownOpen(c); {
		case len(bad) == 0:
		case why != "":
			st.known++
			t.Logf("known open, skipped: %s: %s: %s", why, c, strings.Join(bad, "; "))
		default:
			t.Errorf("bypass: %s %s (output %q); keep it: add the line %s to %s", c, strings.Join(bad, "; "), r.out, c, propCorpusFile)
		}
	}
	for _, c := range readPropCorpus(t) {
		st.generated++
		if propApproved(c) {
			st.approved++
			check(c)
		}
	}
	g := &propGen{rng: rand.New(rand.NewSource(seed)), seeds: propSeeds(t)}
	propExplore(g, &st, maxRuns, func() bool { return time.Since(started) < budget }, check)
	t.Logf("seed %d, budget %v (%d runs at most): %d commands generated, %d approved, %d run (%d typed), %d known open, in %v",
		seed, budget, maxRuns, st.generated, st.approved, st.ran, st.typed, st.known, time.Since(started).Round(time.Millisecond))
	if st.ran < 20 && !t.Failed() {
		t.Errorf("only %d of %d commands ran: the property tests little", st.ran, st.generated)
	}
}

// propExplore generates cases and checks each one the rules approve and
// none before it was, until maxRuns ran or more is false: five starts,
// then lines typed, in turn.
func propExplore(g *propGen, st *propStats, maxRuns int, more func() bool, check func(propCase)) {
	seen := map[string]bool{}
	var pool []string
	for st.ran < maxRuns && more() {
		c := propCase{start: g.command()}
		if st.ran%6 == 5 {
			c = g.typedCase(pool)
		}
		st.generated++
		if seen[c.String()] || !propApproved(c) {
			continue
		}
		seen[c.String()] = true
		st.approved++
		if c.typed == nil && !strings.Contains(c.start, "\n") {
			pool = append(pool, c.start)
		}
		check(c)
	}
}

// propApproved asks propRules about c as a host's Manager would: a start
// as pty-start, typed lines as pty-write into bash at its prompt.
func propApproved(c propCase) bool {
	ctx := context.Background()
	if c.typed == nil {
		return propRules.Approve(ctx, ApprovalRequest{Tool: ToolStart, Command: c.start, Cols: 120, Rows: 32}) == nil
	}
	for _, l := range c.typed {
		req := ApprovalRequest{Tool: ToolWrite, ID: "pty-1", Command: propShellStart, Input: l + "\r", Foreground: "bash"}
		if propRules.Approve(ctx, req) != nil {
			return false
		}
	}
	return true
}

// propControls: with every request approved, the oracle sees what a
// bypass does, started and typed: a program no rule names, a file gone.
func propControls(t *testing.T, b *propBox) {
	t.Helper()
	b.control.Store(true)
	defer b.control.Store(false)
	for _, c := range []propCase{{start: "echo x; rm -rf d"}, {typed: []string{"echo x", "rm -rf d"}}} {
		r, err := b.run(t, c)
		if err != nil {
			t.Fatalf("control %s: %v", c, err)
		}
		bad := violations(c, r)
		if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, `"rm"`) }) ||
			!slices.Contains(bad, "removed c/work/d") {
			t.Fatalf("control %s: the oracle saw %q (ran %q, output %q)", c, bad, r.execs, r.out)
		}
	}
}
