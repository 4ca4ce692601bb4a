package rules

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/cmdline"
	"mvdan.cc/sh/v3/syntax"
)

// How Rules read shell text: bash's own syntax through mvdan.cc/sh. The
// result is a flat list of simple commands, each with the commands it runs
// through wrappers, and the first construct outside the grammar Rules
// model completely: an allow rule never approves a command that has one.

// maxParens and maxDepth bound the work of reading a command: mvdan.cc/sh
// spends tens of microseconds on each nested (, and each level of nesting
// is a copy of the text inside it.
const (
	maxParens = 2048
	maxDepth  = 200 // syntax tree nodes from the top to the deepest, statements aside
)

type tokKind uint8

const (
	tokWord tokKind = iota
	tokOp           // a redirection operator, with its descriptor ("2>")
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
	exact   bool   // only a rule word spelled the same matches it: an expansion, whose value and word count only the shell knows, or an assignment
}

// simpleCmd is one simple command of a list or pipeline.
type simpleCmd struct {
	toks       []token   // as written: assignments, words, then redirections
	allow      []token   // what a rule must match: toks but the harmless redirections
	sep        string    // the operator after it: ; & && || | |& a newline, or ) at the end of a substitution
	start, end int       // its text in the source
	runs       [][]token // what it runs: its own words, then each wrapper's command, find -exec's, sh -c's
	needs      [][]token // what must match an allow rule of its own: each wrapper's command, find -exec's, and sh -c's commands with their assignments and redirections
}

// syntaxError is what mvdan.cc/sh found wrong with a command.
type syntaxError string

func (e syntaxError) Error() string { return string(e) }

// opaqueSyntax is shell syntax the rules cannot see through.
type opaqueSyntax struct{ what string }

func (e *opaqueSyntax) Error() string { return "it uses " + e.what }

// Anywhere in a command, even inside single quotes or a comment, these
// may run commands the rules never see: bash evaluates the array
// subscripts in arguments to test -v, printf -v, read and declare, and
// the text of PS4.
var opaqueMarks = []struct{ s, what string }{
	{"$(", "a command substitution $(...)"},
	{"`", "a command substitution `...`"},
	{"<(", "a process substitution <(...)"},
	{">(", "a process substitution >(...)"},
	{"$[", "an arithmetic expansion $[...]"},
}

// shellCommand is a command as Rules read it.
type shellCommand struct {
	src     string // the command as given
	cmds    []simpleCmd
	refused *opaqueSyntax // the first construct no allow rule approves, if any
	rule    bool          // a rule: what its commands run is not judged
	depth   int           // how many sh -c this command line is inside
	posix   bool          // run by sh, dash or ash: bash's own syntax means something else there
	parser  *syntax.Parser
}

// parseCommand reads src as bash would. A syntax error is an error; a
// construct the rules cannot see through is recorded in refused, and the
// commands inside it are still listed (deny rules see them).
func parseCommand(src string) (*shellCommand, error) { return parseShell(src, false, 0, nil, false) }

// parseRule reads a rule as parseCommand reads a command, but leaves what
// its commands run unjudged: a rule's * is no wrapper's option.
func parseRule(src string) (*shellCommand, error) { return parseShell(src, true, 0, nil, false) }

// parseShell reads src as a rule or a command, inside depth sh -c, with
// parser (nil: a new one); posix when sh runs it rather than bash.
func parseShell(src string, rule bool, depth int, parser *syntax.Parser, posix bool) (*shellCommand, error) {
	if parser == nil {
		parser = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	sc := &shellCommand{src: src, rule: rule, depth: depth, parser: parser, posix: posix}
	if n := strings.Count(src, "("); n > maxParens {
		return nil, fmt.Errorf("holds %d parentheses, more than the %d the rules read", n, maxParens)
	}
	unread := unreadBytes(src)
	f, err := parser.Parse(strings.NewReader(src), "")
	if err != nil {
		if unread != "" {
			return nil, errors.New("uses " + unread + ", which the rules do not read")
		}
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return nil, syntaxError(pe.Text)
		}
		return nil, syntaxError(err.Error())
	}
	if tooDeep(f) {
		return nil, fmt.Errorf("nests deeper than the rules read (%d levels of syntax)", maxDepth)
	}
	if unread != "" {
		// Refused, but read as well as mvdan.cc/sh can for the deny rules.
		sc.refuse(unread)
	}
	sc.list(f.Stmts, "", nil)
	for _, m := range opaqueMarks {
		if strings.Contains(sc.src, m.s) {
			sc.refuse(m.what)
		}
	}
	return sc, nil
}

// unreadBytes names what src holds that Rules do not read: where bash
// joins a line and where it does not (in a comment, in $'...', after $)
// is exactly where a reading can go wrong; bytes the terminal or the
// locale may act on likewise.
func unreadBytes(src string) string {
	if strings.Contains(src, "\\\n") {
		return "a line continuation (a backslash before a newline)"
	}
	if i := strings.IndexFunc(src, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
		return fmt.Sprintf("the control character %q", src[i])
	}
	return ""
}

// tooDeep reports whether f's syntax tree nests deeper than maxDepth,
// without descending further. The statements of a pipeline or an && chain
// do not count: they nest in the tree, not in the walk's work.
func tooDeep(f *syntax.File) bool {
	var counted []bool
	depth, deep := 0, false
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			if counted[len(counted)-1] {
				depth--
			}
			counted = counted[:len(counted)-1]
			return true
		}
		_, stmt := n.(*syntax.Stmt)
		_, binary := n.(*syntax.BinaryCmd)
		counted = append(counted, !stmt && !binary)
		if !stmt && !binary {
			depth++
		}
		deep = deep || depth > maxDepth
		return !deep
	})
	return deep
}

func (sc *shellCommand) refuse(what string) {
	if sc.refused == nil {
		sc.refused = &opaqueSyntax{what}
	}
}

// refusef is refuse with a message built only for the first refusal:
// a long command may hold thousands.
func (sc *shellCommand) refusef(format string, args ...any) {
	if sc.refused == nil {
		sc.refused = &opaqueSyntax{fmt.Sprintf(format, args...)}
	}
}

func (sc *shellCommand) text(n syntax.Node) string {
	return sc.src[off(n.Pos()):off(n.End())]
}

func off(p syntax.Pos) int { return int(p.Offset()) }

// stmtEnd is where a statement's text ends: its command or its last
// redirection, without the ; or & after it.
func stmtEnd(s *syntax.Stmt, c syntax.Command) int {
	end := off(c.End())
	if n := len(s.Redirs); n > 0 {
		end = max(end, off(s.Redirs[n-1].End()))
	}
	return end
}

// list walks a list of statements; the last one's separator is sep.
func (sc *shellCommand) list(stmts []*syntax.Stmt, sep string, redirs []token) {
	for i, s := range stmts {
		own := sep
		switch {
		case s.Background:
			own = "&"
		case s.Semicolon.IsValid():
			own = ";"
		case i < len(stmts)-1:
			own = "\n"
		}
		sc.stmt(s, own, redirs)
	}
}

// stmt walks one statement. Redirections of a compound command apply to
// every simple command inside it.
func (sc *shellCommand) stmt(s *syntax.Stmt, sep string, redirs []token) {
	if s.Coprocess || s.Disown {
		sc.refuse("a coprocess")
	}
	if s.Negated && sc.rule {
		sc.refuse("! in a rule, which matching looks through: \"! *\" would be \"*\"")
	}
	redirs = append(redirs[:len(redirs):len(redirs)], sc.redirects(s.Redirs)...)
	switch c := s.Cmd.(type) {
	case nil:
		sc.add(nil, redirs, sep, off(s.Pos()), off(s.End()))
	case *syntax.CallExpr:
		toks := make([]token, 0, len(c.Assigns)+len(c.Args))
		for _, a := range c.Assigns {
			toks = append(toks, sc.assign(a))
		}
		for _, w := range c.Args {
			toks = append(toks, sc.word(w))
		}
		sc.add(toks, redirs, sep, off(s.Pos()), stmtEnd(s, c))
	case *syntax.DeclClause:
		sc.decl(c, s, sep, redirs)
	case *syntax.BinaryCmd:
		if sc.posix && c.Op == syntax.PipeAll {
			sc.refuse("|&, which sh does not read as bash does")
		}
		if _, timed := c.Y.Cmd.(*syntax.TimeClause); timed && (c.Op == syntax.Pipe || c.Op == syntax.PipeAll) {
			sc.refuse("time after " + c.Op.String() + ", which bash runs as the program time, not as the keyword")
		}
		sc.stmt(c.X, c.Op.String(), redirs)
		sc.stmt(c.Y, sep, redirs)
	case *syntax.Block:
		sc.list(c.Stmts, sep, redirs)
	case *syntax.Subshell:
		sc.list(c.Stmts, sep, redirs)
	default:
		sc.compound(c, sep, redirs)
	}
}

// compound walks a command that holds others under a keyword (if, while,
// for, case, time, a function, a coprocess), or that bash evaluates
// itself. All but if and time are refused; the commands inside are still
// listed for deny rules.
func (sc *shellCommand) compound(c syntax.Command, sep string, redirs []token) {
	switch c := c.(type) {
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			sc.list(c.Cond, ";", redirs)
			sc.list(c.Then, sep, redirs)
		}
	case *syntax.WhileClause:
		if c.Until {
			sc.refuse("an until loop")
		}
		sc.refuse("a while loop")
		sc.list(c.Cond, ";", redirs)
		sc.list(c.Do, sep, redirs)
	case *syntax.ForClause:
		sc.forLoop(c, sep, redirs)
	case *syntax.CaseClause:
		sc.refuse("a case statement")
		sc.word(c.Word)
		for _, it := range c.Items {
			for _, w := range it.Patterns {
				sc.word(w)
			}
			sc.list(it.Stmts, sep, redirs)
		}
	case *syntax.TimeClause:
		if sc.posix {
			sc.refuse("time, which sh runs as a program")
		}
		if sc.rule {
			sc.refuse("time in a rule, which matching looks through: \"time *\" would be \"*\"")
		}
		if c.Stmt != nil {
			sc.stmt(timed(c.Stmt), sep, redirs)
		}
	case *syntax.FuncDecl:
		name := ""
		if c.Name != nil {
			name = " " + c.Name.Value
		}
		sc.refuse("a function definition" + name)
		sc.stmt(c.Body, sep, redirs)
	case *syntax.CoprocClause:
		sc.refuse("a coprocess")
		sc.stmt(c.Stmt, sep, redirs)
	case *syntax.ArithmCmd:
		sc.refuse("an arithmetic command ((...))")
	case *syntax.TestClause:
		sc.refuse("a [[ ... ]] test, which evaluates array subscripts and arithmetic")
	case *syntax.LetClause:
		sc.refuse("let, which evaluates arithmetic")
	default:
		sc.refusef("shell syntax the rules do not know (%T)", c)
	}
}

// forLoop walks for and select loops, refused: for NAME assigns NAME,
// and bash evaluates what SECONDS, RANDOM, OPTIND and others are given
// as arithmetic.
func (sc *shellCommand) forLoop(c *syntax.ForClause, sep string, redirs []token) {
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		if c.Select {
			sc.refuse("a select loop, which assigns the variable it names")
		}
		sc.refuse("a for loop, which assigns the variable it names")
		for _, w := range l.Items {
			sc.word(w)
		}
	default:
		sc.refuse("an arithmetic for loop for ((...))")
	}
	sc.list(c.Do, sep, redirs)
}

// timed is the statement the time keyword runs: bash takes one -- after
// time (-p), which mvdan.cc/sh leaves as the command's first word.
func timed(s *syntax.Stmt) *syntax.Stmt {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) < 2 || call.Args[0].Lit() != "--" {
		return s
	}
	inner := *s
	inner.Cmd = &syntax.CallExpr{Args: call.Args[1:]}
	return &inner
}

// add lists a simple command and judges what it runs.
func (sc *shellCommand) add(toks, redirs []token, sep string, start, end int) {
	c := simpleCmd{toks: append(toks, redirs...), sep: sep, start: start, end: end}
	c.markProgram()
	c.allow = c.allowToks()
	if !sc.rule {
		c.runs, c.needs = sc.runsOf(c.words())
		if why := c.rebindsShell(); why != "" {
			sc.refuse(why)
		}
	}
	sc.cmds = append(sc.cmds, c)
}

// redirects turns redirections into tokens: the operator, then its target.
func (sc *shellCommand) redirects(rs []*syntax.Redirect) []token {
	var out []token
	for _, r := range rs {
		op := r.Op.String()
		if r.N != nil {
			op = r.N.Value + op
		}
		if sc.posix && (r.Op == syntax.RdrAll || r.Op == syntax.AppAll) {
			sc.refusef("%s, which sh reads as & and a redirection", op)
		}
		if r.N != nil && !isDigits(r.N.Value) {
			sc.refusef("a redirection %s, which assigns a variable", op)
		}
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc {
			sc.refuse("a here-document")
			if r.Hdoc != nil {
				sc.word(r.Hdoc)
			}
		}
		out = append(out, token{kind: tokOp, raw: op}, sc.word(r.Word))
	}
	return out
}

// assign turns NAME=value into a token.
func (sc *shellCommand) assign(a *syntax.Assign) token {
	if a.Index != nil {
		sc.refuse("an array subscript in an assignment, which bash evaluates as arithmetic")
	}
	if a.Name != nil && evaluatedVars[a.Name.Value] {
		sc.refuse("an assignment to " + a.Name.Value + ", whose value the shell expands or runs later")
	}
	t := token{kind: tokWord, raw: sc.text(a), static: true, assign: a.Name != nil, exact: a.Name != nil}
	name := ""
	if a.Name != nil {
		name = a.Name.Value + "="
		if a.Append {
			name = a.Name.Value + "+="
		}
	}
	switch {
	case a.Array != nil:
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				sc.refuse("an array subscript in an assignment, which bash evaluates as arithmetic")
			}
			if e.Value != nil {
				sc.word(e.Value)
			}
		}
		t.static, t.expands = false, true
		t.val, t.pat = t.raw, globQuote(t.raw)
	case a.Value != nil:
		v := sc.word(a.Value)
		t.val, t.pat = name+v.val, globQuote(name)+v.pat
		t.static, t.expands = v.static, v.expands
	default:
		t.val, t.pat = name, globQuote(name)
	}
	return t
}

// evaluatedVars are variables whose value bash expands or runs later: a
// prompt (PS4 under set -x), a startup file, and the options a bash
// started with them in its environment takes (SHELLOPTS=keyword is -k).
var evaluatedVars = map[string]bool{"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true,
	"PROMPT_COMMAND": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true}

// decl turns declare, export, local, readonly and typeset into a simple
// command. With arguments they assign the variables they name, and bash
// evaluates the values of some (SECONDS, RANDOM, -i, -n): refused.
func (sc *shellCommand) decl(d *syntax.DeclClause, s *syntax.Stmt, sep string, redirs []token) {
	variant := d.Variant.Value
	if len(d.Args) > 0 {
		sc.refuse(variant + " with arguments, which assigns the variables they name")
	}
	toks := []token{{kind: tokWord, raw: variant, val: variant, pat: variant, static: true}}
	for _, a := range d.Args {
		switch {
		case !a.Naked:
			toks = append(toks, sc.assign(a))
		case a.Name != nil:
			toks = append(toks, token{kind: tokWord, raw: a.Name.Value, val: a.Name.Value, pat: globQuote(a.Name.Value), static: true})
		default:
			toks = append(toks, sc.word(a.Value))
		}
	}
	sc.add(toks, redirs, sep, off(s.Pos()), stmtEnd(s, d))
}

// word turns a shell word into a token, refusing the parts that run code.
func (sc *shellCommand) word(w *syntax.Word) token {
	t := token{kind: tokWord, raw: sc.text(w), static: true}
	var val, pat strings.Builder
	lit := func(s string) {
		val.WriteString(s)
		pat.WriteString(globQuote(s))
	}
	expand := func(n syntax.Node) {
		t.static, t.expands, t.exact = false, true, true
		// A rule matches an expansion by its text: val holds a short one
		// for messages, never a copy of each level of a nested one.
		if s := sc.text(n); len(s) <= 64 {
			lit(s)
		} else {
			lit("${...}")
		}
	}
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			sc.unquoted(x.Value, i == 0, t.raw, &t, &val, &pat)
		case *syntax.SglQuoted:
			lit(sc.singleQuoted(x, &t))
		case *syntax.DblQuoted:
			sc.doubleQuoted(x, lit, expand)
		case *syntax.ParamExp:
			sc.param(x)
			expand(x)
		default:
			sc.wordPart(part)
			expand(part)
		}
	}
	t.val, t.pat = val.String(), pat.String()
	t.star = t.raw == "*"
	sc.refuseMarks(t.val)
	return t
}

// singleQuoted is the value of '...' or $'...'; a $'...' naming a
// character beyond ASCII makes t exact and not static, since the locale
// decides its bytes.
func (sc *shellCommand) singleQuoted(x *syntax.SglQuoted, t *token) string {
	v := x.Value
	if x.Dollar && sc.posix {
		sc.refuse("a $'...' string, which sh does not decode")
	}
	if x.Dollar {
		var nul, local bool
		v, nul, local = decodeANSI(v)
		if nul {
			sc.refuse("a $'...' string holding a NUL byte, where bash ends the word")
		}
		t.static, t.exact = t.static && !local, t.exact || local
	}
	return v
}

// doubleQuoted adds the parts of "...": literals through lit, expansions
// through expand.
func (sc *shellCommand) doubleQuoted(x *syntax.DblQuoted, lit func(string), expand func(syntax.Node)) {
	if x.Dollar {
		sc.refuse(`a $"..." string, which the locale may translate into anything`)
	}
	for _, p := range x.Parts {
		switch y := p.(type) {
		case *syntax.Lit:
			lit(unescapeDouble(y.Value))
		case *syntax.ParamExp:
			sc.param(y)
			expand(y)
		default:
			sc.wordPart(p)
			expand(p)
		}
	}
}

// refuseMarks refuses a word whose value holds $( or a backquote, as
// $'\x24(...)' and \$\(...\) do: bash evaluates such text as code in
// array subscripts.
func (sc *shellCommand) refuseMarks(val string) {
	for _, m := range opaqueMarks[:2] {
		if strings.Contains(val, m.s) {
			sc.refusef("%s in the value %s", m.what, cmdline.Quote(val))
		}
	}
}

// unquoted adds an unquoted literal: backslash escapes, globs, braces and
// tildes.
func (sc *shellCommand) unquoted(s string, first bool, raw string, t *token, val, pat *strings.Builder) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\\':
			if i+n < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[i+n:])
				val.WriteRune(r2)
				pat.WriteString(globQuote(string(r2)))
				i += n + n2
				continue
			}
		case '*', '?':
			t.static = false
			val.WriteRune(r)
			pat.WriteRune(r)
			i += n
			continue
		case '[', ']':
			// A bracket glob, except the words [ ] [[ ]] themselves.
			if raw != "[" && raw != "]" && raw != "[[" && raw != "]]" {
				t.static = false
			}
		case '{':
			// Brace expansion needs a comma or a .. sequence; a quoted one
			// counts too, erring towards not static. {} stays {}.
			if strings.Contains(raw, "}") && (strings.Contains(raw, ",") || strings.Contains(raw, "..")) {
				t.static = false
			}
		case '~':
			if first && i == 0 {
				t.static = false
			}
		}
		val.WriteString(s[i : i+n])
		pat.WriteString(globQuote(s[i : i+n]))
		i += n
	}
}

// wordPart refuses a part of a word that runs code, listing the commands
// inside it for deny rules.
func (sc *shellCommand) wordPart(p syntax.WordPart) {
	switch x := p.(type) {
	case *syntax.CmdSubst:
		if x.Backquotes {
			sc.refuse("a command substitution `...`")
		} else {
			sc.refuse("a command substitution $(...)")
		}
		sc.list(x.Stmts, ")", nil)
	case *syntax.ProcSubst:
		sc.refuse("a process substitution " + x.Op.String() + "...)")
		sc.list(x.Stmts, ")", nil)
	case *syntax.ArithmExp:
		if x.Bracket {
			sc.refuse("an arithmetic expansion $[...]")
		} else {
			sc.refuse("an arithmetic expansion $((...))")
		}
	case *syntax.ExtGlob:
		sc.refusef("an extended glob %s", clip(sc.text(x)))
	default:
		sc.refusef("shell syntax the rules do not know: %s", clip(sc.text(p)))
	}
}

// param refuses every parameter expansion but $NAME, ${NAME} and the
// special parameters: operators, subscripts, indirection, lengths.
func (sc *shellCommand) param(p *syntax.ParamExp) {
	simple := p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
	if !simple {
		sc.refusef("a parameter expansion %s", clip(sc.text(p)))
	}
}

// words returns the command without its assignments and redirections:
// the program and its arguments.
func (c *simpleCmd) words() []token {
	var out []token
	for i := 0; i < len(c.toks); i++ {
		t := c.toks[i]
		switch {
		case t.kind == tokOp:
			i++ // and its target
		case len(out) == 0 && t.assign:
		default:
			out = append(out, t)
		}
	}
	return out
}

// markProgram marks the word that names the program opaque when the shell
// decides it only when it runs.
func (c *simpleCmd) markProgram() {
	for i := 0; i < len(c.toks); i++ {
		t := &c.toks[i]
		switch {
		case t.kind == tokOp:
			i++
		case t.assign:
		default:
			t.opaque = !t.static
			return
		}
	}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
