package rules_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/rules"
)

// The rules that bash itself checks: builtins, one program, and bash -c.
var (
	tracedRules   = rules.Rules{Allow: []string{"echo *", "printf *", "true", "cd *", "pwd", "ls *", "bash -c *"}}
	tracedAllowed = []string{"echo", "printf", "true", "cd", "pwd", "ls", "bash"}
)

// execve matches a line of strace -e trace=execve: the program's path.
var execve = regexp.MustCompile(`execve\("([^"]*)"`)

// runTraced runs command through bash in a directory holding d and keep
// and returns every program it ran or tried to run: the simple commands
// of bash's trace (set -x, which shows each as it runs, in subshells and
// substitutions too), and, with strace, every program executed in any
// process; and what changed in the directory.
func runTraced(t testing.TB, command string) (ran, changed []string) {
	t.Helper()
	dir, out := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	trace, err := os.Create(filepath.Join(out, "trace"))
	if err != nil {
		t.Fatal(err)
	}
	defer trace.Close()
	// A mark the command cannot know begins each traced command; bash
	// takes PS4 from the environment only when not root, so it is set
	// on a line of its own before the command.
	b := make([]byte, 8)
	rand.Read(b)
	mark := "+" + hex.EncodeToString(b) + " "
	prelude := "PS4='" + mark + "' BASH_XTRACEFD=3\nset -x\n"
	argv := []string{"bash", "-c", prelude + command}
	straced := filepath.Join(out, "strace")
	if _, err := exec.LookPath("strace"); err == nil {
		argv = append([]string{"strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", straced}, argv...)
	} else if os.Getenv("AGENTPTY_REQUIRE") == "all" {
		t.Fatalf("strace is required (AGENTPTY_REQUIRE=all): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{trace}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
	// Whatever the command left running in its group goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	xt, err := os.ReadFile(trace.Name())
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range strings.Split(string(xt), strings.TrimLeft(mark, "+")) {
		if f := strings.Fields(rec); i > 0 && len(f) > 0 && f[0] != "set" {
			ran = append(ran, f[0])
		}
	}
	if st, err := os.ReadFile(straced); err == nil {
		for i, m := range execve.FindAllStringSubmatch(string(st), -1) {
			if i > 0 { // the first is bash itself
				ran = append(ran, path.Base(m[1]))
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"d", "keep"}) {
		changed = names
	}
	return ran, changed
}

// checkRunsOnlyAllowed fails t when command, approved by tracedRules,
// ran something no allow rule names or changed the directory it ran in.
func checkRunsOnlyAllowed(t testing.TB, command string) bool {
	t.Helper()
	if err := approve(tracedRules, command); err != nil {
		return false
	}
	ran, changed := runTraced(t, command)
	for _, p := range ran {
		if !slices.Contains(tracedAllowed, p) {
			t.Errorf("%q approved, but bash ran %q (all it ran: %q)", command, p, ran)
			break
		}
	}
	if changed != nil {
		t.Errorf("%q approved, but it left %q in its directory", command, changed)
	}
	return true
}

// TestApproveRulesRunsOnlyAllowed: for every command the rules approve in
// a corpus of tricky ones, bash runs only programs an Allow rule names.
// The control shows the oracle sees what the rules refuse.
func TestApproveRulesRunsOnlyAllowed(t *testing.T) {
	for _, c := range []string{"echo x; rm -rf d", "bash -c 'echo x; rm -rf d'", "echo `id`"} {
		if ran, _ := runTraced(t, c); !slices.ContainsFunc(ran, func(p string) bool { return p == "rm" || p == "id" }) {
			t.Errorf("control: bash ran %q for %q", ran, c)
		}
	}
	approved := 0
	for _, c := range runsOnlyCorpus {
		if checkRunsOnlyAllowed(t, c) {
			approved++
		}
	}
	if approved < 25 {
		t.Errorf("only %d of %d commands approved: the corpus no longer tests the rules", approved, len(runsOnlyCorpus))
	}
}

var runsOnlyCorpus = []string{
	"echo \"$\\\n(rm -rf d)\"", "echo $\\\n(rm -rf d)", `echo $'\x24(rm -rf d)'`, `printf -v $'a[\x24(rm -rf d)]' x`,
	"echo a\\\n;rm -rf d", "ec\\\nho x; r\\\nm -rf d", "echo x; rm -rf d", "echo x & rm -rf d", "echo x\nrm -rf d",
	"echo x | rm -rf d", "true && rm -rf d", "true || rm -rf d", "echo $(rm -rf d)", "echo `rm -rf d`",
	"echo ${x:-$(rm -rf d)}", "echo ${x[$(rm -rf d)]}", "(rm -rf d)", "{ rm -rf d; }", "if true; then rm -rf d; fi",
	"function f { rm -rf d; }; f", "f() { rm -rf d; }; f", "echo x > >(rm -rf d)", "echo <(rm -rf d)",
	"cd d && rm -rf ../d", "echo # c \\\nrm -rf d", "echo 'a\\\nb'; rm -rf d", "printf '%s' x", "printf -- -v x",
	"echo \"a\\\nb\"", "echo a\\\n b", "cd .. \\\n; true", "echo !!", "echo $'\\'' ; rm -rf d", `echo '\'';rm -rf d #'`,
	"echo x\r\nrm -rf d", "ech\\\no hi", "e\"ch\"o hi", `\echo hi`, "echo {a,b}", "echo ~", "echo *", "echo $HOME",
	"x=1 echo hi", "echo hi 2>&1", "echo hi >/dev/null", "echo hi <<< x", "cd; echo hi", "true; true; echo x",
	"printf '%s\\n' a b", "echo $((1+1))", "echo $[1+1]", "[ -v x ]", "eval echo", "command echo hi", "nice echo hi",
	"echo hi | printf x", "echo hi |& printf x", "! true", "time true", "time -p echo x", "case x in x) echo y;; esac",
	"for i in 1 2; do echo $i; done", "while true; do break; done", "select x in a; do break; done <<< 1",
	"echo a b c", "echo 'a b' \"c d\"", "printf '%s\\n' *", "(echo x)", "{ echo x; }", "if true; then echo y; else echo n; fi",
	"echo x >/dev/null && true", "true || echo no", "echo x | printf y", "cd .. && echo x", "echo '$x' \"\\$y\"",
	"cd /tmp; echo ~", "echo {a,b}c", "! echo x", "time echo x", "echo x 2>&1 | printf '%s' y &", "command -p echo x",
	"nice -n 1 echo x", "echo $'\\x41'", "printf -- '-v %s' x", "cd - >/dev/null",
	"for RANDOM in a*; do true; done", "wait -n -p a*", "bash -c 'X=1 echo x'", "echo $$'\\' # '\\\nrm -rf d",
}

// fuzzPrograms, fuzzSeparators and fuzzPieces are what
// FuzzApproveRulesBash builds commands of, besides taking them whole:
// random text is almost always refused, and commands made of these,
// each starting with an allowed program, are often approved.
var (
	fuzzPrograms   = []string{"echo ", "printf ", "true", "cd ", "pwd", "ls ", "bash -c ", "time ", "! ", "{ ", "( ", "if "}
	fuzzSeparators = []string{"; ", " | ", " && ", " || ", "\n", " & ", " |& ", "; } ", ") ", "; then ", "; fi "}
	fuzzPieces     = []string{" ", " ", "'", `"`, `\`, "$", "$'", `\x24`, `\'`, "(", ")", "{", "}", "[", "]", "*",
		"?", "~", "#", "!", "`", "<", ">", "2>&1", "/dev/null", "-", "--", "rm -rf d", "a", "=", ",", "..", "%s",
		"-v", "-c", "-p", "-o", "--rcfile", "x", "d", "keep", "\t", "\n", "SECONDS", "PS4", ";", "&", "|", "-n"}
)

// fuzzCommand builds a command from recipe: a byte below 48 ends the
// simple command and starts another, any other adds a piece of a word.
func fuzzCommand(recipe []byte) string {
	var b strings.Builder
	b.WriteString(fuzzPrograms[0])
	for _, r := range recipe {
		if r < 48 {
			b.WriteString(fuzzSeparators[int(r)%len(fuzzSeparators)])
			b.WriteString(fuzzPrograms[int(r)%len(fuzzPrograms)])
			continue
		}
		b.WriteString(fuzzPieces[int(r)%len(fuzzPieces)])
	}
	return b.String()
}

// FuzzApproveRulesBash: bash is the oracle. A command the rules approve
// runs, under bash's trace and strace, only programs an Allow rule names,
// and changes nothing in its directory (no rule allows a redirection to
// a file). Each input is a command, and a recipe for another
// (fuzzCommand).
func FuzzApproveRulesBash(f *testing.F) {
	for i, c := range runsOnlyCorpus {
		f.Add(c, []byte{byte(i), 0, byte(i * 7), 1, byte(i * 13)})
	}
	f.Fuzz(func(t *testing.T, command string, recipe []byte) {
		checkRunsOnlyAllowed(t, command)
		checkRunsOnlyAllowed(t, fuzzCommand(recipe))
	})
}
