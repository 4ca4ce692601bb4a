package sshpty

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// The line a login shell is given reads as the same word to every shell
// sshd may run it with (each one installed here): /bin/sh then gets the
// script whole, awkward characters and all.
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
		out, err := exec.Command(path, "-c", loginLine(`nl=$(printf '\nx'); nl=${nl%x}; `+script)).CombinedOutput()
		if want := "[" + nasty + "](/bin/sh)"; err != nil || string(out) != want {
			t.Errorf("%s -c LINE: %q %v; want %q", shell, out, err, want)
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
