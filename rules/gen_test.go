package rules

import (
	"bufio"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// How the property test finds commands: every string the approval tests
// hold (their attacks and controls) and the fuzz corpora, taken whole and
// mutated, and commands built from a grammar of bash's builtins, options,
// expansions and redirections.

// propSeedFiles are the tests whose strings seed the generator.
var propSeedFiles = []string{"bypass_test.go", "rules_test.go", "shell_test.go",
	"fuzz_test.go", "write_test.go", "state_test.go"}

// propSeeds returns every string literal of propSeedFiles and every
// string of the approval fuzz corpora that bash could read as a command.
func propSeeds(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && len(s) < 2000 && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	fset := gotoken.NewFileSet()
	for _, name := range propSeedFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("seeds: %v", err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					add(s)
				}
			}
			return true
		})
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzApproveRules*/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if inner, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(inner, ")")); err == nil {
					add(s)
				}
			}
		}
	}
	if len(out) < 300 {
		t.Fatalf("only %d seeds from the approval tests: the generator would test little", len(out))
	}
	return out
}

// propCase is one input of the property: a command to start, or lines
// typed one after another into an interactive bash (ApproveWrites).
type propCase struct {
	typed []string // typed lines; nil for a start
	start string
}

func (c propCase) String() string {
	if c.typed == nil {
		return "start " + strconv.Quote(c.start)
	}
	q := make([]string, len(c.typed))
	for i, l := range c.typed {
		q[i] = strconv.Quote(l)
	}
	return "typed " + strings.Join(q, " ")
}

// propCorpusFile keeps what the property found: replayed first, each run.
const propCorpusFile = "testdata/property/corpus.txt"

// readPropCorpus reads propCorpusFile: a case a line, as propCase.String
// writes it; # starts a comment.
func readPropCorpus(t *testing.T) []propCase {
	t.Helper()
	f, err := os.Open(propCorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []propCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		var words []string
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("%s:%d: %v", propCorpusFile, n, err)
			}
			s, _ := strconv.Unquote(q)
			words, rest = append(words, s), rest[len(q):]
		}
		switch {
		case kind == "start" && len(words) == 1:
			out = append(out, propCase{start: words[0]})
		case kind == "typed" && len(words) > 0:
			out = append(out, propCase{typed: words})
		default:
			t.Fatalf("%s:%d: want start \"cmd\" or typed \"line\"...: %q", propCorpusFile, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The grammar: programs (allowed ones, builtins that are not, and
// programs no rule names), their options, words that bash expands, and
// redirections, assignments and separators.
var (
	genPrograms = []string{"echo", "ls", "cat", "printf", "stty", "exec", "history", "command", "builtin",
		"true", "false", "pwd", "cd", "test", "[", "set", "shopt", "wc", "head", "grep", "nice", "env",
		"timeout 5", "xargs", "time", "bash -c", "jobs", "type", "umask", "command -p", "exec -a x", "env -i",
		"source", "eval", "read", "declare", "hash", "alias", "enable", "trap", "fc", "bind", "ulimit", "rm",
		"sh -c", "id", "tset", "reset", "mapfile", "kill", "disown", "suspend", "unset", "export", "getopts", "wait"}
	genAllowed = []string{"echo", "ls", "cat", "printf", "stty", "exec", "history", "command", "builtin", "true", "cd",
		"test", "[", "set", "shopt", "head", "nice", "env", "xargs", "bash -c", "jobs", "type", "umask", "command -p", "exec -a x"}
	genOptions = map[string][]string{
		"stty":    {"kill @", "werase @", "erase @", "lnext @", "eof @", "intr @", "quit @", "susp @", "rprnt @", "eol @", "-echo", "raw", "sane", "-icanon", "-a", "-g", "cols 10", "-isig", "-F /dev/tty"},
		"history": {"-c", "-d 1", "-s 'rm -rf d'", "-w ../f", "-a ../f", "-r x.sh", "-n x.sh", "-p x", "5", "-w", "-s x"},
		"exec":    {"< x.sh", "0< x.sh", "<x.sh", "3< x.sh", "<> x.sh", "< /dev/tty", "-c ls", "-l ls", "-a rm ls", "2>&1", "<&0", "0<&-"},
		"set":     {"-o vi", "-o emacs", "-H", "-k", "-e", "-x", "-f", "+o history", "-o posix", "-B", "-T", "-o keyword", "-v", "-- -x", "-o history"},
		"shopt":   {"-s expand_aliases", "-s extglob", "-s dotglob", "-u interactive_comments", "-s nullglob", "-s lastpipe", "-s execfail", "-s xpg_echo", "-s histappend", "-s sourcepath", "-o vi"},
		"printf":  {"-v x", "'%s'", "'%q'", "'%b'", `'\x24(rm -rf d)'`, "--", `'\e[?2004$p'`, "-v", "%s"},
		"echo":    {"-e", "-n", "-E", `-e '\x24(rm -rf d)'`},
		"cd":      {"-P", "-L", "~", "..", "/", "-", "d"},
		"type":    {"-a", "-p", "-P", "-t", "-f"},
		"test":    {"-v x", "-e keep", "-R x", "-o pipefail", "-n", "-z"},
		"xargs":   {"-I{}", "-a x.sh", "-0", "-n 1", "-i", "--arg-file=x.sh", "-E x"},
		"env":     {"-S 'rm -rf d'", "-u X", "-C d", "X=1", "-", "--"},
		"jobs":    {"-x", "-l", "-p", "%1"},
		"ls":      {"-la", "-d", "--color=always", "-R", "-I x"},
		"cat":     {"-v", "x.sh", "-", "/dev/stdin", "keep"},
		"umask":   {"-S", "0", "777", "-p"},
		"ulimit":  {"-c 0", "-a", "-n 3"},
	}
	genWords = []string{"x", "d", "keep", "x.sh", "*", "?", "[kx]*", "{a,b}", "~", "~root", "$HOME", "${HOME}", `"$@"`,
		"$0", "$1", "$*", "$-", "$$", "$!", "$?", "$_", `\$\(rm\ -rf\ d\)`, "'$(rm -rf d)'", `$'\x24(rm -rf d)'`, `$'\e'`,
		`"a b"`, "@", "--", "-", "%1", "%%", "/dev/tty", "/dev/stdin", "/proc/self/fd/0", "-exec", "rm -rf d", "'rm -rf d'",
		"a[$(rm -rf d)]", `a\[x\]`, "-v", "-p", "-c", "-o", "-s", "-w", "-a", "-I", "-e", "#", "x#y", "'#'", "\\", "!", "^x",
		"@rm -rf d", "$'\\n'rm", "\\rm", "r\\m", "'r'm", "${x}", "$PATH", "$RANDOM", "$'\\x72m'", "\"$(id)\"", "=", "x=1"}
	genRedirs = []string{"< x.sh", "0< x.sh", "<x.sh", "<> x.sh", "< /dev/tty", "<&0", "0<&-", ">&2", "2>&1", ">/dev/null",
		"<<< x", "<<< 'rm -rf d'", "> f", ">> f", "&>/dev/null", "3< x.sh", "< /dev/stdin", "< d", "1>&-", "<<EOF\nrm -rf d\nEOF"}
	genAssigns = []string{"X=1", "HISTFILE=../f", "PS4='$(id)'", "BASH_ENV=x.sh", "ENV=x.sh", "SHELLOPTS=xtrace",
		"PATH=.", "IFS=x", "PROMPT_COMMAND=id", "BASH_XTRACEFD=1", "LD_PRELOAD=x", "TERM=dumb", "GLOBIGNORE=*", "CDPATH=d"}
	genSeps     = []string{"; ", " && ", " || ", " | ", " |& ", " & ", "\n", ";", "&&"}
	genWrappers = []string{"command ", "builtin ", "exec ", "nice ", "env ", "timeout 5 ", "command -p ", "xargs ", "time ",
		"! ", "time -p ", "nice -n 1 ", "env -i ", "exec -a x ", "command -v ", "builtin command ",
		"xargs -a x.sh ", "echo rm -rf d | xargs ", "xargs -0 ", "timeout -s KILL 5 ", "env -- ", "nice -- "}
)

// propGen makes the cases, from seeds and the grammar, reproducibly from
// its random source.
type propGen struct {
	rng   *rand.Rand
	seeds []string
}

func (g *propGen) pick(list []string) string { return list[g.rng.Intn(len(list))] }

// command returns a new command: a mutated seed or one of the grammar.
func (g *propGen) command() string {
	switch n := g.rng.Intn(10); {
	case n < 1:
		return g.pick(g.seeds)
	case n < 4:
		return g.mutate(g.pick(g.seeds))
	case n < 5:
		return g.join(g.mutate(g.pick(g.seeds)), g.grammar())
	default:
		return g.grammar()
	}
}

// grammar builds one to three simple commands, joined, sometimes grouped.
func (g *propGen) grammar() string {
	var b strings.Builder
	for i, n := 0, 1+g.rng.Intn(3); i < n; i++ {
		if i > 0 {
			b.WriteString(g.pick(genSeps))
		}
		b.WriteString(g.simple())
	}
	switch g.rng.Intn(8) {
	case 0:
		return "{ " + b.String() + "; }"
	case 1:
		return "(" + b.String() + ")"
	case 2:
		return "if true; then " + b.String() + "; fi"
	case 3:
		return "bash -c " + cmdline.ShellQuote(b.String())
	}
	return b.String()
}

// simple builds one simple command.
func (g *propGen) simple() string {
	var words []string
	if g.rng.Intn(8) == 0 {
		words = append(words, g.pick(genAssigns))
	}
	for g.rng.Intn(4) == 0 {
		words = append(words, strings.TrimSpace(g.pick(genWrappers)))
	}
	prog := g.pick(genPrograms)
	if g.rng.Intn(3) > 0 {
		prog = g.pick(genAllowed) // most commands the rules approve
	}
	words = append(words, prog)
	opts := genOptions[strings.Fields(prog)[0]]
	for i, n := 0, g.rng.Intn(4); i < n; i++ {
		if len(opts) > 0 && g.rng.Intn(2) == 0 {
			words = append(words, g.pick(opts))
		} else {
			words = append(words, g.pick(genWords))
		}
	}
	if g.rng.Intn(3) == 0 {
		words = append(words, g.pick(genRedirs))
	}
	return strings.Join(words, " ")
}

// join joins two commands with a separator.
func (g *propGen) join(a, b string) string { return a + g.pick(genSeps) + b }

// mutate changes s one to three times: a word replaced, a piece
// inserted, a wrapper or an assignment put before it, a redirection
// after it, a word requoted.
func (g *propGen) mutate(s string) string {
	for i, n := 0, 1+g.rng.Intn(3); i < n; i++ {
		words := strings.Fields(s)
		switch g.rng.Intn(7) {
		case 0:
			if len(words) > 0 {
				words[g.rng.Intn(len(words))] = g.pick(genWords)
				s = strings.Join(words, " ")
			}
		case 1:
			at := g.rng.Intn(len(s) + 1)
			s = s[:at] + g.pick(append(genWords, genSeps...)) + s[at:]
		case 2:
			s = g.pick(genWrappers) + s
		case 3:
			s += " " + g.pick(genRedirs)
		case 4:
			s = g.pick(genAssigns) + " " + s
		case 5:
			if len(words) > 0 {
				j := g.rng.Intn(len(words))
				words[j] = g.requote(words[j])
				s = strings.Join(words, " ")
			}
		default:
			s = g.join(s, g.simple())
		}
	}
	return s
}

// requote spells w another way bash reads the same: quoted, $'...' with
// hex escapes, or a backslash before each character.
func (g *propGen) requote(w string) string {
	switch g.rng.Intn(4) {
	case 0:
		return cmdline.ShellQuote(w)
	case 1:
		return `"` + w + `"`
	case 2:
		var b strings.Builder
		b.WriteString("$'")
		for i := 0; i < len(w); i++ {
			b.WriteString(`\x` + strconv.FormatUint(uint64(w[i])|0x100, 16)[1:])
		}
		return b.String() + "'"
	}
	var b strings.Builder
	for _, r := range w {
		b.WriteString(`\` + string(r))
	}
	return b.String()
}

// typedCase makes lines to type one after another into an interactive
// bash: commands of the pool (approved as starts), of the grammar and of
// the seeds, each one line.
func (g *propGen) typedCase(pool []string) propCase {
	var lines []string
	for i, n := 0, 1+g.rng.Intn(3); i < n; i++ {
		var l string
		switch {
		case len(pool) > 0 && g.rng.Intn(2) == 0:
			l = g.pick(pool)
		case g.rng.Intn(2) == 0:
			l = g.simple()
		default:
			l = g.mutate(g.pick(g.seeds))
		}
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "\n") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		lines = []string{"true"}
	}
	return propCase{typed: lines}
}
