// Package rules is an [agentpty.Approver] configured by patterns instead
// of code, for hosts that read their policy from a file: allow and deny
// rules written like the commands they match, judged on commands as bash
// reads them (through mvdan.cc/sh). It is a package of its own so that a
// host that approves in code does not build the shell reader.
package rules

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/cmdline"
)

// Rules is an [agentpty.Approver] configured by patterns instead of code,
// for hosts that read their policy from a file. The zero value approves
// nothing.
//
// Rules approve only what they model completely. A command is approved
// when it is, as bash reads it (through mvdan.cc/sh): a list, pipeline,
// && or || of simple commands, negated with ! or timed with time, grouped
// with { }, ( ) or if, whose words are literals, quoted literals, $'...'
// strings and globs, with redirections; each simple command matches an
// Allow rule (a run of them may match one rule of several commands), every
// command it runs through a wrapper or bash -c matches one of its own, and
// nothing matches a Deny rule. Everything else is refused, naming what was
// refused, unless an Allow rule equals the whole command character for
// character:
//
//   - loops (for, select, while, until), case, function definitions,
//     coprocesses, [[ ]], (( )), here-documents;
//   - command and process substitution, arithmetic, parameter expansions
//     other than $NAME and ${NAME}, $"..." strings, extended globs, and
//     the text $(, `, <(, >( or $[ anywhere (quoted or not, decoded from
//     $'...' or escapes: bash evaluates such text in array subscripts);
//   - builtins that assign a variable they name or run code: eval, source
//     and ., alias, trap, enable, let, read, mapfile, readarray, getopts,
//     wait -p, printf -v, test -v and [ -v, declare, typeset, local,
//     export and readonly with arguments, unset with a subscript, fc,
//     bind, complete, compgen, hash -p; set and shopt changing an option
//     that changes how the shell reads later lines (set -k, set -H,
//     shopt -u interactive_comments: only errexit, nounset, pipefail,
//     xtrace, the glob options and their like pass); stty, tset and
//     reset setting the terminal's special characters or modes (stty
//     may only read and size it: -a, -g, size, speed, rows, cols, -F;
//     tset and reset may not take -e, -i or -k); history with -a, -n,
//     -r, -w, -s, -p or a file; exec with redirections and no command
//     (exec < x.sh makes the shell read x.sh as its commands), through
//     command, builtin and time too; and a glob or expansion among
//     the arguments of any builtin but the plain ones (echo, cd, pwd,
//     true, printf after its format ...), where a planted file name may
//     become a name the builtin assigns;
//   - a redirection to a variable ({fd}>file), assignments with
//     subscripts and to PS0-PS4, PROMPT_COMMAND, BASH_ENV and ENV;
//   - a line continuation (backslash-newline) and any control character
//     but tab and newline, which bash and a reader may join or split
//     differently; bash -c with a command line it cannot read, options
//     it does not know or -k, zsh, ksh and mksh -c; more than 16 nested
//     wrappers; a command longer than 131071 bytes (exec's limit for one
//     argument), holding more than 2048 parentheses, or nesting deeper
//     than 200 levels of syntax, which are refused before they are read.
//
// A rule is written like the command it matches:
//
//   - A * standing alone as a word matches any number of words, none
//     included: "ls *" matches ls, ls -la and ls -la /tmp *.go. It never
//     matches an operator, an assignment, an expansion, nor a program
//     named by a glob.
//   - Inside a word, * matches any characters and ? one: "python3 *.py",
//     "go test -run=*". Quote them in a rule to match them literally.
//   - An expansion ($EDITOR, "$X".txt), whose value and number of words
//     only the shell knows, and a glob anywhere a lone * does not absorb
//     it, match only a rule word spelled the same: "$EDITOR *" approves
//     $EDITOR notes.txt.
//   - Leading assignments match only assignments in the rule
//     ("CGO_ENABLED=0 go build *", "GOFLAGS=* go test *").
//   - Every other word matches only its own value: "git status" matches
//     git status and 'git' "status", and nothing longer.
//   - Redirections are matched after the words, in their order, and only
//     by spelling them out ("make * 2>&1 | tee *.log", "* > /etc/*"),
//     except the harmless ones, which need no rule: 2>&1 and other
//     descriptor copies, output to /dev/null, input from a named file
//     (< file, but not bash's /dev/tcp/host/port). A here-string (<<< word)
//     needs spelling out too.
//
// A command is approved one simple command at a time; a rule of several
// commands ("curl * | sh") matches consecutive ones joined by the same
// operators. "cd *" and "make *" together approve cd src && make test;
// "ls *" never approves ls; rm -rf x. Redirections of { }, ( ) and if
// count for each command inside.
//
// A wrapper's command is judged as well as the wrapper: nice, nohup,
// command, builtin, exec, time, env, sudo, doas, su, runuser, timeout,
// stdbuf, setsid, ionice, chrt, taskset, chroot, flock, busybox, jobs -x
// and xargs with their options, and the commands of find -exec (su -c, flock -c,
// sudo -s and env -S, which run a string, are refused; so is an option,
// an option's argument or an operand only the shell knows; a word holding
// the {} of find -exec or the string xargs -I replaces is known only when
// the program runs, as a glob is; xargs adds the words it reads after its
// command, so a wrapper it runs with no command of its own, xargs nice,
// and find are refused). nice -n 5 make needs rules for both
// nice and make. The command line of bash -c
// and sh -c (dash, ash) is read with bash's options as bash reads them
// (--rcfile FILE, -o OPT, -O OPT take an argument) and judged as the
// command is, assignments and redirections included, nested up to four
// deep: "bash -c *" beside "git log *" does not approve bash -c
// 'GIT_PAGER=x git log'. A script or standard input given to a shell, or
// any other interpreter (python3 -c, perl -e, node -e), is not read: an
// allow rule for it allows everything.
//
// A Deny rule matches wherever the command runs a simple command it
// matches: as written, without its assignments and redirections, named by
// a path (a deny rule "rm *" refuses /bin/rm -rf x), behind any of the
// wrappers above (nice -n 5 rm, sudo -u u rm, xargs rm, find -exec rm),
// inside compound commands, function bodies, substitutions and sh -c
// command lines, and where a glob could expand into it (git pu* under a
// deny rule "git push *"). Deny rules are best effort, a guard against
// mistakes and not a boundary: a script, an interpreter or a copy of the
// program under another name still reaches rm. The boundary is a short
// Allow list of programs that run no other programs, and the sandbox
// ([agentpty.NewSandbox]).
//
// Denials wrap [agentpty.ErrDenied] and name the command and the rule or
// construct that decided:
//
//	agentpty: denied: pty-start "rm -rf /": matches deny rule "rm *"
//	agentpty: denied: pty-start "ls; rm -rf x": "rm -rf x" matches no allow rule
//	agentpty: denied: pty-start "echo $(id)": uses a command substitution $(...), which only an allow rule equal to the whole command approves
//
// A Deny rule that cannot be parsed or uses a refused construct makes
// every command denied, naming the rule; such an Allow rule approves only
// a command equal to it. So do time and ! in a rule: commands are matched
// through them (time make matches "make *"), and "time *" would be "*".
//
// With [agentpty.Options].ApproveWrites, Rules judge a pty-write's Input
// as the command line a shell would read: it must be whole lines (end in
// Enter), hold no control character (a tab would complete the line into
// something else) and no history expansion (! anywhere, ^ leading a
// line), and each line's commands are judged as a start's are. A write is
// approved only into a shell waiting at its prompt
// ([agentpty.ApprovalRequest].Foreground: bash, rbash, sh, dash or ash)
// and only one line at a time: a pager, an editor or a REPL reads typed
// text as keys of its own, and a program the first line starts would read
// the next ones.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Approve approves req when the rules allow it. It never blocks.
func (r Rules) Approve(_ context.Context, req agentpty.ApprovalRequest) error {
	what := cmdline.Quote(req.Command)
	if req.Tool == agentpty.ToolWrite {
		what = req.ID + " " + cmdline.Quote(req.Input)
	}
	if req.Tool != "" {
		what = req.Tool + " " + what
	}
	deny := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", agentpty.ErrDenied, what, fmt.Sprintf(format, args...))
	}
	if err := r.approve(req, deny); err != nil || req.Tool != agentpty.ToolWrite {
		return err
	}
	return typedInto(req, deny)
}

// typedInto refuses a write that a shell at its prompt may not be the one
// to read: the rules judge typed lines as a shell reads them, and a pager,
// an editor or a REPL reads them as keys of its own (less, which git log
// starts, saves its input to the file named after "s" or "-o"). One line
// only: the program the first line starts would read the next ones.
func typedInto(req agentpty.ApprovalRequest, deny func(string, ...any) error) error {
	if bashLike, _ := cmdline.Shell(path.Base(req.Foreground)); !bashLike {
		who := "a terminal where no program waits for input"
		if req.Foreground != "" {
			who = fmt.Sprintf("%q, which is not a shell the rules read", req.Foreground)
		}
		return deny("types into %s: only a shell at its prompt reads typed lines as the rules judge them", who)
	}
	if n := strings.Count(strings.ReplaceAll(req.Input, "\r", "\n"), "\n"); n > 1 {
		return deny("types %d lines: a program the first one starts would read the others", n)
	}
	return nil
}

// approve judges text, the command of a start or the lines a write types.
func (r Rules) approve(req agentpty.ApprovalRequest, deny func(string, ...any) error) error {
	text := req.Command
	if req.Tool == agentpty.ToolWrite {
		text = req.Input
	}
	if len(text) > cmdline.MaxBytes {
		return deny("is %d bytes, more than the %d a command may have", len(text), cmdline.MaxBytes)
	}
	if req.Tool == agentpty.ToolWrite {
		var why string
		if text, why = typedLines(text); why != "" {
			return deny("%s", why)
		}
	}
	exact := slices.Contains(r.Allow, text)
	sc, err := parseCommand(text)
	if err != nil {
		if exact {
			return nil
		}
		return deny("%s", unreadable(err))
	}
	for _, rule := range r.Deny {
		rc, err := parseRule(rule)
		if err == nil && rc.refused != nil {
			err = rc.refused
		}
		if err != nil {
			return deny("deny rule %q cannot be used: %v", rule, err)
		}
		if at, n := findRun(rc.cmds, sc.cmds, denyMatch); n > 0 {
			if n == len(sc.cmds) {
				return deny("matches deny rule %q", rule)
			}
			return deny("%s matches deny rule %q", cmdline.Quote(runText(sc.src, sc.cmds[at:at+n])), rule)
		}
	}
	switch {
	case exact:
		return nil
	case sc.refused != nil:
		return deny("uses %s, which only an allow rule equal to the whole command approves", sc.refused.what)
	case len(sc.cmds) == 0:
		return deny("runs no command (only comments)")
	}
	var allow [][]simpleCmd
	for _, rule := range r.Allow {
		if rc, err := parseRule(rule); err == nil && rc.refused == nil && len(rc.cmds) > 0 {
			allow = append(allow, rc.cmds)
		}
	}
	return r.covered(sc, allow, deny)
}

// covered approves cmds when runs of consecutive commands each match one
// allow rule as a whole, and every command a wrapper runs matches an allow
// rule of its own.
func (r Rules) covered(sc *shellCommand, allow [][]simpleCmd, deny func(string, ...any) error) error {
	cmds := sc.cmds
	for i := range cmds {
		for _, need := range cmds[i].needs {
			if !slices.ContainsFunc(allow, func(rule []simpleCmd) bool {
				return len(rule) == 1 && matchTokens(rule[0].allow, need)
			}) {
				return deny("%s runs %s, which matches no allow rule%s", cmdline.Quote(runText(sc.src, cmds[i:i+1])),
					cmdline.Quote(wordsText(need)), spelled(need, allow))
			}
		}
	}
	// ok[i]: commands i.. are approved.
	ok := make([]bool, len(cmds)+1)
	ok[len(cmds)] = true
	for i := len(cmds) - 1; i >= 0; i-- {
		for _, rule := range allow {
			if n := len(rule); i+n <= len(cmds) && ok[i+n] && runMatches(rule, cmds[i:i+n], allowMatch) {
				ok[i] = true
				break
			}
		}
	}
	if ok[0] {
		return nil
	}
	for i := range cmds {
		if !slices.ContainsFunc(allow, func(rule []simpleCmd) bool {
			return runMatches(rule, cmds[i:min(i+len(rule), len(cmds))], allowMatch)
		}) {
			if len(cmds) == 1 {
				return deny("matches no allow rule%s", spelled(cmds[i].toks, allow))
			}
			return deny("%s matches no allow rule%s", cmdline.Quote(runText(sc.src, cmds[i:i+1])), spelled(cmds[i].toks, allow))
		}
	}
	return deny("matches no allow rule as a whole")
}

// spelled names the first word of toks that only a rule spelling it
// matches and no rule word does, for a denial's message.
func spelled(toks []token, allow [][]simpleCmd) string {
	for _, t := range toks {
		if t.exact && !slices.ContainsFunc(allow, func(rule []simpleCmd) bool {
			return slices.ContainsFunc(rule, func(c simpleCmd) bool {
				return slices.ContainsFunc(c.allow, func(r token) bool { return tokenMatches(r, t) })
			})
		}) {
			return " (only a rule that spells " + clip(t.raw) + " as it is written matches it)"
		}
	}
	return ""
}

// unreadable says why a command could not be read.
func unreadable(err error) string {
	var se syntaxError
	if errors.As(err, &se) {
		return "cannot be parsed: " + se.Error()
	}
	return err.Error()
}

// typedLines turns a write's input into the command lines a shell would
// read, or says why it cannot be judged as such.
func typedLines(input string) (string, string) {
	text := strings.ReplaceAll(input, "\r", "\n")
	if !strings.HasSuffix(text, "\n") {
		return "", "types a partial line (no Enter at its end), which the rules cannot judge"
	}
	for _, c := range text {
		if c < 0x20 && c != '\n' || c == 0x7f { // a tab completes the line into something else
			return "", fmt.Sprintf("types the control character %q, which the rules cannot judge", c)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "!") || strings.HasPrefix(line, "^") {
			return "", "types " + cmdline.Quote(line) + ", which an interactive shell expands from its history (! and ^)"
		}
	}
	if strings.HasSuffix(strings.TrimRight(text, "\n"), `\`) {
		return "", "ends in a line continuation, which leaves the line open"
	}
	return text, ""
}

// clip is s for a message, quoted and elided when long.
func clip(s string) string {
	if len(s) <= 300 {
		return s
	}
	return cmdline.Quote(s)
}

func wordsText(words []token) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = w.raw
	}
	return strings.Join(s, " ")
}

// findRun finds consecutive commands in cmds that rule matches. It returns
// where they start and how many there are; 0 when none match.
func findRun(rule, cmds []simpleCmd, match func(r, c *simpleCmd) bool) (at, n int) {
	if len(rule) == 0 {
		return 0, 0
	}
	for i := 0; i+len(rule) <= len(cmds); i++ {
		if runMatches(rule, cmds[i:i+len(rule)], match) {
			return i, len(rule)
		}
	}
	return 0, 0
}

// runMatches reports whether rule matches cmds one to one, joined by the
// same operators.
func runMatches(rule, cmds []simpleCmd, match func(r, c *simpleCmd) bool) bool {
	if len(rule) != len(cmds) {
		return false
	}
	for i := range rule {
		if !match(&rule[i], &cmds[i]) || (i < len(rule)-1 && rule[i].sep != cmds[i].sep) {
			return false
		}
	}
	return true
}

func allowMatch(r, c *simpleCmd) bool { return matchTokens(r.allow, c.allow) }

// denyMatch matches a deny rule against every view of a command: as it is
// written (so a rule can name a redirection), and each program it runs,
// also by the base name of a program named by its path. A glob may
// become any words its pattern matches, or none.
func denyMatch(r, c *simpleCmd) bool {
	rule := r.allow
	if denyTokens(rule, c.allow) {
		return true
	}
	for _, run := range c.runs {
		if denyTokens(rule, run) {
			return true
		}
		if run[0].static && strings.Contains(run[0].val, "/") {
			base := append([]token(nil), run...)
			base[0].val = path.Base(run[0].val)
			base[0].pat = globQuote(base[0].val)
			if denyTokens(rule, base) {
				return true
			}
		}
	}
	return false
}

// denyTokens reports whether cmd may be what rule matches once bash has
// expanded its globs.
func denyTokens(rule, cmd []token) bool {
	// A tilde is the value of a variable or of the user database, like
	// an expansion: matched by its text.
	wild := func(c token) bool {
		return c.kind == tokWord && !c.static && !c.expands && !strings.HasPrefix(c.raw, "~")
	}
	// next[j]: rule[i+1:] may match cmd[j:].
	next := make([]bool, len(cmd)+1)
	next[len(cmd)] = true
	for j := len(cmd) - 1; j >= 0; j-- {
		next[j] = wild(cmd[j]) && next[j+1]
	}
	for i := len(rule) - 1; i >= 0; i-- {
		r := rule[i]
		cur := make([]bool, len(cmd)+1)
		for j := len(cmd); j >= 0; j-- {
			switch {
			case r.star:
				cur[j] = next[j] || j < len(cmd) && cmd[j].kind == tokWord && cur[j+1]
			case j == len(cmd):
			case wild(cmd[j]):
				// The glob's words end here, or one of them is r's.
				cur[j] = cur[j+1] || r.kind == tokWord && mayBe(cmd[j], r) && next[j]
			default:
				cur[j] = denyToken(r, cmd[j]) && next[j+1]
			}
		}
		next = cur
	}
	return next[0]
}

// mayBe reports whether the glob c may expand to a word rule word r
// matches: by c's pattern where it has only * and ?, else always.
func mayBe(c, r token) bool {
	if !r.static || strings.ContainsAny(c.raw, "[{") {
		return true
	}
	return globMatch(c.pat, r.val) || globMatch(path.Base(c.pat), r.val)
}

func denyToken(r, c token) bool {
	switch {
	case r.kind != c.kind:
		return false
	case r.kind == tokOp, r.expands, c.expands:
		return r.raw == c.raw
	}
	return globMatch(r.pat, c.val)
}

func runText(src string, cmds []simpleCmd) string {
	return src[cmds[0].start:cmds[len(cmds)-1].end]
}

// matchTokens reports whether rule matches all of cmd: a lone * matches
// any number of words (never an operator, an opaque word, an expansion or
// an assignment), anything else one token.
func matchTokens(rule, cmd []token) bool {
	// next[j]: rule[i+1:] matches cmd[j:].
	next := make([]bool, len(cmd)+1)
	next[len(cmd)] = true
	for i := len(rule) - 1; i >= 0; i-- {
		cur := make([]bool, len(cmd)+1)
		for j := len(cmd); j >= 0; j-- {
			if rule[i].star {
				cur[j] = next[j] || (j < len(cmd) && cmd[j].kind == tokWord && !cmd[j].opaque && !cmd[j].exact && cur[j+1])
			} else {
				cur[j] = j < len(cmd) && tokenMatches(rule[i], cmd[j]) && next[j+1]
			}
		}
		next = cur
	}
	return next[0]
}

// tokenMatches reports whether rule word r matches c: a word only the
// shell knows (an expansion, a glob) only when r spells it the same, an
// assignment only an assignment.
func tokenMatches(r, c token) bool {
	switch {
	case r.kind != c.kind, r.assign != c.assign:
		return false
	case r.kind == tokOp, c.opaque, !c.static, r.expands:
		return r.raw == c.raw
	}
	return globMatch(r.pat, c.val)
}

// globMatch matches s against pattern, in which * matches any characters,
// ? one, and a backslash makes the next character literal. It allocates
// nothing: the deny rules call it for every word of every view.
func globMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		return pattern == s
	}
	p, j, star, mark := 0, 0, -1, 0
	for j < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				star, mark = p, j
				p++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[j:])
				p, j = p+1, j+n
				continue
			}
			lit := p
			if pattern[p] == '\\' && p+1 < len(pattern) {
				lit++
			}
			_, pn := utf8.DecodeRuneInString(pattern[lit:])
			_, sn := utf8.DecodeRuneInString(s[j:])
			if pattern[lit:lit+pn] == s[j:j+sn] {
				p, j = lit+pn, j+sn
				continue
			}
		}
		if star < 0 {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[mark:])
		mark += n
		p, j = star+1, mark
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// allowToks returns the tokens a rule must match: all but the harmless
// redirections.
func (c *simpleCmd) allowToks() []token {
	var out []token
	for i := 0; i < len(c.toks); i++ {
		t := c.toks[i]
		if t.kind == tokOp && i+1 < len(c.toks) && harmless(t.raw, c.toks[i+1]) {
			i++
			continue
		}
		out = append(out, t)
	}
	return out
}

// harmless reports whether a redirection writes no file: copying or
// closing a descriptor, output to /dev/null, input from a named file.
func harmless(op string, target token) bool {
	switch strings.TrimLeft(op, "0123456789") {
	case ">&", "<&":
		return target.static && (target.val == "-" || isDigits(target.val))
	case ">", ">>", "&>", "&>>", ">|":
		return target.static && target.val == "/dev/null"
	case "<":
		// bash opens a connection for /dev/tcp/host/port itself.
		return target.static && !strings.HasPrefix(target.val, "/dev/tcp/") && !strings.HasPrefix(target.val, "/dev/udp/")
	}
	return false
}
