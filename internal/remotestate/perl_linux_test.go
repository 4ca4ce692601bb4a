package remotestate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// The perl collector and the shell's give the same lines for the same
// processes: a program reading its terminal, one running, a password
// prompt, select (with a timeout too), poll and epoll on the terminal, and
// a pipeline whose reader is not the group's leader.
func TestPerlMatchesShell(t *testing.T) {
	testkit.Need(t, "bash", "perl", "python3")
	calls, ok := Archs[strings.TrimSpace(run(t, "bash", "uname -m"))]
	if !ok {
		t.Skip("an architecture remotestate does not list")
	}
	python := "/usr/bin/python3" // the interpreter itself, not a version manager's shim
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	py := func(code string) []string { return []string{python, "-c", "import select, selectors, sys\n" + code} }
	if strings.Contains(Perl, "'") {
		t.Fatal("Perl holds a single quote: the shell's quoting of it would break")
	}
	cases := map[string][]string{
		"read":      {"cat"},
		"running":   {"bash", "-c", "while :; do :; done"},
		"read -s":   {"bash", "-c", "read -s x"},
		"select":    py("select.select([sys.stdin], [], [])"),
		"select 9s": py("select.select([sys.stdin], [], [], 9)"),
		"poll":      py("p = select.poll(); p.register(0, select.POLLIN); p.poll()"),
		"epoll":     py("s = selectors.DefaultSelector(); s.register(sys.stdin, selectors.EVENT_READ); s.select()"),
		"pipeline":  {"bash", "-c", "cat | cat"},
	}
	for name, argv := range cases {
		cmd := exec.Command(argv[0], argv[1:]...)
		f, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		// Settled (blocked, but for the busy loop, and two probes of the
		// shell alike), then the perl one.
		var shell, perl string
		deadline := time.Now().Add(10 * time.Second)
		for {
			a := probeWith(t, pid, calls, true)
			b := probeWith(t, pid, calls, true)
			settled := a == b && (name == "running" || !strings.Contains(b, " R "))
			if settled || time.Now().After(deadline) {
				shell = b
				break
			}
		}
		perl = probeWith(t, pid, calls, false)
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		if shell != perl {
			t.Errorf("%s: the shell says\n%s\nperl says\n%s", name, shell, perl)
		}
		if !strings.Contains(perl, " p ") {
			t.Errorf("%s: no process in %q", name, perl)
		}
	}
}

// probeWith runs Funcs' probe of pid through bash, or Perl's.
func probeWith(t *testing.T, pid int, c Calls, shell bool) string {
	var out string
	if shell {
		out = run(t, "bash", "exec 2>/dev/null\n"+Funcs+fmt.Sprintf("\nQ=1 FN=x %s\nprobe %d\n", Vars(c), pid))
	} else {
		l := c.lists()
		out = run(t, "perl", Perl+fmt.Sprintf("\nprint answer(1, 'x', %d, '%s', '%s', '%s', '%s', '%s');\n", pid, l[0], l[1], l[2], l[3], l[4]))
	}
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if modes, ok := strings.CutPrefix(l, "1 stty "); ok { // stty -a's words, or perl's two
			l = fmt.Sprintf("1 stty, echo off: %v", EchoOffWords(modes))
		}
		if !strings.HasPrefix(l, "1 fence") && !strings.HasPrefix(l, "1 nofence") && l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func run(t *testing.T, interp, script string) string {
	t.Helper()
	cmd := exec.Command(interp)
	if interp == "bash" {
		cmd.Args = append(cmd.Args, "--noprofile", "--norc")
	}
	cmd.Stdin = strings.NewReader(script)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", interp, err, errs.String())
	}
	return out.String()
}
