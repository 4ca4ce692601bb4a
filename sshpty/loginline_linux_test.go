package sshpty

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// The line a login shell is given reads as the same word to every shell
// sshd may run it with (each one installed here): /bin/sh then gets the
// script whole, awkward characters and all; a POSIX login shell reads the
// script itself as /bin/sh would.
func TestLoginLineEveryShell(t *testing.T) {
	const nasty = "it's \"q\" $HOME `x` \\ \\\\ \\' !! !$ ~ * a\nb\tc {} ; & | # end"
	script := `printf '[%s]' ` + shWord(nasty) + `; printf '(%s)' "$0"`
	ran := 0
	for _, shell := range []string{"sh", "bash", "dash", "zsh", "ksh", "fish", "tcsh", "csh"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		ran++
		whole := `nl=$(printf '\nx'); nl=${nl%x}; ` + script
		out, err := exec.Command(path, "-c", loginLine(whole)).CombinedOutput()
		if want := "[" + nasty + "](/bin/sh)"; err != nil || string(out) != want {
			t.Errorf("%s -c LINE: %q %v; want %q", shell, out, err, want)
		}
		if !slices.Contains(posixShells, shell) {
			continue
		}
		// A POSIX login shell is given the script itself.
		out, err = exec.Command(path, "-c", whole).CombinedOutput()
		if want := "[" + nasty + "](" + path + ")"; err != nil || string(out) != want {
			t.Errorf("%s -c SCRIPT: %q %v; want %q", shell, out, err, want)
		}
	}
	if ran < 3 {
		t.Skipf("only %d shells installed", ran)
	}
}

// A user whose login shell is fish gets what a bash user gets: a command
// with the session's variables and working directory (quotes, $, spaces,
// backslashes, ! and a newline in them) and its exit code, and a shell
// session whose runs end with theirs. Before, the line was POSIX shell
// text that fish could not parse, and every start failed.
func TestFishLoginShell(t *testing.T) {
	testkit.Need(t, "fish")
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fish d'i\"r $x \\ \\\\ !")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, c := connectUserWith(t, fish)
	const value = "it's a \"value\" with $HOME, `x`, \\ \\\\ \\' and !!\nline two"
	m := newManager(t, c, agentpty.Options{Env: []string{"AGENTPTY_V=" + value}})
	res := mustStart(t, m, agentpty.StartRequest{Command: `printf '[%s]\n' "$AGENTPTY_V"; echo "dir=$PWD"; exit 3`, Cwd: dir, WaitMS: ms(10000)})
	for _, want := range []string{"[" + value + "]", "dir=" + dir} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("under a fish login: %q lacks %q", res.Output, want)
		}
	}
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("exit 3 under a fish login: %+v", res)
	}

	sh := agentptytest.StartShell(t, m, func(r *agentpty.StartRequest) { r.Cwd = dir })
	if r := agentptytest.MustRun(t, m, sh.ID, `printf '%s|' "$PWD" "$AGENTPTY_V"; (exit 6)`); r.Output != dir+"|"+value+"|" || r.ExitCode == nil || *r.ExitCode != 6 {
		t.Errorf("a run in a shell session under a fish login: %+v", r)
	}
	if r := agentptytest.MustRun(t, m, sh.ID, "exit 2"); !r.Exited || r.ExitCode == nil || *r.ExitCode != 2 {
		t.Errorf("exit 2: %+v", r)
	}
}

// A user whose login shell runs no commands (nologin) gets an error that
// says so, quoting the shell's own words; before, it was "EOF".
func TestNologinLoginShell(t *testing.T) {
	nologin, err := exec.LookPath("nologin")
	if err != nil {
		nologin = "/usr/sbin/nologin" // sbin is not on every user's PATH
		if _, err := os.Stat(nologin); err != nil {
			testkit.Lacks(t, "no nologin: %v", err)
		}
	}
	_, c := connectUserWith(t, nologin)
	m := newManager(t, c, agentpty.Options{})
	for _, req := range []agentpty.StartRequest{{Command: "echo hi"}, {Shell: true}} {
		_, err := m.Start(agentptytest.Ctx(t), req)
		if err == nil || !strings.Contains(err.Error(), "the login shell ran no command, saying") || !strings.Contains(err.Error(), "not nologin") {
			t.Errorf("start %+v under a nologin login: %v; want the login shell's refusal", req, err)
		}
	}
}

// A start line forks a command substitution (for "$nl", see shWord) only
// when a word of it holds a newline: on a host where a process start
// costs milliseconds, one fork is a measurable part of a start. The
// words come through whole either way. Before, every line forked.
func TestCommandLineForksOnlyForANewline(t *testing.T) {
	testkit.Need(t, "bash")
	dir := t.TempDir()
	nlDir := filepath.Join(dir, "a\nb")
	if err := os.Mkdir(nlDir, 0o755); err != nil {
		t.Fatal(err)
	}
	print := []string{"bash", "-c", `printf '[%s|%s|%s]' "$1" "$PWD" "$V"`, "x"}
	for _, c := range []struct {
		name string
		cmd  agentpty.Command
		fork bool
		want string
	}{
		{"none", agentpty.Command{Argv: append(print, "one"), Dir: dir, Env: []string{"V=v"}}, false, "[one|" + dir + "|v]"},
		{"in an argument", agentpty.Command{Argv: append(print, "one\ntwo"), Env: []string{"V=v"}}, true, "[one\ntwo|"},
		{"in a variable", agentpty.Command{Argv: append(print, "one"), Env: []string{"V=v\nw"}}, true, "|v\nw]"},
		{"in the directory", agentpty.Command{Argv: append(print, "one"), Dir: nlDir}, true, "[one|" + nlDir + "|]"},
	} {
		c.cmd.Name, c.cmd.Cols, c.cmd.Rows = "pty-1", 80, 24
		line, _, _, err := commandLine(c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if fork := strings.Contains(line, "$("); fork != c.fork {
			t.Errorf("%s: a command substitution in the line is %v, want %v: %s", c.name, fork, c.fork, line)
		}
		out, err := exec.Command("bash", "-c", line).Output()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %q %v; want %q in it", c.name, out, err, c.want)
		}
	}
}

// A login shell that reads POSIX sh (named so in the password database)
// is given a start's script itself; any other hands it to /bin/sh, one
// process start more. Each login shell here is bash behind a wrapper
// that notes the line sshd gives it: named "bash", its line is the
// script, and the session's command runs with its words, variables,
// directory and exit code; named otherwise, the line hands the same
// script to /bin/sh. Before, every start went through /bin/sh.
func TestPOSIXLoginShellRunsTheScript(t *testing.T) {
	testkit.Need(t, "bash")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "aptyshell") // t.TempDir's parent is the test's user's alone
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := filepath.Join(dir, "lines")
	if err := os.WriteFile(lines, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(lines, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		direct bool
	}{{"bash", true}, {"aptyshell", false}} {
		t.Run(c.name, func(t *testing.T) { loginShellGets(t, bash, dir, lines, c.name, c.direct) })
	}
}

// loginShellGets starts a session as a user whose login shell is bash
// behind a wrapper named name in dir, which notes its line in lines, and
// checks that the line is the script itself when direct, else /bin/sh's.
func loginShellGets(t *testing.T, bash, dir, lines, name string, direct bool) {
	shell := filepath.Join(dir, name, name)
	if err := os.MkdirAll(filepath.Dir(shell), 0o755); err != nil {
		t.Fatal(err)
	}
	// The probe shell's line holds "command -v bash": only the start's is noted.
	wrapper := "#!" + bash + "\ncase $2 in *AGENTPTY_LT*) printf '%s\\n' \"$2\" >>" + lines + ";; esac\nexec " + bash + " \"$@\"\n"
	if err := os.WriteFile(shell, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(lines, 0); err != nil {
		t.Fatal(err)
	}
	_, cl := connectUserWith(t, shell)
	m := newManager(t, cl, agentpty.Options{Env: []string{"AGENTPTY_LT=it's $x"}})
	res := mustStart(t, m, agentpty.StartRequest{Command: `printf '[%s|%s]\n' "$AGENTPTY_LT" "$PWD"; exit 4`, Cwd: dir, WaitMS: ms(10000)})
	if want := "[it's $x|" + dir + "]"; !strings.Contains(res.Output, want) || !res.Exited || res.ExitCode == nil || *res.ExitCode != 4 {
		t.Errorf("login shell %s: %+v; want %q and exit 4", name, res, want)
	}
	b, err := os.ReadFile(lines)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(b))
	if sh := strings.HasPrefix(line, "exec /bin/sh -c "); line == "" || sh == direct {
		t.Errorf("login shell %s was given %q; want the script itself: %v", name, line, direct)
	}
}
