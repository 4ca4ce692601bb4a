package agentpty

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// What a command runs: the builtins that evaluate code from their
// arguments, the wrappers whose command Rules judge too, find -exec, and
// the command line of sh -c.

// maxWrappers bounds how many wrappers of one command are looked
// through (nice nice nice ...): each is a copy of the words after it.
const maxWrappers = 16

// shells run the string after -c as a command line.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// maxNesting bounds how deep sh -c 'sh -c ...' is read.
const maxNesting = 4

// shellString reads the command line a shell runs with -c, and returns
// the commands it runs; what it refuses, the whole command refuses.
func (sc *shellCommand) shellString(words []token) [][]token {
	prog := words[0]
	if !prog.static || !shells[path.Base(prog.val)] {
		return nil
	}
	i, dashC := 1, false
	for ; i < len(words); i++ {
		a := words[i]
		if !a.static {
			sc.refuse(prog.val + " with " + a.raw + ", whose options the rules cannot know")
			return nil
		}
		if a.val == "--" || a.val == "-" {
			i++
			break
		}
		if len(a.val) < 2 || a.val[0] != '-' && a.val[0] != '+' {
			break
		}
		if a.val[1] == '-' {
			continue // --norc, --login, ...
		}
		dashC = dashC || a.val[0] == '-' && strings.Contains(a.val, "c")
		if strings.ContainsAny(a.val[1:], "oO") {
			i++ // -o errexit, -O extglob
		}
	}
	if !dashC {
		return nil // a script or standard input: an interpreter, allowing everything
	}
	if i >= len(words) || !words[i].static {
		what := "nothing"
		if i < len(words) {
			what = words[i].raw
		}
		sc.refuse(prog.val + " -c with " + what + ", a command line the rules cannot read")
		return nil
	}
	if sc.depth >= maxNesting {
		sc.refuse(fmt.Sprintf("%s -c nested more than %d deep", prog.val, maxNesting))
		return nil
	}
	inner, err := parseShell(words[i].val, false, sc.depth+1)
	if err != nil {
		sc.refuse(fmt.Sprintf("%s -c %q, which cannot be parsed: %v", prog.val, words[i].val, err))
		return nil
	}
	if inner.refused != nil {
		sc.refuse(inner.refused.what + " in " + prog.val + " -c " + strconv.Quote(words[i].val))
	}
	var runs [][]token
	for _, c := range inner.cmds {
		runs = append(runs, c.runs...)
	}
	return runs
}

// runsOf returns what words run, each judged: the words themselves, then
// each wrapper's command, find -exec's and sh -c's, and theirs.
func (sc *shellCommand) runsOf(words []token) [][]token {
	var runs [][]token
	for queue := [][]token{words}; len(queue) > 0; queue = queue[1:] {
		w := queue[0]
		if len(w) == 0 {
			continue
		}
		if len(runs) > maxWrappers {
			sc.refuse(fmt.Sprintf("more than %d wrappers in one command", maxWrappers))
			break
		}
		runs = append(runs, w)
		sc.judge(w)
		runs = append(runs, sc.shellString(w)...)
		inner, err := unwrap(w)
		if err != nil {
			sc.refuse(err.Error())
		}
		queue = append(append(queue, findExecs(w)...), inner)
	}
	return runs
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
	switch name {
	case "find", "/usr/bin/find", "/bin/find":
		for _, a := range args {
			if !a.static {
				return "find with " + a.raw + ", which may expand to -exec and a command"
			}
		}
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
	case "read", "mapfile", "readarray":
		return name + ", which evaluates array subscripts in the names it sets"
	case "let":
		return "let, which evaluates arithmetic"
	case "fc", "bind", "complete", "compgen":
		return name + ", which can run commands it is given"
	case "hash":
		for _, a := range args {
			if strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "p") {
				return "hash -p, which makes a name run another program"
			}
		}
	case "test", "[":
		for _, a := range args {
			if a.val == "-v" || a.val == "-R" {
				return name + " " + a.val + ", which evaluates array subscripts"
			}
			if !a.static {
				return name + " with " + a.raw + ", which bash may read as -v and then evaluate"
			}
		}
	case "printf":
		// Its only option is -v; what follows -- or the first other word
		// is the format and its arguments.
		switch {
		case len(args) == 0:
		case !args[0].static:
			return "printf with " + args[0].raw + " before its format, which bash may read as -v"
		case strings.HasPrefix(args[0].val, "-v"):
			return "printf -v, which evaluates array subscripts"
		}
	case "unset", "declare", "typeset", "local", "export", "readonly":
		// Reached through a wrapper (command declare ...); plain ones are
		// judged by decl.
		for _, a := range args {
			if !a.static || strings.ContainsAny(a.val, "[") {
				return name + " with " + a.raw + ", which bash may evaluate as an array subscript"
			}
		}
	}
	return ""
}

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
	"xargs": {flags: "0eilprtxo", args: "adEILnPs",
		long:     "null exit interactive no-run-if-empty verbose open-tty show-limits",
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
	i += w.operands
	if i >= len(words) {
		if name == "xargs" {
			return []token{{kind: tokWord, raw: "echo", val: "echo", pat: "echo", static: true}}, err
		}
		return nil, err
	}
	inner := append([]token(nil), words[i:]...)
	inner[0].opaque = !inner[0].static
	return inner, err
}

// skipOptions returns where the options of the wrapper name end in words,
// and an error naming the first option it does not know; -1 when an
// option makes it run a string as a command.
func (w wrapper) skipOptions(name string, words []token) (int, error) {
	var err error
	unknown := func(opt string) {
		if err == nil {
			err = fmt.Errorf("%s with option %s, which the rules do not know", name, opt)
		}
	}
	i := 1
	for ; i < len(words); i++ {
		a := words[i]
		switch {
		case !a.static:
			unknown(a.raw)
		case a.val == "--":
			return i + 1, err
		case a.val == "-" && name == "env": // env - is env -i
		case strings.HasPrefix(a.val, "--"):
			opt, _, eq := strings.Cut(a.val[2:], "=")
			switch {
			case hasWord(w.refused, opt):
				return -1, fmt.Errorf("%s --%s, which runs a string as a command", name, opt)
			case hasWord(w.longArgs, opt) && !eq:
				i++
			case !hasWord(w.longArgs, opt) && !hasWord(w.long, opt):
				unknown(a.val)
			}
		case len(a.val) > 1 && a.val[0] == '-':
			if w.numeric && isDigits(a.val[1:]) {
				continue
			}
			for j := 1; j < len(a.val); j++ {
				c := a.val[j : j+1]
				if hasWord(w.refused, c) {
					return -1, fmt.Errorf("%s -%s, which runs a string as a command", name, c)
				}
				if strings.Contains(w.args, c) {
					if j == len(a.val)-1 {
						i++ // the argument is the next word
					}
					break
				}
				if !strings.Contains(w.flags, c) {
					unknown(a.val)
					break
				}
			}
		case w.assigns && !strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "="):
			// env and sudo take any NAME=value, names bash would not.
			if v, _, _ := strings.Cut(a.val, "="); strings.HasPrefix(v, "BASH_FUNC_") || evaluatedVars[v] {
				return -1, fmt.Errorf("%s %s, whose value a shell runs", name, a.raw)
			}
		default:
			return i, err
		}
	}
	return i, err
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
				x := append([]token(nil), words[i+1:j]...)
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
