package agentpty

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Approver decides whether a session may start. Approving a start covers
// every later write to that session.
type Approver interface {
	// Approve returns nil to let the request go ahead; any error refuses
	// it, and Start returns it wrapped in ErrDenied.
	Approve(ctx context.Context, req ApprovalRequest) error
}

// ApproverFunc lets a function be an Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) error

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) error { return f(ctx, req) }

// ApprovalRequest is what an Approver is asked about.
type ApprovalRequest struct {
	// Tool is the tool's name, "pty-start".
	Tool string
	// Command is the command as the model gave it, before the shell.
	Command string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Env is what the request adds to the environment.
	Env        []string
	Cols, Rows int
}

// Rules is an Approver configured by patterns instead of code, for hosts
// that read their policy from a file. A command is approved when it
// matches an Allow rule and no Deny rule; the zero value approves nothing.
//
// A rule is written like the command it matches, and both are split into
// words the way bash splits them, so quoting cannot disguise a command:
// 'rm' -rf / and r\m -rf / are the words rm, -rf, /. Then:
//
//   - A * standing alone as a word matches any number of words, none
//     included: "ls *" matches ls, ls -la and ls -la /tmp.
//   - Inside a word, * matches any characters and ? one: "python3 *.py",
//     "go test -run=*". Quote them in a rule to match them literally.
//   - Every other word matches only itself: "git status" matches git status
//     and nothing longer.
//   - Shell operators (| && || ; & and redirections) are never matched by
//     a *: a rule matches them only by spelling them out, as in
//     "make * 2>&1 | tee *.log".
//
// A compound command is approved one simple command at a time: "cd *" and
// "make *" together approve cd src && make test, and a rule for "ls *"
// never approves ls; rm -rf x, whose rm -rf x matches no rule. Harmless
// redirections need no rule: 2>&1 and other descriptor copies, output to
// /dev/null, and input from a named file (< file, but not bash's
// /dev/tcp/host/port) or a word (<<< word). Output to a file does, as do
// leading variable assignments ("CGO_ENABLED=0 go build *").
//
// What the rules cannot see through is refused unless an Allow rule equals
// the whole command, character for character: command and process
// substitution ($(...), backticks, <(...)), arithmetic ($[...]), here
// documents (<<EOF), and parameter expansions other than $NAME and
// ${NAME}. A program named by an expansion or a glob ($EDITOR file, /bin/r?)
// is known only when the shell runs, so only a rule that spells the same
// text approves it.
//
// A Deny rule matches wherever the command runs a simple command it
// matches, also when that command is named by a path (a deny rule "rm *"
// refuses /bin/rm -rf x), follows assignments, redirections or a plain
// wrapper (env, command, exec, nohup, nice, sudo), or sits in a bash
// keyword construct (if rm -rf x; then ...). Deny rules are a guard
// against mistakes, not a boundary: xargs rm, env -i rm, find -delete or
// a script still reach rm. The boundary is a short Allow list of programs
// that run no other programs (not bash, env, xargs, find -exec, make), and
// the Sandbox.
//
// Denials wrap ErrDenied and name the command and what decided:
//
//	agentpty: denied: pty-start "rm -rf /": matches deny rule "rm *"
//	agentpty: denied: pty-start "ls; rm -rf x": "rm -rf x" matches no allow rule
//
// A Deny rule that cannot be parsed (an unterminated quote) makes every
// command denied, naming the rule; an Allow rule that cannot be parsed
// approves only a command equal to it.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Approve approves req.Command when the rules allow it. It never blocks.
func (r Rules) Approve(_ context.Context, req ApprovalRequest) error {
	deny := func(format string, args ...any) error {
		what := fmt.Sprintf("%q", req.Command)
		if req.Tool != "" {
			what = req.Tool + " " + what
		}
		return fmt.Errorf("%w: %s: %s", ErrDenied, what, fmt.Sprintf(format, args...))
	}
	exact := slices.Contains(r.Allow, req.Command)
	cmds, err := parseCommand(req.Command)
	if err != nil && !exact {
		var syn *opaqueSyntax
		if errors.As(err, &syn) {
			return deny("uses %s, which only an allow rule equal to the whole command approves", syn.what)
		}
		return deny("cannot be parsed: %v", err)
	}
	for _, rule := range r.Deny {
		rcmds, err := parseCommand(rule)
		if err != nil {
			return deny("deny rule %q cannot be used: %v", rule, err)
		}
		if at, n := findRun(rcmds, cmds, denyMatch); n > 0 {
			if n == len(cmds) {
				return deny("matches deny rule %q", rule)
			}
			return deny("%q matches deny rule %q", runText(req.Command, cmds[at:at+n]), rule)
		}
	}
	if exact {
		return nil
	}
	if len(cmds) == 0 {
		return deny("runs no command (only comments)")
	}
	var allow [][]simpleCmd
	for _, rule := range r.Allow {
		if rcmds, err := parseCommand(rule); err == nil && len(rcmds) > 0 {
			allow = append(allow, rcmds)
		}
	}
	// covered[i]: commands i.. are approved by runs of consecutive
	// commands, each matching one allow rule as a whole.
	covered := make([]bool, len(cmds)+1)
	covered[len(cmds)] = true
	for i := len(cmds) - 1; i >= 0; i-- {
		for _, rcmds := range allow {
			if n := len(rcmds); i+n <= len(cmds) && covered[i+n] && runMatches(rcmds, cmds[i:i+n], allowMatch) {
				covered[i] = true
				break
			}
		}
	}
	if covered[0] {
		return nil
	}
	for i := range cmds {
		ok := false
		for _, rcmds := range allow {
			ok = ok || runMatches(rcmds, cmds[i:min(i+len(rcmds), len(cmds))], allowMatch)
		}
		if !ok {
			if len(cmds) == 1 {
				return deny("matches no allow rule")
			}
			return deny("%q matches no allow rule", runText(req.Command, cmds[i:i+1]))
		}
	}
	return deny("matches no allow rule as a whole")
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

func allowMatch(r, c *simpleCmd) bool { return matchTokens(r.allowToks(), c.allowToks()) }

// denyMatch matches a deny rule against two views of a command: as it is
// written (so a rule can name a redirection), and as its program sees it.
func denyMatch(r, c *simpleCmd) bool {
	rule := r.allowToks()
	if matchTokens(rule, c.allowToks()) {
		return true
	}
	toks := c.denyToks()
	if matchTokens(rule, toks) {
		return true
	}
	// A program named by its path is still that program.
	if len(toks) > 0 && toks[0].kind == tokWord && toks[0].static && strings.Contains(toks[0].val, "/") {
		base := append([]token(nil), toks...)
		base[0].val = path.Base(toks[0].val)
		return matchTokens(rule, base)
	}
	return false
}

func runText(src string, cmds []simpleCmd) string {
	return src[cmds[0].start:cmds[len(cmds)-1].end]
}

// matchTokens reports whether rule matches all of cmd: a lone * matches
// any number of words (never an operator or an opaque word), anything else
// one token.
func matchTokens(rule, cmd []token) bool {
	// next[j]: rule[i+1:] matches cmd[j:].
	next := make([]bool, len(cmd)+1)
	next[len(cmd)] = true
	for i := len(rule) - 1; i >= 0; i-- {
		cur := make([]bool, len(cmd)+1)
		for j := len(cmd); j >= 0; j-- {
			if rule[i].star {
				cur[j] = next[j] || (j < len(cmd) && cmd[j].kind == tokWord && !cmd[j].opaque && cur[j+1])
			} else {
				cur[j] = j < len(cmd) && tokenMatches(rule[i], cmd[j]) && next[j+1]
			}
		}
		next = cur
	}
	return next[0]
}

func tokenMatches(r, c token) bool {
	switch {
	case r.kind != c.kind:
		return false
	case r.kind == tokOp, c.opaque, r.expands:
		return r.raw == c.raw
	}
	return globMatch(r.pat, c.val)
}

// globMatch matches s against pattern, in which * matches any characters,
// ? one, and a backslash makes the next character literal.
func globMatch(pattern, s string) bool {
	type elem struct {
		r    rune
		kind byte // 'c' a character, '?' any one, '*' any run
	}
	var pat []elem
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		i += n
		switch r {
		case '*', '?':
			pat = append(pat, elem{kind: byte(r)})
		case '\\':
			r, n = utf8.DecodeRuneInString(pattern[i:])
			i += n
			fallthrough
		default:
			pat = append(pat, elem{r: r, kind: 'c'})
		}
	}
	str := []rune(s)
	p, j, star, mark := 0, 0, -1, 0
	for j < len(str) {
		switch {
		case p < len(pat) && (pat[p].kind == '?' || pat[p].kind == 'c' && pat[p].r == str[j]):
			p, j = p+1, j+1
		case p < len(pat) && pat[p].kind == '*':
			star, mark = p, j
			p++
		case star >= 0:
			mark++
			p, j = star+1, mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p].kind == '*' {
		p++
	}
	return p == len(pat)
}

// The shell syntax Rules understand: enough of bash's to split a command
// into simple commands and words as bash would, and to refuse whatever it
// cannot split with certainty.

type tokKind uint8

const (
	tokWord tokKind = iota
	tokOp           // a redirection, a parenthesis, ;; and the like
)

// token is a word or an operator of a command or a rule.
type token struct {
	kind    tokKind
	raw     string // as written
	val     string // a word's value: quotes and escapes removed, expansions as written
	pat     string // val as a glob: only * and ? unquoted in the source are special
	static  bool   // the shell uses val as it is: no expansion, glob, brace or tilde
	expands bool   // has a $ expansion: a rule matches it by its text
	star    bool   // an unquoted * alone
	assign  bool   // NAME=value
	opaque  bool   // it names the program but is not static: matched by its text only
}

// simpleCmd is one simple command of a list or pipeline.
type simpleCmd struct {
	toks       []token
	sep        string // the operator after it: ; & && || | |& or a newline
	start, end int    // its text in the source
}

// opaqueSyntax is shell syntax the rules cannot see through.
type opaqueSyntax struct{ what string }

func (e *opaqueSyntax) Error() string { return "it uses " + e.what }

// Anywhere in a command, even inside single quotes (bash evaluates array
// subscripts in arguments to printf -v, test -v, read and others), these
// can run commands the rules never see.
var opaqueMarks = []struct{ s, what string }{
	{"$(", "a command substitution $(...)"},
	{"`", "a command substitution `...`"},
	{"<(", "a process substitution <(...)"},
	{">(", "a process substitution >(...)"},
	{"$[", "an arithmetic expansion $[...]"},
}

// operators, longest first.
var operators = []string{"&>>", ";;&", "<<<", "<<-",
	"&&", "||", "|&", ";;", ";&", ">>", "<<", "<>", ">|", ">&", "<&", "&>",
	";", "&", "|", "(", ")", "<", ">"}

// reserved are bash's reserved words; in deny rules' view of a command the
// ones leading it are skipped.
var reserved = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true, "elif": true,
	"fi": true, "do": true, "done": true, "while": true, "until": true, "for": true, "case": true, "esac": true,
	"select": true, "function": true, "time": true, "coproc": true, "in": true, "[[": true, "]]": true}

// wrappers run the command that follows them; deny rules look past them.
var wrappers = map[string]bool{"command": true, "builtin": true, "exec": true, "env": true, "nohup": true,
	"nice": true, "sudo": true, "doas": true}

// parseCommand splits src into simple commands.
func parseCommand(src string) ([]simpleCmd, error) {
	for _, m := range opaqueMarks {
		if strings.Contains(src, m.s) {
			return nil, &opaqueSyntax{m.what}
		}
	}
	var cmds []simpleCmd
	cur := simpleCmd{start: -1}
	end := func(sep string) {
		if len(cur.toks) > 0 {
			cur.sep = sep
			cmds = append(cmds, cur)
		}
		cur = simpleCmd{start: -1}
	}
	add := func(t token, from, to int) {
		if cur.start < 0 {
			cur.start = from
		}
		cur.end = to
		cur.toks = append(cur.toks, t)
	}
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case c == '\n':
			end("\n")
			i++
		case c == '#': // a comment, since a word starts here
			for i < len(src) && src[i] != '\n' {
				i++
			}
		default:
			if op := operatorAt(src[i:]); op != "" {
				switch {
				case op == "<<" || op == "<<-":
					return nil, &opaqueSyntax{"a here-document"}
				case isSeparator(op):
					end(op)
				default:
					add(token{kind: tokOp, raw: op}, i, i+len(op))
				}
				i += len(op)
				continue
			}
			t, n, err := lexWord(src[i:])
			if err != nil {
				return nil, err
			}
			add(t, i, i+n)
			i += n
		}
	}
	end("")
	for k := range cmds {
		cmds[k].markProgram()
	}
	return cmds, nil
}

// operatorAt returns the operator s starts with, if any. Digits directly
// before a redirection name its descriptor ("2>").
func operatorAt(s string) string {
	fd := 0
	for fd < len(s) && s[fd] >= '0' && s[fd] <= '9' {
		fd++
	}
	if fd > 0 && (fd == len(s) || (s[fd] != '<' && s[fd] != '>')) {
		return ""
	}
	for _, op := range operators {
		if strings.HasPrefix(s[fd:], op) && (fd == 0 || isRedirect(op)) {
			return s[:fd+len(op)]
		}
	}
	return ""
}

func isSeparator(op string) bool {
	switch op {
	case ";", "&", "&&", "||", "|", "|&", "\n":
		return true
	}
	return false
}

func isRedirect(op string) bool {
	op = strings.TrimLeft(op, "0123456789")
	return strings.HasPrefix(op, "<") || strings.HasPrefix(op, ">") || strings.HasPrefix(op, "&>")
}

// lexWord reads the word s starts with and returns it and its length.
func lexWord(s string) (token, int, error) {
	t := token{kind: tokWord, static: true}
	var val, pat strings.Builder
	lit := func(str string) {
		val.WriteString(str)
		for _, r := range str {
			if strings.ContainsRune(`*?\`, r) {
				pat.WriteByte('\\')
			}
			pat.WriteRune(r)
		}
	}
	expand := func(s string) {
		t.static, t.expands = false, true
		lit(s) // what a variable holds matches as it is, glob characters too
	}
	braces := false
	i := 0
word:
	for i < len(s) {
		switch c := s[i]; c {
		case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
			break word
		case '\\':
			if i+1 == len(s) {
				return t, 0, errors.New("it ends in a backslash")
			}
			if s[i+1] == '\n' {
				i += 2
				continue
			}
			_, n := utf8.DecodeRuneInString(s[i+1:])
			lit(s[i+1 : i+1+n])
			i += 1 + n
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return t, 0, errors.New("a single quote is not closed")
			}
			lit(s[i+1 : i+1+j])
			i += j + 2
		case '"':
			n, err := lexDoubleQuoted(s[i:], lit, expand)
			if err != nil {
				return t, 0, err
			}
			i += n
		case '$':
			switch {
			case strings.HasPrefix(s[i:], "$'"):
				// ANSI-C quoting: its escapes stay undecoded, so the value
				// is known by its text only.
				j := i + 2
				for j < len(s) && s[j] != '\'' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				if j >= len(s) {
					return t, 0, errors.New("a $' quote is not closed")
				}
				expand(s[i : j+1])
				i = j + 1
			case strings.HasPrefix(s[i:], `$"`):
				// Translated by the locale: known by its text only.
				n, err := lexDoubleQuoted(s[i+1:], func(string) {}, func(string) {})
				if err != nil {
					return t, 0, err
				}
				expand(s[i : i+1+n])
				i += 1 + n
			default:
				n, err := expansion(s[i:])
				if err != nil {
					return t, 0, err
				}
				if n == 1 {
					lit("$")
				} else {
					expand(s[i : i+n])
				}
				i += n
			}
		case '*', '?':
			t.static = false
			val.WriteByte(c)
			pat.WriteByte(c)
			i++
		case '[', ']':
			// A bracket glob, or test's [ ... ]: either way, for a
			// program name, not a name known before the shell runs,
			// except the command [ itself.
			if i > 0 || len(s) > 1 && !strings.ContainsRune(" \t\n;&|()<>", rune(s[1])) {
				t.static = false
			}
			lit(s[i : i+1])
			i++
		case '{', '}':
			if braces || len(s) > 1 && !strings.ContainsRune(" \t\n;&|()<>", rune(s[1])) {
				t.static = false // brace expansion, or near enough
			}
			braces = true
			lit(s[i : i+1])
			i++
		case '~':
			if i == 0 {
				t.static = false
			}
			lit("~")
			i++
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			lit(s[i : i+n])
			i += n
		}
	}
	t.raw, t.val, t.pat = s[:i], val.String(), pat.String()
	t.star = t.raw == "*"
	if eq := strings.IndexByte(t.raw, '='); eq > 0 && isName(strings.TrimSuffix(t.raw[:eq], "+")) {
		t.assign = true
	}
	return t, i, nil
}

// lexDoubleQuoted reads the double-quoted string s starts with, passing
// its literal parts to lit and its expansions to expand, and returns its
// length.
func lexDoubleQuoted(s string, lit, expand func(string)) (int, error) {
	for i := 1; i < len(s); {
		switch c := s[i]; c {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				if s[i+1] != '\n' {
					lit(s[i+1 : i+2])
				}
				i += 2
				continue
			}
			lit(`\`)
			i++
		case '$':
			n, err := expansion(s[i:])
			if err != nil {
				return 0, err
			}
			if n == 1 {
				lit("$")
			} else {
				expand(s[i : i+n])
			}
			i += n
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			lit(s[i : i+n])
			i += n
		}
	}
	return 0, errors.New("a double quote is not closed")
}

// expansion returns the length of the parameter expansion s starts with:
// $NAME, ${NAME}, $1, $? and the like; 1 for a $ that stays a dollar sign.
func expansion(s string) (int, error) {
	if len(s) < 2 {
		return 1, nil
	}
	switch c := s[1]; {
	case c == '{':
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return 0, errors.New("a ${ is not closed")
		}
		if inner := s[2:j]; !isName(inner) && !isDigits(inner) && (len(inner) != 1 || !strings.Contains("@*#?$!-", inner)) {
			return 0, &opaqueSyntax{"a parameter expansion " + s[:j+1]}
		}
		return j + 1, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		j := 2
		for j < len(s) && isName("_"+s[j:j+1]) {
			j++
		}
		return j, nil
	case strings.IndexByte("0123456789@*#?$!-", c) >= 0:
		return 2, nil
	}
	return 1, nil
}

func isName(s string) bool {
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// markProgram marks the word that names the program opaque when the shell
// decides it only when it runs.
func (c *simpleCmd) markProgram() {
	for i := 0; i < len(c.toks); i++ {
		t := &c.toks[i]
		switch {
		case t.kind == tokOp && isRedirect(t.raw):
			i++ // and its target
		case t.kind == tokOp, t.assign, reserved[t.raw]:
		default:
			t.opaque = !t.static
			return
		}
	}
}

// allowToks returns the tokens a rule must match: all but the harmless
// redirections.
func (c *simpleCmd) allowToks() []token {
	var out []token
	for i := 0; i < len(c.toks); i++ {
		t := c.toks[i]
		if t.kind == tokOp && isRedirect(t.raw) && i+1 < len(c.toks) && c.toks[i+1].kind == tokWord &&
			harmless(t.raw, c.toks[i+1]) {
			i++
			continue
		}
		out = append(out, t)
	}
	return out
}

// denyToks returns the simple command as deny rules see it: without
// redirections and parentheses, and without the assignments, reserved
// words and wrappers before the program.
func (c *simpleCmd) denyToks() []token {
	var out []token
	for i := 0; i < len(c.toks); i++ {
		t := c.toks[i]
		if t.kind == tokOp {
			if isRedirect(t.raw) && i+1 < len(c.toks) && c.toks[i+1].kind == tokWord {
				i++
			}
			if isRedirect(t.raw) || t.raw == "(" || t.raw == ")" {
				continue
			}
		}
		if len(out) == 0 && t.kind == tokWord && (t.assign || reserved[t.raw] || wrappers[t.raw]) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// harmless reports whether a redirection writes no file: copying or
// closing a descriptor, output to /dev/null, input.
func harmless(op string, target token) bool {
	switch strings.TrimLeft(op, "0123456789") {
	case ">&", "<&":
		return target.static && (target.val == "-" || isDigits(target.val))
	case ">", ">>", "&>", "&>>", ">|":
		return target.static && target.val == "/dev/null"
	case "<":
		// bash opens a connection for /dev/tcp/host/port itself.
		return target.static && !strings.HasPrefix(target.val, "/dev/tcp/") && !strings.HasPrefix(target.val, "/dev/udp/")
	case "<<<":
		return true
	}
	return false
}
