package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

// The property the rules promise, checked for real: a command Rules
// approve under propRules runs, under bash in the library's own sandbox,
// only programs an allow rule names, and changes no file. Commands come
// from every attack the tests hold, mutated, and from a grammar of bash
// (gen_test.go); each approved one runs in a fresh scratch
// directory under strace, which records every execve
// (propbox_test.go). What it finds goes into propCorpusFile,
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
	budget, maxRuns, seed = 45*time.Second, 150, 1
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
	return append(out, r.changed...)
}

// propStats counts what the property did.
type propStats struct {
	generated, approved, ran, typed int
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
	check := func(cases []propCase) {
		var runs []propRun
		if len(cases) > 1 {
			starts := make([]string, len(cases))
			for i, c := range cases {
				starts[i] = c.start
			}
			runs = b.runBatch(t, starts)
		}
		for i, c := range cases {
			st.ran++
			if runs == nil {
				st.typed += btoi(c.typed != nil)
				propCheckAlone(t, b, c, &st)
			} else if bad := violations(c, runs[i]); len(bad) > 0 && !propCheckAlone(t, b, c, &st) {
				// The batch's finding is confirmed through Start; a
				// background process of the command before may be its cause.
				t.Logf("in a batch only: %s: %s", c, strings.Join(bad, "; "))
			}
		}
	}
	for _, c := range readPropCorpus(t) {
		st.generated++
		if propApproved(c) {
			st.approved++
			check([]propCase{c})
		}
	}
	g := &propGen{rng: rand.New(rand.NewSource(seed)), seeds: propSeeds(t)}
	propExplore(g, &st, maxRuns, func() bool { return time.Since(started) < budget }, check)
	t.Logf("seed %d, budget %v (%d runs at most): %d commands generated, %d approved, %d run (%d typed), in %v",
		seed, budget, maxRuns, st.generated, st.approved, st.ran, st.typed, time.Since(started).Round(time.Millisecond))
	if st.ran < 20 && !t.Failed() {
		t.Errorf("only %d of %d commands ran: the property tests little", st.ran, st.generated)
	}
}

// propBatch is how many commands are generated and judged at a time;
// judging is cheap, running is not, so of each batch the approved
// commands most like a bypass run first (propOrder), propRunBatch at a
// time in one sandbox.
const (
	propBatch    = 4000
	propRunBatch = 25
)

// propExplore generates cases and checks those the rules approve, until
// maxRuns ran or more is false: a batch of starts, then lines typed, in
// turn.
func propExplore(g *propGen, st *propStats, maxRuns int, more func() bool, check func([]propCase)) {
	seen := map[string]bool{}
	var pool []string
	for st.ran < maxRuns && more() {
		var batch []string
		for i := 0; i < propBatch; i++ {
			c := g.command()
			st.generated++
			if !seen[c] && propApproved(propCase{start: c}) {
				st.approved++
				batch = append(batch, c)
				if !strings.Contains(c, "\n") {
					pool = append(pool, c)
				}
			}
			seen[c] = true
		}
		order := propOrder(batch)
		for len(order) > 0 && st.ran < maxRuns && more() {
			n := min(len(order), propRunBatch, maxRuns-st.ran)
			cases := make([]propCase, n)
			for i, c := range order[:n] {
				cases[i] = propCase{start: c}
			}
			check(cases)
			order = order[n:]
			if tc, ok := typedApproved(g, st, pool); ok && st.ran < maxRuns && more() {
				check([]propCase{tc})
			}
		}
	}
}

// typedApproved makes typed cases until one the rules approve, a few
// hundred at most.
func typedApproved(g *propGen, st *propStats, pool []string) (propCase, bool) {
	for range 300 {
		c := g.typedCase(pool)
		st.generated++
		if propApproved(c) {
			st.approved++
			return c, true
		}
	}
	return propCase{}, false
}

// propPayloads mark a command that may run what no rule allows: the
// programs and file the generator plants, and the constructs through
// which earlier bypasses ran them.
var propPayloads = []string{"rm", "x.sh", "id", "sh", "tset", "reset"}
var propMarks = []string{"\\", "$'", "<", ">", "exec", "history", "stty", "-x", "-c", "xargs", "env", "{}",
	"command", "builtin", "nice", "timeout", "jobs", "set", "shopt", "$", "~", "*", "#", "=", "|", "&"}

// propPrinters take their words as text: a payload after one of them
// is only printed or read.
var propPrinters = []string{"echo", "printf", "ls", "cat", "grep", "head", "wc", "type", "test", "[", "cd", "-v", "-p"}

// payloadRuns counts the words of c that name a planted program and
// follow a word that may run them (a wrapper, an option, an operator)
// rather than one that prints them: where a bypass runs it.
func payloadRuns(c string) int {
	n := 0
	words := strings.Fields(c)
	for j := 1; j < len(words); j++ {
		w := strings.NewReplacer(`\`, "", "'", "", `"`, "", "$", "").Replace(words[j])
		if (w == "rm" || w == "x72m" || w == "./x.sh" || w == "id") && !slices.Contains(propPrinters, words[j-1]) {
			n++
		}
	}
	return n
}

// propOrder orders commands to run: grouped by their first word, and
// taken from each group in turn, most marks first, so that a run of
// any length tries every program the batch starts with.
func propOrder(cmds []string) []string {
	score := func(c string) int {
		n := 0
		for _, p := range propPayloads {
			if strings.Contains(c, p) {
				n += 4
			}
		}
		n += 20 * payloadRuns(c)
		for _, m := range propMarks {
			if strings.Contains(c, m) {
				n++
			}
		}
		return n
	}
	groups := map[string][]string{}
	var keys []string
	for _, c := range cmds {
		k := strings.Fields(c + " x")[0]
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range keys {
		slices.SortStableFunc(groups[k], func(a, b string) int { return score(b) - score(a) })
	}
	var out []string
	for len(out) < len(cmds) {
		for _, k := range keys {
			if g := groups[k]; len(g) > 0 {
				out, groups[k] = append(out, g[0]), g[1:]
			}
		}
	}
	return out
}

// propCheckAlone runs c alone through the box's manager, as a host
// would, and fails t if it breaks the property;
// it reports whether it did.
func propCheckAlone(t *testing.T, b *propBox, c propCase, st *propStats) bool {
	t.Helper()
	r, err := b.run(t, c)
	if err != nil {
		if !errors.Is(err, agentpty.ErrDenied) || c.typed == nil {
			t.Errorf("%s: approved by the rules, then %v", c, err)
		}
		return false
	}
	bad := violations(c, r)
	if len(bad) > 0 {
		t.Errorf("bypass: %s %s (output %q); keep it: add the line %s to %s", c, strings.Join(bad, "; "), r.out, c, propCorpusFile)
		if os.Getenv("AGENTPTY_PROPERTY_BUDGET") != "" {
			keepFinding(t, c) // a long run keeps what it finds, as go test -fuzz does
		}
	}
	return len(bad) > 0
}

// keepFinding adds c to propCorpusFile, unless it is there.
func keepFinding(t *testing.T, c propCase) {
	if b, err := os.ReadFile(propCorpusFile); err == nil && slices.Contains(strings.Split(string(b), "\n"), c.String()) {
		return
	}
	f, err := os.OpenFile(propCorpusFile, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = fmt.Fprintln(f, c)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Errorf("keeping %s: %v", c, err)
	}
}

// propApproved asks propRules about c as a host's Manager would: a start
// as pty-start, typed lines as pty-write into bash at its prompt.
func propApproved(c propCase) bool {
	ctx := context.Background()
	if c.typed == nil {
		return propRules.Approve(ctx, agentpty.ApprovalRequest{Tool: agentpty.ToolStart, Command: c.start, Cols: 120, Rows: 32}) == nil
	}
	for _, l := range c.typed {
		req := agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Command: propShellStart, Input: l + "\r", Foreground: "bash"}
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
