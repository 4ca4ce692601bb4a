package rules

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// What a command runs: the builtins that evaluate code from their
// arguments, the wrappers whose command Rules judge too, find -exec, and
// the command line of sh -c.

// maxWrappers bounds how many wrappers of one command are looked
// through (nice nice nice ...): each is a copy of the words after it.
const maxWrappers = 16

// shellOptions is how a shell reads its options before the command line.
type shellOptions struct {
	letters string // single-letter options without an argument
	withArg string // single-letter options that take the next word
	long    string // long options without an argument, space-separated
	longArg string // long options that take the next word
}

// bashOptions are bash's options and dash's (sh, ash), whose command
// lines Rules read with bash's grammar. -k is left out: it makes
// NAME=value words after a command into assignments.
var bashOptions = &shellOptions{
	letters: "abefhmnptuvxBCEHPTcilrsDIqV",
	withArg: "oO",
	long:    "debug debugger dump-po-strings dump-strings help login noediting noprofile norc posix pretty-print restricted verbose version",
	longArg: "init-file rcfile",
}

// shellOpts is how the shell name reads its options, nil for a shell in a
// language Rules do not read; ok is false for a program that is no shell.
func shellOpts(name string) (opts *shellOptions, ok bool) {
	bashLike, ok := cmdline.Shell(name)
	if bashLike {
		return bashOptions, true
	}
	return nil, ok
}

// maxNesting bounds how deep sh -c 'sh -c ...' is read.
const maxNesting = 4

// shellString reads the command line a shell runs with -c, and returns
// the commands it runs and those that need an allow rule of their own;
// what it refuses, the whole command refuses.
func (sc *shellCommand) shellString(words []token) (runs, needs [][]token) {
	prog := words[0]
	name := path.Base(prog.val)
	opts, ok := shellOpts(name)
	if !prog.static || !ok {
		return nil, nil
	}
	i, dashC := shellArgs(name, opts, words, sc.refusef)
	if i < 0 || !dashC {
		return nil, nil // a script or standard input: an interpreter, allowing everything
	}
	if opts == nil {
		sc.refusef("%s -c, whose command line the rules do not read", name)
		return nil, nil
	}
	if i >= len(words) || !words[i].static {
		what := "nothing"
		if i < len(words) {
			what = clip(words[i].raw)
		}
		sc.refusef("%s -c with %s, a command line the rules cannot read", prog.val, what)
		return nil, nil
	}
	if sc.depth >= maxNesting {
		sc.refusef("%s -c nested more than %d deep", prog.val, maxNesting)
		return nil, nil
	}
	inner, err := parseShell(words[i].val, false, sc.depth+1, sc.parser, name != "bash")
	if err != nil {
		sc.refusef("%s -c %s, which %s", prog.val, cmdline.Quote(words[i].val), unreadable(err))
		return nil, nil
	}
	if inner.refused != nil {
		sc.refusef("%s in %s -c %s", inner.refused.what, prog.val, cmdline.Quote(words[i].val))
	}
	for _, c := range inner.cmds {
		runs = append(runs, c.runs...)
		needs = append(needs, c.allow)
		needs = append(needs, c.needs...)
	}
	return runs, needs
}

// shellArgs reads a shell's options as the shell does: it returns where
// its first operand is and whether -c was given; -1 when an option is one
// the rules refuse. opts nil reads only -c, for the deny rules' sake.
func shellArgs(name string, opts *shellOptions, words []token, refusef func(string, ...any)) (int, bool) {
	if opts == nil {
		opts = &shellOptions{letters: "c"}
	}
	i, dashC, long := 1, false, true
	for ; i < len(words); i++ {
		a := words[i]
		if !a.static {
			refusef("%s with %s, whose options the rules cannot know", name, clip(a.raw))
			return -1, false
		}
		v := a.val
		if v == "--" || v == "-" {
			return i + 1, dashC
		}
		if len(v) < 2 || v[0] != '-' && v[0] != '+' {
			break
		}
		if strings.HasPrefix(v, "--") && long { // bash reads them only before the others
			switch {
			case hasWord(opts.longArg, v[2:]):
				i++
				if i < len(words) && !words[i].static {
					refusef("%s %s with %s, which the rules cannot know", name, v, clip(words[i].raw))
					return -1, false
				}
			case !hasWord(opts.long, v[2:]):
				refusef("%s with option %s, which the rules do not know", name, clip(v))
				return -1, false
			}
			continue
		}
		long = false
		for _, ch := range v[1:] {
			switch {
			case ch == 'c' && v[0] == '-':
				dashC = true
			case strings.ContainsRune(opts.withArg, ch):
				i++
				if i < len(words) && (!words[i].static || words[i].val == "keyword") {
					refusef("%s -%c %s, which the rules do not know", name, ch, clip(words[i].raw))
					return -1, false
				}
			case ch == 'k':
				refusef("%s -k, which makes words after a command assignments", name)
				return -1, false
			case !strings.ContainsRune(opts.letters, ch):
				refusef("%s with option %s, which the rules do not know", name, clip(v))
				return -1, false
			}
		}
	}
	return i, dashC
}

// runsOf returns what words run, each judged: the words themselves, then
// each wrapper's command, find -exec's and sh -c's, and theirs; and of
// those, the ones that need an allow rule of their own.
func (sc *shellCommand) runsOf(words []token) (runs, needs [][]token) {
	levels := 0
	// open: xargs adds words from its input after this command's.
	type cmd struct {
		words []token
		open  bool
	}
	for queue := []cmd{{words: words}}; len(queue) > 0; queue = queue[1:] {
		w := queue[0].words
		if len(w) == 0 {
			continue
		}
		if levels++; levels > maxWrappers {
			sc.refusef("more than %d wrappers in one command", maxWrappers)
			break
		}
		runs = append(runs, w)
		switch {
		case queue[0].open:
			// Its rule must take the words xargs adds: "pwd" does not
			// approve xargs pwd, which runs pwd rm -rf d.
			needs = append(needs, append(w[:len(w):len(w)], xargsInput))
		case levels > 1:
			needs = append(needs, w)
		}
		sc.judge(w)
		r, n := sc.shellString(w)
		runs, needs = append(runs, r...), append(needs, n...)
		inner, err := unwrap(w)
		if err != nil {
			sc.refuse(err.Error())
		}
		if queue[0].open {
			sc.judgeOpen(w, inner)
		}
		for _, x := range findExecs(w) {
			queue = append(queue, cmd{words: x})
		}
		open := queue[0].open || appends(w)
		queue = append(queue, cmd{words: inner, open: open && inner != nil})
	}
	return runs, needs
}

// xargsInput stands for the words xargs adds after its command: as a
// glob, only a rule's lone * matches it.
var xargsInput = token{kind: tokWord, raw: "(what xargs reads)", val: "(what xargs reads)", pat: "*"}

// appends reports whether w is xargs adding words of its input after its
// command's: without -I, -i or --replace among its own options.
func appends(w []token) bool {
	if !w[0].static || path.Base(w[0].val) != "xargs" {
		return false
	}
	i, _ := wrappers["xargs"].skipOptions("xargs", w)
	return i >= 0 && xargsReplace(w[1:min(i, len(w))]) == ""
}

// judgeOpen refuses a command xargs runs with words of its input added
// at its end, when those words may become a command: a wrapper with no
// command of its own (xargs nice, given "rm -rf d", runs nice rm -rf d;
// xargs alone runs echo only when nothing is added), or find, whose
// expression may become -exec.
func (sc *shellCommand) judgeOpen(w, inner []token) {
	name := path.Base(w[0].val)
	if !w[0].static {
		return
	}
	_, wraps := wrappers[name]
	switch {
	case name == "find":
		sc.refuse("find run by xargs, whose input may add -exec and a command")
	case wraps && (inner == nil || name == "xargs" && &inner[0] != &w[len(w)-len(inner)]):
		sc.refusef("%s run by xargs with no command, which runs what xargs reads", clip(wordsText(w)))
	}
}

// judge refuses the builtins that run or evaluate code from their
// arguments, wherever they run: after wrappers too.
func (sc *shellCommand) judge(words []token) {
	if why := evaluates(words); why != "" {
		sc.refuse(why)
	}
}

func evaluates(words []token) string {
	name, args := words[0].val, words[1:]
	if !words[0].static {
		return ""
	}
	if why := evaluatesArgs(name, args); why != "" || !builtins[name] {
		return why
	}
	// A glob or expansion may become a name the builtin assigns or
	// evaluates: a planted file named a[$(rm -rf d)].
	for _, a := range args {
		if !a.static {
			return name + " with " + clip(a.raw) + ", which the builtin may take for a name to assign or evaluate"
		}
	}
	return ""
}

// evaluatesArgs says why the program name refuses args, if it does.
func evaluatesArgs(name string, args []token) string {
	if why := evaluatesAlways(name); why != "" {
		return why
	}
	if why := terminalChange(name, args); why != "" {
		return why
	}
	return evaluatesWith(name, args)
}

// evaluatesAlways says why the builtin name runs or assigns what it is
// given whatever its arguments, or "".
func evaluatesAlways(name string) string {
	switch name {
	case "eval":
		return "eval, which runs its arguments as commands"
	case "source", ".":
		return name + ", which runs a file as commands"
	case "alias":
		return "alias, which makes a word run something else"
	case "trap":
		return "trap, which runs its argument as a command later"
	case "enable":
		return "enable, which can load code into the shell"
	case "read", "mapfile", "readarray", "getopts":
		return name + ", which assigns the variables it names"
	case "let":
		return "let, which evaluates arithmetic"
	case "fc", "bind", "complete", "compgen":
		return name + ", which can run commands it is given"
	}
	return ""
}

// evaluatesWith says why name evaluates something with these arguments,
// or "".
func evaluatesWith(name string, args []token) string {
	switch name {
	case "find", "/usr/bin/find", "/bin/find":
		for _, a := range args {
			if !a.static {
				return "find with " + clip(a.raw) + ", which may expand to -exec and a command"
			}
		}
	case "wait":
		if a, ok := optionWith(args, "p"); ok {
			return name + " " + clip(a.val) + ", which assigns the variable it names"
		}
	case "hash":
		if _, ok := optionWith(args, "p"); ok {
			return "hash -p, which makes a name run another program"
		}
	case "set", "shopt":
		return shellOptionChange(name, args)
	case "history":
		return historyChange(args)
	case "test", "[":
		return testEvaluates(name, args)
	case "printf":
		// Its only option is -v; what follows -- or the first other word
		// is the format and its arguments.
		switch {
		case len(args) == 0:
		case !args[0].static:
			return "printf with " + clip(args[0].raw) + " before its format, which bash may read as -v"
		case strings.HasPrefix(args[0].val, "-v"):
			return "printf -v, which evaluates array subscripts"
		}
	case "declare", "typeset", "local", "export", "readonly":
		// Reached through a wrapper (command declare ...); plain ones are
		// judged by decl.
		if len(args) > 0 {
			return name + " with arguments, which assigns the variables they name"
		}
	case "unset":
		for _, a := range args {
			if strings.Contains(a.val, "[") {
				return name + " with " + clip(a.raw) + ", which bash evaluates as an array subscript"
			}
		}
	}
	return ""
}

// optionWith is the first argument that starts with - and holds letter.
func optionWith(args []token, letter string) (token, bool) {
	for _, a := range args {
		if strings.HasPrefix(a.val, "-") && strings.Contains(a.val, letter) {
			return a, true
		}
	}
	return token{}, false
}

// testEvaluates says why test or [ evaluates an array subscript with these
// arguments, or "".
func testEvaluates(name string, args []token) string {
	for _, a := range args {
		if a.val == "-v" || a.val == "-R" {
			return name + " " + a.val + ", which evaluates array subscripts"
		}
		if !a.static {
			return name + " with " + clip(a.raw) + ", which bash may read as -v and then evaluate"
		}
	}
	return ""
}

// How later lines are read is the shell's own state: set and shopt may
// change only the options below, which leave the reading of later text
// as Rules model it. Others may make words assignments (-k), expand
// history in a script (-H), take a # for a word in an interactive shell
// (interactive_comments) or read patterns mvdan.cc/sh does not. Aliases
// may be turned on: alias, which makes them, is refused.
const (
	setLetters = "abefhmnuvxBCEPT"
	setNames   = "allexport braceexpand emacs errexit errtrace functrace hashall ignoreeof monitor noclobber " +
		"noexec noglob nolog notify nounset onecmd physical pipefail verbose vi xtrace"
	shoptNames = "autocd cdable_vars cdspell checkhash checkjobs checkwinsize cmdhist direxpand dirspell dotglob " +
		"execfail expand_aliases failglob globasciiranges globstar gnu_errfmt histappend huponexit lastpipe lithist nocaseglob " +
		"nocasematch nullglob xpg_echo"
)

// shellOptionChange says why set or shopt with args changes an option
// outside setLetters, setNames and shoptNames, if it does.
func shellOptionChange(name string, args []token) string {
	names, isSet := shoptNames, name == "set"
	refused := func(opt string) string {
		if isSet && (strings.HasSuffix(opt, " keyword") || !strings.Contains(opt, " ") && strings.Contains(opt, "k")) {
			return "set -k, which makes words after a command assignments"
		}
		return name + " " + clip(opt) + ", which changes how the shell reads what follows"
	}
	if isSet {
		names = setNames
	}
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if !args[i].static {
			return name + " with " + clip(args[i].raw) + ", an option only the shell knows"
		}
		if v == "--" || v == "-" || len(v) < 2 || v[0] != '-' && v[0] != '+' {
			if isSet {
				return "" // the positional parameters
			}
			// shopt's operands are option names, set -o names with -o.
			if !hasWord(names, v) {
				return refused(v)
			}
			continue
		}
		for _, c := range v[1:] {
			switch {
			case c == 'o':
				if isSet {
					if i+1 < len(args) && !hasWord(setNames, args[i+1].val) {
						return refused(v + " " + args[i+1].val)
					}
					i++
				} else {
					names = setNames
				}
			case !isSet && strings.ContainsRune("spqu", c):
			case isSet && strings.ContainsRune(setLetters, c):
			default:
				return refused(v)
			}
		}
	}
	return ""
}

// builtins are bash's builtin commands but those that take their
// arguments as plain words (echo, cd, pwd, true ...), those that wrap a
// command, judged as the command is, and printf, judged on its own: a
// glob or an expansion in their arguments is refused.
var builtins = map[string]bool{".": true, "[": true, "alias": true, "bind": true, "break": true,
	"caller": true, "compgen": true, "complete": true, "compopt": true, "continue": true,
	"declare": true, "enable": true, "eval": true, "exit": true, "export": true, "fc": true,
	"getopts": true, "hash": true, "history": true, "kill": true, "let": true, "local": true, "logout": true,
	"mapfile": true, "read": true, "readarray": true, "readonly": true, "return": true,
	"set": true, "shift": true, "shopt": true, "source": true, "test": true, "trap": true, "typeset": true,
	"ulimit": true, "unalias": true, "unset": true, "wait": true}

// wrapper describes a program that runs the command after its options.
type wrapper struct {
	flags    string // single-letter options without an argument
	args     string // single-letter options with one
	long     string // long options without an argument, space-separated
	longArgs string // long options with one
	operands int    // words between the options and the command (timeout's duration)
	assigns  bool   // NAME=value words may come before the command
	numeric  bool   // -N is an option (nice -5)
	refused  string // options that make it run a string as a command
	runsWith string // when set, it runs a command only given one of these single-letter options
}

// wrappers run the command that follows their options; the rules judge
// that command too.
var wrappers = map[string]wrapper{
	"command": {flags: "pvV"},
	"builtin": {},
	"exec":    {flags: "cl", args: "a"},
	"nohup":   {},
	"nice":    {args: "n", longArgs: "adjustment", numeric: true},
	"time":    {flags: "apqv", args: "fo", long: "append portability quiet verbose", longArgs: "format output"},
	"env": {flags: "0iv", args: "uC", long: "ignore-environment null debug", longArgs: "unset chdir",
		assigns: true, refused: "S split-string"},
	"sudo": {flags: "AbEeHKklNnPSVv", args: "CDghpRrTtUu",
		long:     "askpass background preserve-env edit set-home non-interactive preserve-groups stdin",
		longArgs: "close-from chdir group host prompt role type command-timeout other-user user", assigns: true,
		refused: "i s login shell"},
	"doas":    {flags: "ns", args: "uC"},
	"timeout": {flags: "v", args: "ks", long: "preserve-status foreground verbose", longArgs: "kill-after signal", operands: 1},
	"stdbuf":  {args: "ioe", longArgs: "input output error"},
	"setsid":  {flags: "cfw", long: "ctty fork wait"},
	"ionice":  {flags: "t", args: "cnp", long: "ignore", longArgs: "class classdata pid"},
	"busybox": {},
	"chroot":  {long: "skip-chdir", longArgs: "userspec groups", operands: 1},
	"flock": {flags: "sxunoF", args: "Ew", long: "shared exclusive unlock nonblock close no-fork verbose",
		longArgs: "conflict-exit-code timeout", operands: 1, refused: "c command"},
	"taskset": {flags: "ac", long: "all-tasks cpu-list", operands: 1},
	"chrt":    {flags: "abdefiomprRv", args: "TPD", long: "all-tasks batch deadline fifo idle other rr reset-on-fork verbose", operands: 1},
	"runuser": {flags: "flmp", args: "gGuw", long: "login preserve-environment", longArgs: "group supp-group user shell whitelist-environment", refused: "c command session-command"},
	"su":      {flags: "flmp", args: "gGsw", long: "login preserve-environment pty", longArgs: "group supp-group shell whitelist-environment", refused: "c command session-command"},
	// jobs -x runs its command with job specifications replaced.
	"jobs": {flags: "lnprsx", runsWith: "x"},
	"xargs": {flags: "0eilprtxo", args: "adEILnPs",
		long:     "null exit interactive no-run-if-empty verbose open-tty show-limits replace",
		longArgs: "arg-file delimiter max-args max-procs max-chars process-slot-var"},
}

// unwrap returns the command a wrapper runs, nil when words is not a
// wrapper. An error says which option it could not read.
func unwrap(words []token) ([]token, error) {
	prog := words[0]
	name := path.Base(prog.val)
	w, ok := wrappers[name]
	if !ok || !prog.static {
		return nil, nil
	}
	i, err := w.skipOptions(name, words)
	if i < 0 {
		return nil, err
	}
	for _, op := range words[min(i, len(words)):min(i+w.operands, len(words))] {
		if !op.static && err == nil {
			err = fmt.Errorf("%s with %s, which the rules cannot know", name, clip(op.raw))
		}
	}
	if w.runsWith != "" && !slices.ContainsFunc(words[1:min(i, len(words))], func(o token) bool {
		return len(o.val) > 1 && o.val[0] == '-' && o.val[1] != '-' && strings.ContainsAny(o.val[1:], w.runsWith)
	}) {
		return nil, err
	}
	i += w.operands
	if i >= len(words) {
		if name == "xargs" {
			return []token{{kind: tokWord, raw: "echo", val: "echo", pat: "echo", static: true}}, err
		}
		return nil, err
	}
	// The command shares words' tokens: a copy for each of a chain of
	// wrappers would grow with the square of the command's length.
	inner := words[i:]
	if name == "xargs" {
		if repl := xargsReplace(words[1:i]); repl != "" {
			inner = replaced(inner, repl)
		}
	}
	inner[0].opaque = !inner[0].static
	return inner, err
}

// xargsReplace returns the string xargs -I, -i or --replace replaces
// with each line of its input, if one is given.
func xargsReplace(opts []token) string {
	for i, o := range opts {
		switch v := o.val; {
		case v == "-I" && i+1 < len(opts):
			return opts[i+1].val
		case strings.HasPrefix(v, "-I"), strings.HasPrefix(v, "-i") && len(v) > 2:
			return v[2:]
		case v == "-i", v == "--replace":
			return "{}"
		case strings.HasPrefix(v, "--replace="):
			return v[len("--replace="):]
		}
	}
	return ""
}

// replaced returns words with each word that holds repl made what only
// the program knows, like a glob: find and xargs put a file name or a
// line of input there (bash -c {} runs whatever it is).
func replaced(words []token, repl string) []token {
	var out []token
	for i, w := range words {
		if strings.Contains(w.val, repl) {
			if out == nil {
				out = append([]token(nil), words...)
			}
			out[i].static = false
		}
	}
	if out == nil {
		return words
	}
	return out
}

// skipOptions returns where the options of the wrapper name end in words,
// and an error naming the first option it does not know; -1 when an
// option makes it run a string as a command.
func (w wrapper) skipOptions(name string, words []token) (int, error) {
	sc := optionScan{name: name, words: words}
	i := 1
	for ; i < len(words); i++ {
		a := words[i]
		var fatal error
		switch {
		case !a.static:
			sc.unknown(a.raw)
		case a.val == "--":
			return i + 1, sc.err
		case a.val == "-" && name == "env": // env - is env -i
		case strings.HasPrefix(a.val, "--"):
			i, fatal = w.longOption(&sc, i)
		case len(a.val) > 1 && a.val[0] == '-':
			if w.numeric && isDigits(a.val[1:]) {
				continue
			}
			i, fatal = w.shortOptions(&sc, i)
		case w.assigns && !strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "="):
			// env and sudo take any NAME=value, names bash would not.
			if v, _, _ := strings.Cut(a.val, "="); strings.HasPrefix(v, "BASH_FUNC_") || evaluatedVars[v] {
				return -1, fmt.Errorf("%s %s, whose value a shell runs", name, clip(a.raw))
			}
		default:
			return i, sc.err
		}
		if fatal != nil {
			return -1, fatal
		}
	}
	return i, sc.err
}

// optionScan is skipOptions' reading of a wrapper's words: the first
// option it could not read, kept while it reads on to find the command.
type optionScan struct {
	name  string
	words []token
	err   error
}

func (sc *optionScan) unknown(opt string) {
	if sc.err == nil {
		sc.err = fmt.Errorf("%s with option %s, which the rules do not know", sc.name, clip(opt))
	}
}

// optArg checks the argument of an option, words[j]: one that only the
// shell knows may be several words, or none, and move the command.
func (sc *optionScan) optArg(j int) {
	if j < len(sc.words) && !sc.words[j].static && sc.err == nil {
		sc.err = fmt.Errorf("%s with %s, which the rules cannot know", sc.name, clip(sc.words[j].raw))
	}
}

// longOption reads --opt or --opt=value at words[i] and returns the index
// of its last word; an error is an option that runs a string as a command.
func (w wrapper) longOption(sc *optionScan, i int) (int, error) {
	a := sc.words[i]
	opt, _, eq := strings.Cut(a.val[2:], "=")
	switch {
	case hasWord(w.refused, opt):
		return i, fmt.Errorf("%s --%s, which runs a string as a command", sc.name, opt)
	case hasWord(w.longArgs, opt) && !eq:
		i++
		sc.optArg(i)
	case !hasWord(w.longArgs, opt) && !hasWord(w.long, opt):
		sc.unknown(a.val)
	}
	return i, nil
}

// shortOptions reads a cluster of one-letter options at words[i], the last
// of which may take the next word, and returns the index of its last
// word; an error is an option that runs a string as a command.
func (w wrapper) shortOptions(sc *optionScan, i int) (int, error) {
	a := sc.words[i]
	for j := 1; j < len(a.val); j++ {
		c := a.val[j : j+1]
		if hasWord(w.refused, c) {
			return i, fmt.Errorf("%s -%s, which runs a string as a command", sc.name, c)
		}
		if strings.Contains(w.args, c) {
			if j == len(a.val)-1 {
				i++ // the argument is the next word
				sc.optArg(i)
			}
			return i, nil
		}
		if !strings.Contains(w.flags, c) {
			sc.unknown(a.val)
			return i, nil
		}
	}
	return i, nil
}

// findExecs returns the commands find runs with -exec, -execdir, -ok and
// -okdir.
func findExecs(words []token) [][]token {
	if !words[0].static || path.Base(words[0].val) != "find" {
		return nil
	}
	var out [][]token
	for i := 1; i < len(words); i++ {
		switch words[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(words) && words[j].val != ";" && words[j].val != "+" {
				j++
			}
			if j > i+1 {
				x := replaced(append([]token(nil), words[i+1:j]...), "{}")
				x[0].opaque = !x[0].static
				out = append(out, x)
			}
			i = j
		}
	}
	return out
}

func hasWord(list, w string) bool {
	for _, f := range strings.Fields(list) {
		if f == w {
			return true
		}
	}
	return false
}
