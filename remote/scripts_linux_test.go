package remote

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
)

// shells are the shells a host may have: bash, and dash for a POSIX sh.
var shells = [][]string{{"bash", "--noprofile", "--norc"}, {"dash"}}

// Each script defines a function once: a hook is named by probe.sh or
// end.sh and defined by the transport's script, never defined anew; and
// the mark's format is the one Go reads.
func TestScriptsDefineEachFunctionOnce(t *testing.T) {
	def := regexp.MustCompile(`(?m)^\s*([a-z_][a-z0-9_]*)\(\)\s*\{`)
	for name, script := range map[string]string{"ServeScript": ServeScript(), "ExecScript": ExecScript()} {
		seen := map[string]bool{}
		for _, m := range def.FindAllStringSubmatch(script, -1) {
			if seen[m[1]] {
				t.Errorf("%s defines %s twice", name, m[1])
			}
			seen[m[1]] = true
		}
		for _, hook := range []string{"hook_runs", "hook_sttystart", "hook_sttywait", "hook_fence", "hook_carriers"} {
			if !seen[hook] {
				t.Errorf("%s does not define %s", name, hook)
			}
		}
	}
	if want := "MARKFMT='" + strings.Replace(MarkFormat, ";%s;%s", ";%s;f%s", 1) + "'"; !strings.Contains(probeSh, want) {
		t.Errorf("probe.sh's MARKFMT is not %s", want)
	}
}

// end.sh's endall, run by bash and by dash, ends a command's session: a
// leader that ignores SIGTERM (SIGHUP ends it), its background job, and
// a child that left for a session of its own; sig reaches the command.
func TestEndScriptUnderShells(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell[0], func(t *testing.T) {
			testkit.Need(t, shell[0], "setsid", "sleep")
			sig, _ := startTree(t)
			out := runScript(t, shell, fmt.Sprintf("Q=1; sig %d CONT; echo \"$Q .\"", sig))
			if out != "1 sent leader\n1 .\n" {
				t.Errorf("sig: %q, want it sent to the command", out)
			}
			pid, log := startTree(t)
			kids := descendants(pid)
			if len(kids) < 2 {
				t.Fatalf("the tree of %d has %v below it", pid, kids)
			}
			out = runScript(t, shell, fmt.Sprintf("Q=1; endall %d %s; echo \"$Q .\"", pid, strings.Join(EndArgs(HupDelay, 10*time.Second), " ")))
			if out != "1 gone\n1 .\n" {
				t.Errorf("endall: %q, want gone", out)
			}
			if b, _ := readFile(log); b != "hup\n" {
				t.Errorf("the leader, which ignores SIGTERM, did not get SIGHUP (its log: %q)", b)
			}
			for _, p := range append(kids, pid) {
				if proc.Alive(p) {
					t.Errorf("process %d is still running", p)
				}
			}
		})
	}
}

// ExecScript, run by bash and by dash, answers a request in its own
// shell, each line after the request's number, "." last.
func TestExecScriptUnderShells(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell[0], func(t *testing.T) {
			testkit.Need(t, shell[0], "uname")
			argv := append(append([]string{}, shell...), "-c", ExecScript(), "remote", "n0nce", "-", "7", "arch")
			if shell[0] == "bash" {
				argv = append([]string{"bash", "--noprofile", "--norc"}, argv[3:]...)
			}
			out, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil || !regexp.MustCompile(`^7 arch \S+\n7 \.\n$`).Match(out) {
				t.Errorf("arch: %q, %v", out, err)
			}
		})
	}
}

// startTree starts, in a session of its own, a bash that ignores SIGTERM
// and logs SIGHUP, with a background job and a child in a session of its
// own below it; it returns its pid and its log. They are killed when t
// ends.
func startTree(t *testing.T) (int, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "log")
	cmd := exec.Command("bash", "-c", `trap '' TERM; trap 'echo hup >"$0"; exit 0' HUP; sleep 1000 & setsid sleep 1000 & echo ready; wait; wait`, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reaped once ended
	t.Cleanup(func() {
		for _, p := range append(descendants(cmd.Process.Pid), cmd.Process.Pid) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	b := make([]byte, 6)
	if _, err := out.Read(b); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, log
}

// runScript runs probe.sh, end.sh and the plain hooks, then line, in
// shell, and returns what it printed.
func runScript(t *testing.T, shell []string, line string) string {
	t.Helper()
	return run(t, shell, "exec 2>/dev/null\n"+probeSh+endSh+plainHooks+line+"\n")
}

// descendants lists the live processes below pid.
func descendants(pid int) []int {
	var out []int
	for _, task := range taskDirs(pid) {
		b, _ := readFile(task + "/children")
		for _, f := range strings.Fields(b) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}
