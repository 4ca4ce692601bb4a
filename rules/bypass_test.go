package rules_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/cmdline"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/rules"
)

// runInTemp runs command through bash in a new directory holding the
// directory d and the file keep, and reports whether d is gone and what
// the command printed.
func runInTemp(t *testing.T, command string) (removed bool, out string) {
	t.Helper()
	return attack{command: command}.run(t)
}

// attack is a command run for real beside the canary d, as bash -c runs
// it unless a field says otherwise.
type attack struct {
	command     string
	files       []string // planted beside d and keep first
	env         []string // added to bash's environment
	interactive bool     // typed into an interactive bash on its standard input
	terminal    bool     // run under a terminal (script), in a git repository
}

// run runs the attack and reports whether d is gone and what it printed.
func (a attack) run(t *testing.T) (removed bool, out string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{"keep"}, a.files...) {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", a.command)
	switch {
	case a.interactive:
		cmd = exec.Command("bash", "--norc", "--noprofile", "-i")
		cmd.Stdin = strings.NewReader(a.command)
	case a.terminal:
		for _, p := range []string{"git", "script"} {
			if _, err := exec.LookPath(p); err != nil {
				testkit.Lacks(t, "the control needs %s: %v", p, err)
			}
		}
		git := exec.Command("sh", "-c", "git init -q && git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x")
		git.Dir = dir
		if b, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git: %v: %s", err, b)
		}
		cmd = exec.Command("script", "-qec", "bash -c "+cmdline.ShellQuote(a.command), "/dev/null")
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), a.env...)
	b, _ := cmd.CombinedOutput()
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Fatalf("%q removed the control file: %v", a.command, err)
	}
	_, err := os.Stat(filepath.Join(dir, "d"))
	return errors.Is(err, os.ErrNotExist), string(b)
}

// TestApproveRulesBypasses: each command here was approved by the rules
// and did what a rule refuses. The control runs it through bash for real
// and shows the harm (d removed, sudo run); the rules must now deny it,
// naming the rule or construct that decided.
func TestApproveRulesBypasses(t *testing.T) {
	testkit.Parallel(t)
	echo := rules.Rules{Allow: []string{"echo *"}, Deny: []string{"rm *"}}
	all := rules.Rules{Allow: []string{"*"}, Deny: []string{"rm *"}}
	sudo := rules.Rules{Allow: []string{"*"}, Deny: []string{"sudo *"}}
	xargsWrap := rules.Rules{Allow: []string{"echo *", "xargs *", "nice *", "env *"}}
	for _, tc := range []struct {
		name    string
		policy  rules.Rules
		command string
		harm    string // "" when the harm is d removed; else what the output shows
		want    string
	}{
		{"LineContinuation", echo, "echo \"$\\\n(rm -rf d)\"", "", "uses a line continuation"},
		{"LineContinuationUnquoted", echo, "echo $\\\n(rm -rf d)", "", "uses a line continuation"},
		{"TestV", rules.Rules{Allow: []string{"test *"}}, `test -v $'a[\x24(rm -rf d)]'`, "",
			`uses a command substitution $(...) in the value "a[$(rm -rf d)]"`},
		{"BracketV", rules.Rules{Allow: []string{"[ *"}}, `[ -v $'a[\x24(rm -rf d)]' ]`, "",
			`uses a command substitution $(...) in the value "a[$(rm -rf d)]"`},
		{"PrintfV", rules.Rules{Allow: []string{"printf *"}}, `printf -v $'a[\x24(rm -rf d)]' x`, "",
			`uses a command substitution $(...) in the value "a[$(rm -rf d)]"`},
		{"TestVEscaped", rules.Rules{Allow: []string{"test *"}}, `test -v a[\$\(rm\ -rf\ d\)]`, "",
			`uses a command substitution $(...) in the value "a[$(rm -rf d)]"`},
		{"NiceSudo", sudo, "nice sudo id", "uid=0", `matches deny rule "sudo *"`},
		{"NiceN", all, "nice -n 5 rm -rf d", "", `matches deny rule "rm *"`},
		{"CommandP", all, "command -p rm -rf d", "", `matches deny rule "rm *"`},
		{"ExecA", all, "exec -a x rm -rf d", "", `matches deny rule "rm *"`},
		{"TimeP", all, "time -p rm -rf d", "", `matches deny rule "rm *"`},
		{"TimeDashDash", all, "time -p -- rm -rf d", "", `matches deny rule "rm *"`},
		{"Function", all, "function f { rm -rf d; }; f", "", `"rm -rf d" matches deny rule "rm *"`},
		{"EnvI", all, "env -i X=1 rm -rf d", "", `matches deny rule "rm *"`},
		{"EnvDash", all, "env - rm -rf d", "", `matches deny rule "rm *"`},
		{"EnvFunction", all, "env 'BASH_FUNC_ls%%=() { rm -rf d; }' bash -c ls", "", "env 'BASH_FUNC_ls%%=() { rm -rf d; }', whose value a shell runs"},
		{"EnvBashEnv", all, "echo 'rm -rf d' > e; env BASH_ENV=e bash -c :", "", "env BASH_ENV=e, whose value a shell runs"},
		{"Flock", all, "flock f rm -rf d", "", `matches deny rule "rm *"`},
		{"Taskset", all, "taskset -c 0 rm -rf d", "", `matches deny rule "rm *"`},
		{"Chrt", all, "chrt -o 0 rm -rf d", "", `matches deny rule "rm *"`},
		{"Runuser", all, "runuser -u root -- rm -rf d", "", `matches deny rule "rm *"`},
		{"SuC", all, "su -c 'rm -rf d'", "", "su -c, which runs a string as a command"},
		{"SudoS", all, "sudo -s rm -rf d", "", "sudo -s, which runs a string as a command"},
		{"FindExecShell", all, "find . -maxdepth 0 -exec sh -c 'rm -rf d' \\;", "", `matches deny rule "rm *"`},
		{"FindExecWrapper", all, "find . -maxdepth 0 -exec nice rm -rf d \\;", "", `matches deny rule "rm *"`},
		{"SudoU", all, "sudo -u root rm -rf d", "", `matches deny rule "rm *"`},
		{"Xargs", all, "echo d | xargs rm -rf", "", `"xargs rm -rf" matches deny rule "rm *"`},
		{"FindExec", all, "find . -name d -exec rm -rf {} +", "", `matches deny rule "rm *"`},
		{"TimeRule", rules.Rules{Allow: []string{"time *"}}, "echo x; rm -rf d", "", `"echo x" matches no allow rule`},
		{"NegatedRule", rules.Rules{Allow: []string{"! *"}}, "echo x; rm -rf d", "", `"echo x" matches no allow rule`},
		{"XargsNice", xargsWrap, "echo rm -rf d | xargs nice", "", "nice run by xargs with no command, which runs what xargs reads"},
		{"XargsEnv", xargsWrap, "echo rm -rf d | xargs env X=1", "", "env X=1 run by xargs with no command"},
		{"XargsEnvI", xargsWrap, "echo rm -rf d | xargs env -i", "", "env -i run by xargs with no command"},
		{"PipeTime", rules.Rules{Allow: []string{"echo *", "true"}}, "echo x | time true", "elapsed", "time after |, which bash runs as the program time"},
		{"XargsExactRule", rules.Rules{Allow: []string{"echo *", "xargs *", "ls"}}, "echo /proc/self/cmdline | xargs ls", "/proc/self/cmdline",
			`runs "ls (what xargs reads)", which matches no allow rule`},
		{"XargsXargs", xargsWrap, "echo nice rm -rf d | xargs xargs", "", "xargs run by xargs with no command"},
		{"Timeout", all, "timeout 5 rm -rf d", "", `matches deny rule "rm *"`},
		{"Stdbuf", all, "stdbuf -o0 rm -rf d", "", `matches deny rule "rm *"`},
		{"AnsiProgram", all, `$'\x72m' -rf d`, "", `matches deny rule "rm *"`},
		{"WrapperNotAllowed", rules.Rules{Allow: []string{"nice *"}}, "nice -n 5 rm -rf d", "",
			`"nice -n 5 rm -rf d" runs "rm -rf d", which matches no allow rule`},
		{"FindExecNotAllowed", rules.Rules{Allow: []string{"find *"}}, "find . -name d -exec rm -rf {} +", "",
			`runs "rm -rf {}", which matches no allow rule`},
		{"Declare", rules.Rules{Allow: []string{"*"}}, `declare $'a[\x24(rm -rf d)]=1'`, "",
			`uses declare with arguments, which assigns the variables they name`},
		{"Read", rules.Rules{Allow: []string{"*"}}, `x='a[$'; y="${x}(rm -rf d)]"; read "$y" <<< 1`, "",
			`uses read, which assigns the variables it names`},
		{"Alias", rules.Rules{Allow: []string{"*"}}, "shopt -s expand_aliases\nalias ls='rm -rf d'\nls", "",
			`uses alias, which makes a word run something else`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.harm == "elapsed" {
				testkit.Need(t, "time") // GNU time, whose report says "elapsed"
			}
			if strings.Contains(tc.command, "sudo") && exec.Command("sudo", "-n", "true").Run() != nil {
				testkit.Lacks(t, "the control needs sudo without a password")
			}
			removed, out := runInTemp(t, tc.command)
			if tc.harm == "" && !removed {
				t.Fatalf("control: bash ran %q and d is still there (output %q): the attack does nothing", tc.command, out)
			}
			if tc.harm != "" && !strings.Contains(out, tc.harm) {
				t.Fatalf("control: bash ran %q and printed %q, not %q", tc.command, out, tc.harm)
			}
			err := approve(tc.policy, tc.command)
			if err == nil {
				t.Fatalf("%q approved by %+v", tc.command, tc.policy)
			}
			if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v\nwant ErrDenied ...%s", tc.command, err, tc.want)
			}
		})
	}
}

// TestApproveRulesWrappers: a wrapper and the program it runs each need
// an allow rule; ordinary wrapped commands still pass.
func TestApproveRulesWrappers(t *testing.T) {
	testkit.Parallel(t)
	r := rules.Rules{Allow: []string{"nice *", "timeout *", "make *", "go test *", "find *", "grep *", "xargs *", "ls *"}}
	for _, c := range []string{
		"nice -n 5 make test", "nice -5 make", "timeout 60 go test ./...", "timeout -k 5 -s INT 10s make",
		"find . -name '*.go' -exec grep -l TODO {} +", "ls | xargs -n 1 grep x", "make 2>&1",
	} {
		if err := approve(r, c); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	for c, want := range map[string]string{
		"nice rm -rf d":            `runs "rm -rf d", which matches no allow rule`,
		"make -C x; rm -rf d":      `"rm -rf d" matches no allow rule`,
		"nice --frobnicate make":   "nice with option --frobnicate, which the rules do not know",
		"timeout 5 $CMD":           `runs "$CMD", which matches no allow rule`,
		"find . -exec sh -c x \\;": `runs "sh -c x", which matches no allow rule`,
		"xargs":                    `runs "echo (what xargs reads)", which matches no allow rule`,
	} {
		if err := approve(r, c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want ...%s", c, err, want)
		}
	}
}

// TestApproveRulesRefused: every construct on the refused list is denied
// under an allow-everything rule, and the denial names it.
func TestApproveRulesRefused(t *testing.T) {
	testkit.Parallel(t)
	all := rules.Rules{Allow: []string{"*"}}
	for c, want := range map[string]string{
		"echo $(id)":                       "a command substitution $(...)",
		"echo `id`":                        "a command substitution `...`",
		"cat <(ls)":                        "a process substitution <(...)",
		"tee >(cat) < /dev/null":           "a process substitution >(...)",
		"echo $((1+1))":                    "an arithmetic expansion $((...))",
		"echo $[1+1]":                      "an arithmetic expansion $[...]",
		"echo ${x:-y}":                     "a parameter expansion ${x:-y}",
		"echo ${#x}":                       "a parameter expansion ${#x}",
		"echo ${!x}":                       "a parameter expansion ${!x}",
		"echo ${a[1]}":                     "a parameter expansion ${a[1]}",
		"eval ls":                          "eval, which runs its arguments",
		"source x.sh":                      "source, which runs a file",
		". x.sh":                           "., which runs a file",
		"command eval ls":                  "eval, which runs its arguments",
		"test -v x":                        "test -v, which evaluates array subscripts",
		"[ -v x ]":                         "[ -v, which evaluates array subscripts",
		"test -f $f":                       "test with $f, which bash may read as -v",
		"[[ -f x ]]":                       "a [[ ... ]] test",
		"printf -v x %s y":                 "printf -v, which evaluates array subscripts",
		"printf $f x":                      "printf with $f before its format",
		"read x":                           "read, which assigns the variables it names",
		"mapfile x < f":                    "mapfile, which assigns the variables it names",
		"let x=1":                          "let, which evaluates arithmetic",
		"((x=1))":                          "an arithmetic command ((...))",
		"for ((i=0;i<2;i++)); do ls; done": "an arithmetic for loop",
		"declare 'a[1]=2'":                 "declare with arguments, which assigns the variables they name",
		"declare a[1]=2":                   "declare with arguments",
		"local -n r=x":                     "local with arguments",
		"export $v":                        "export with arguments",
		"declare -i x=y":                   "declare with arguments",
		"export X=1":                       "export with arguments",
		"command declare x":                "declare with arguments",
		"for x in a; do ls; done":          "a for loop, which assigns the variable it names",
		"select x in a; do ls; done":       "a select loop",
		"while ls; do ls; done":            "a while loop",
		"until ls; do ls; done":            "an until loop",
		"case x in x) ls;; esac":           "a case statement",
		"getopts a x":                      "getopts, which assigns the variables it names",
		"wait -p x":                        "wait -p, which assigns the variable it names",
		"wait -fnp x":                      "wait -fnp, which assigns the variable it names",
		"set -k":                           "set -k, which makes words after a command assignments",
		"set -o keyword":                   "set -k, which makes words after a command assignments",
		"wait *":                           "wait with *, which the builtin may take for a name to assign or evaluate",
		"exec {fd}>/dev/null":              "a redirection {fd}>, which assigns a variable",
		"bash -kc 'ls X=1'":                "bash -k, which makes words after a command assignments",
		"bash -o keyword -c 'ls X=1'":      "bash -o keyword, which the rules do not know",
		"bash -c --rcfile x 'ls'":          "bash with option --rcfile, which the rules do not know",
		"bash -x --rcfile x -c ls":         "bash with option --rcfile, which the rules do not know",
		"bash --frob -c ls":                "bash with option --frob, which the rules do not know",
		"bash -c 'X=1 ls'":                 "",
		"zsh -c ls":                        "zsh -c, whose command line the rules do not read",
		"sh -c 'time ls'":                  "time, which sh runs as a program",
		"dash -c 'ls &>/dev/null'":         "&>, which sh reads as & and a redirection",
		"sh -c 'ls |& ls'":                 "|&, which sh does not read as bash does",
		`sh -c "\$'ls'"`:                   "a $'...' string, which sh does not decode",
		"sudo -u * ls":                     "sudo with *, which the rules cannot know",
		"timeout $T ls":                    "timeout with option $T, which the rules do not know",
		"timeout -s $S 5 ls":               "timeout with $S, which the rules cannot know",
		"chroot -- $D ls":                  "chroot with $D, which the rules cannot know",
		"a[1]=2":                           "an array subscript in an assignment",
		"a=([1]=2)":                        "an array subscript in an assignment",
		"unset 'a[1]'":                     "unset with 'a[1]'",
		"f() { ls; }":                      "a function definition f",
		"function f { ls; }":               "a function definition f",
		"alias ll=ls":                      "alias, which makes a word run something else",
		"trap ls EXIT":                     "trap, which runs its argument",
		"enable -f x.so y":                 "enable, which can load code",
		"hash -p /bin/rm ls":               "hash -p, which makes a name run another program",
		"PS4=x bash -x y":                  "an assignment to PS4",
		"export BASH_ENV=x":                "export with arguments",
		"cat <<EOF\nx\nEOF":                "a here-document",
		"echo @(a|b)":                      "an extended glob @(a|b)",
		`echo $"hi"`:                       `a $"..." string`,
		`echo $'a\x00b'`:                   "a $'...' string holding a NUL byte",
		"coproc ls":                        "a coprocess",
		"echo 'a\\\nb'":                    "a line continuation",
		"ls # \\\nrm -rf d":                "a line continuation",
		"ls\rrm -rf d":                     "the control character '\\r'",
		"ls \x1b[201~":                     "the control character '\\x1b'",
		"env -S 'rm -rf d'":                "env -S, which runs a string as a command",
		"find $D -name x":                  "find with $D, which may expand to -exec",
		"find * -quit":                     "find with *, which may expand to -exec",
		"echo '$(id)'":                     "a command substitution $(...)",
	} {
		if want == "" {
			continue
		}
		err := approve(all, c)
		if err == nil || !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), "uses "+want) {
			t.Errorf("%q: %v; want ...uses %s", c, err, want)
		}
	}
}

// TestApproveRulesLongCommand: a command exec could not run is refused
// before it is read, by Rules (ErrDenied) and by Start (ErrInvalid); the
// longest one exec takes still runs.
func TestApproveRulesLongCommand(t *testing.T) {
	testkit.Parallel(t)
	const limit = 128<<10 - 1 // MAX_ARG_STRLEN less its NUL
	over := ": " + strings.Repeat("x", limit-1)
	err := approve(rules.Rules{Allow: []string{"*"}}, over)
	if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), "is 131072 bytes, more than the 131071 a command may have") {
		t.Errorf("Rules on %d bytes: %v", len(over), err)
	}
	if err := approve(rules.Rules{Allow: []string{"*"}}, over[:len(over)-1]); err != nil {
		t.Errorf("Rules on %d bytes: %v", len(over)-1, err)
	}
	// An approver that would allow it: the length is refused before it is asked.
	m := agentpty.NewManager(agentpty.Options{Approver: rules.Rules{Allow: []string{"*"}}})
	defer m.Close()
	if _, err := m.Start(context.Background(), agentpty.StartRequest{Command: over}); !errors.Is(err, agentpty.ErrInvalid) ||
		!strings.Contains(err.Error(), "pty-start: command is 131072 bytes; exec takes at most 131071") {
		t.Errorf("Start of %d bytes: %v; want ErrInvalid", len(over), err)
	}
	// Control: exec itself refuses one byte more.
	if err := exec.Command("bash", "-c", over).Run(); err == nil || !strings.Contains(err.Error(), "argument list too long") {
		t.Errorf("exec of %d bytes: %v; want E2BIG", len(over), err)
	}
	if err := exec.Command("bash", "-c", over[:len(over)-1]).Run(); err != nil {
		t.Errorf("exec of %d bytes: %v", len(over)-1, err)
	}
}

// TestApproveRulesShellC: the command line of sh -c is judged like the
// command itself, for deny and allow rules and the refused constructs.
func TestApproveRulesShellC(t *testing.T) {
	testkit.Parallel(t)
	r := rules.Rules{Allow: []string{"bash *", "sh *", "make *"}, Deny: []string{"rm *"}}
	for _, c := range []string{"bash -c 'make test'", "sh -ec 'make a && make b'", "bash -o pipefail -c make"} {
		if err := approve(r, c); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	for c, want := range map[string]string{
		"bash -c 'rm -rf d'":         `matches deny rule "rm *"`,
		"sh -c \"sh -c 'rm -rf d'\"": `matches deny rule "rm *"`,
		"bash -lc 'ls'":              `runs "ls", which matches no allow rule`,
		"bash -c \"$X\"":             `bash with "$X", whose options the rules cannot know`,
		"bash -c 'eval x'":           `eval, which runs its arguments as commands in bash -c "eval x"`,
		"bash -c 'sh -c \"bash -c \\\"sh -c \\\\\\\"sh -c make\\\\\\\"\\\"\"'": "sh -c nested more than 4 deep",
	} {
		removed, _ := runInTemp(t, c)
		if strings.Contains(c, "rm -rf d") && !removed {
			t.Errorf("control: %q left d", c)
		}
		if err := approve(r, c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want ...%s", c, err, want)
		}
	}
}

// TestApproveRulesSplitting: an unquoted expansion may become several
// words (X='/etc/shadow x' makes cat $X.txt read /etc/shadow), and only
// the shell knows what it holds, so only a rule that spells it the same
// matches it: a lone * does not, quoted or not.
func TestApproveRulesSplitting(t *testing.T) {
	testkit.Parallel(t)
	r := rules.Rules{Allow: []string{"cat *.txt", "echo *", "ls $D"}}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Control: bash splits the word and cat reads the file.
	cmd := exec.Command("bash", "-c", "X='secret x'; cat $X.txt")
	cmd.Dir = dir
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "s3cret") {
		t.Fatalf("control: %q", out)
	}
	for c, ok := range map[string]bool{"cat $X.txt": false, `cat "$X".txt`: false, "cat notes.txt": true, "echo $X": false, "ls $D": true, "ls \"$D\"": false} {
		if err := approve(r, c); (err == nil) != ok {
			t.Errorf("%q: %v; want approved %v", c, err, ok)
		}
	}
}

// ansiQuote quotes s as one $'...' word for bash, without a newline.
func ansiQuote(s string) string {
	return "$'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(s) + "'"
}

// TestApproveRulesModelledOnly: each attack here was approved and ran
// rm: a comment that hid a line continuation, names assigned by for and
// wait -p whose values bash evaluates (the variables SECONDS, RANDOM,
// SRANDOM, OPTIND and HISTCMD evaluate theirs as arithmetic, array
// subscripts and command substitution included; PROMPT_COMMAND runs at
// the next prompt), a bash -c string's assignment, and a bash option
// whose argument was read as the script. The control runs each through
// bash for real and shows d removed; the rules must deny it.
func TestApproveRulesModelledOnly(t *testing.T) {
	testkit.Parallel(t)
	echo := rules.Rules{Allow: []string{"echo *"}}
	echoDeny := rules.Rules{Allow: []string{"*"}, Deny: []string{"rm *"}}
	ls := rules.Rules{Allow: []string{"ls *"}}
	wait := rules.Rules{Allow: []string{"sleep *", "wait *"}}
	git := rules.Rules{Allow: []string{"bash -c *", "echo *", "git log *", "git diff *"}}
	comment := "echo $$'\\' # '\\\nrm -rf d\n"
	escaped := "\\\\$'X\\'Y' # ' \\\nrm -rf d\n"
	forVar := func(name string) string {
		return "for x in $'\\x24'; do for " + name + " in \"a[$x(rm -rf d)]\"; do ls; done; done"
	}
	planted := []string{"a[$(rm -rf d)]"}
	runDeniedAttacks(t, []deniedAttack{
		{"Comment", echo, attack{command: comment}, false, "a line continuation"},
		{"CommentEscaped", echo, attack{command: "echo " + escaped}, false, "a line continuation"},
		{"CommentDeny", echoDeny, attack{command: comment}, false, "a line continuation"},
		{"CommentWrite", echo, attack{command: comment, interactive: true}, true, "a line continuation"},
		{"CommentEscapedWrite", echo, attack{command: "echo " + escaped, interactive: true}, true, "a line continuation"},
		{"CommentShellC", rules.Rules{Allow: []string{"bash -c *", "echo *"}}, attack{command: "bash -c " + ansiQuote(comment)}, false, "a line continuation"},
		{"ForSeconds", ls, attack{command: forVar("SECONDS")}, false, "uses a for loop"},
		{"ForRandom", ls, attack{command: forVar("RANDOM")}, false, "uses a for loop"},
		{"ForSrandom", ls, attack{command: forVar("SRANDOM")}, false, "uses a for loop"},
		{"ForOptind", ls, attack{command: forVar("OPTIND")}, false, "uses a for loop"},
		{"ForHistcmd", ls, attack{command: forVar("HISTCMD")}, false, "uses a for loop"},
		{"ForSecondsWrite", ls, attack{command: forVar("SECONDS") + "\n", interactive: true}, true, "uses a for loop"},
		{"ForRandomGlob", ls, attack{command: "for RANDOM in a*; do ls; done", files: planted}, false, "uses a for loop"},
		{"ForPromptCommand", ls, attack{command: "for PROMPT_COMMAND in 'rm -rf d'; do ls; done\n", interactive: true}, true, "uses a for loop"},
		{"ForSecondsShellC", rules.Rules{Allow: []string{"bash -c *", "ls *"}}, attack{command: "bash -c " + cmdline.ShellQuote(forVar("SECONDS"))}, false, "uses a for loop"},
		{"WaitP", wait, attack{command: `sleep 0 & wait -n -p "a[$x(rm -rf d)]"`, env: []string{"x=$"}}, false, "uses wait -p"},
		{"WaitPGlob", wait, attack{command: "sleep 0 & wait -n -p a*", files: planted}, false, "uses wait -p"},
		{"WaitNP", wait, attack{command: "sleep 0 & wait -np a*", files: planted}, false, "uses wait -np"},
		{"ShellCAssignment", git, attack{command: `bash -c 'GIT_EXTERNAL_DIFF="rm -rf d;:" git diff --no-index --ext-diff /etc/hostname keep'`}, false,
			`runs "GIT_EXTERNAL_DIFF=\"rm -rf d;:\" git diff --no-index --ext-diff /etc/hostname keep", which matches no allow rule`},
		{"ShellCGitPager", git, attack{command: `bash -c 'GIT_PAGER="rm -rf d" git log'`, terminal: true}, false,
			`runs "GIT_PAGER=\"rm -rf d\" git log", which matches no allow rule`},
		{"RcfileDeny", echoDeny, attack{command: "bash --rcfile /dev/null -c 'rm -rf d'"}, false, `matches deny rule "rm *"`},
		{"InitFileDeny", echoDeny, attack{command: "bash --init-file /dev/null -c 'rm -rf d'"}, false, `matches deny rule "rm *"`},
		{"EnvShellopts", rules.Rules{Allow: []string{"env *", "bash -c *", "echo *", "git diff *"}},
			attack{command: `env SHELLOPTS=keyword bash -c 'git diff --no-index --ext-diff /etc/hostname keep GIT_EXTERNAL_DIFF="rm -rf d;:"'`}, false,
			"env SHELLOPTS=keyword, whose value a shell runs"},
		{"XargsReplace", echoDeny, attack{command: "echo rm -rf d | xargs -I{} bash -c {}"}, false,
			"uses bash with {}, whose options the rules cannot know"},
		{"XargsReplaceLong", echoDeny, attack{command: "echo rm -rf d | xargs --replace=X sh -c X"}, false,
			"uses sh with X, whose options the rules cannot know"},
		{"ShortOptionDeny", echoDeny, attack{command: "bash -O extglob -c 'rm -rf d'"}, false, `matches deny rule "rm *"`},
	})
}

// deniedAttack is an attack with the rules that must deny it: as a
// start's command, or with write as a pty-write's input.
type deniedAttack struct {
	name   string
	policy rules.Rules
	attack
	write bool // judged as a pty-write's input, typed into an interactive shell
	want  string
}

// runDeniedAttacks runs checkDeniedAttack on each case in a subtest.
func runDeniedAttacks(t *testing.T, cases []deniedAttack) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkDeniedAttack(t, tc.policy, tc.attack, tc.write, tc.want) })
	}
}

// checkDeniedAttack runs a for real, failing t unless d is gone, then
// fails t unless rules deny it with a message holding want: as a start's
// command, or with write as a pty-write's input typed into bash at its
// prompt.
func checkDeniedAttack(t *testing.T, policy rules.Rules, a attack, write bool, want string) {
	t.Helper()
	removed, out := a.run(t)
	if !removed {
		t.Fatalf("control: bash ran %q and d is still there (output %q): the attack does nothing", a.command, out)
	}
	req := agentpty.ApprovalRequest{Tool: agentpty.ToolStart, Command: a.command}
	if write {
		req = agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Command: "bash", Input: strings.ReplaceAll(a.command, "\n", "\r"), Foreground: "bash"}
	}
	err := policy.Approve(context.Background(), req)
	if err == nil {
		t.Fatalf("%q approved by %+v", a.command, policy)
	}
	if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: %v\nwant ErrDenied ...%s", a.command, err, want)
	}
}
