package remote

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// A probe's answer leaves the shell in as few writes as a pipe keeps
// whole: one for a program with one thread; for one with 300 threads (a
// line each), writes of at most PIPE_BUF bytes, each ending a line. Its
// lines are those of a probe that prints each line as it goes, in the
// same order. Before, every line was a write of its own: sshd woke, and
// sent a packet, once a line. (The shell has written before, as the
// probe shell has its earlier answers: bash writes its very first
// output through stdio a line at a time.)
func TestProbeAnswersInWholeWrites(t *testing.T) {
	testkit.Need(t, "bash", "dash", "strace", "python3", "cat")
	calls, ok := Archs[strings.TrimSpace(run(t, []string{"bash"}, "uname -m"))]
	if !ok {
		t.Skip("an architecture Archs does not list")
	}
	threads := "import threading, time, sys\nfor i in range(300): threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\nprint('ready'); sys.stdout.flush(); sys.stdin.readline()"
	for _, prog := range [][]string{{"cat"}, {"python3", "-c", threads}} {
		cmd := exec.Command(prog[0], prog[1:]...)
		f, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if prog[0] == "python3" {
			buf := make([]byte, 64)
			for seen := ""; !strings.Contains(seen, "ready"); {
				n, err := f.Read(buf)
				if err != nil {
					t.Fatalf("python before ready: %v", err)
				}
				seen += string(buf[:n])
			}
		}
		go func() { _, _ = f.Read(make([]byte, 1<<16)) }() // the marks
		for _, shell := range []string{"bash", "dash"} {
			script := "exec 2>/dev/null\n" + probeSh + endSh + plainHooks + fmt.Sprintf("\nQ=1 FN=x %s\n", Vars(calls))
			probe := fmt.Sprintf("echo 0\nprobe %d\nwait\n", cmd.Process.Pid)
			log := filepath.Join(t.TempDir(), "strace")
			st := exec.Command("strace", "-qq", "-e", "trace=write", "-e", "signal=none", "-s", "0", "-o", log, shell)
			st.Stdin = strings.NewReader(script + probe)
			out, err := st.Output()
			if err != nil {
				t.Fatalf("%s under strace: %v", shell, err)
			}
			ref := run(t, []string{shell}, script+`say() { echo "$Q $*"; }`+"\n"+probe)
			if string(out) != ref {
				t.Errorf("%s, %s: the answer\n%s\nis not the one printed a line at a time\n%s", shell, prog[0], out, ref)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			out = out[len("0\n"):]
			var sizes []int
			for i, m := range regexp.MustCompile(`(?m)^write\(1, .*\)\s+= (\d+)$`).FindAllStringSubmatch(string(b), -1) {
				if n, _ := strconv.Atoi(m[1]); i > 0 { // the first is "0"
					sizes = append(sizes, n)
				}
			}
			lines := strings.Count(string(out), "\n")
			most := 1
			if prog[0] == "python3" {
				most = len(out)/3000 + 1
				if lines < 300 || len(out) < 8192 {
					t.Fatalf("%s: 300 threads gave %d lines, %d bytes: the test shows nothing", shell, lines, len(out))
				}
			}
			if len(sizes) == 0 || len(sizes) > most {
				t.Errorf("%s, %s: %d lines in %d writes (%v), want at most %d", shell, prog[0], lines, len(sizes), sizes, most)
			}
			sum := 0
			for _, n := range sizes {
				if n > 4096 || !strings.HasSuffix(string(out[:sum+n]), "\n") {
					t.Errorf("%s, %s: a write of %d bytes at %d: more than PIPE_BUF, or not ending a line", shell, prog[0], n, sum)
				}
				sum += n
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	}
}

// ServeInput has bash read ServeScript in a few reads (its own line and
// the request are still read a byte at a time), not a read(2) a
// byte as bash reads a script from a pipe (about 20,000 of them, most of
// a probe shell's start), and the shell it made answers as one that read
// the script line by line; sh (dash) reads the script itself.
func TestServeInputReadsTheScriptWhole(t *testing.T) {
	testkit.Need(t, "bash", "dash", "strace")
	request := `Q=7; echo "$Q up ${PW:-0} $(command -v probe)"; echo "$Q ."` + "\n"
	for _, c := range []struct {
		shell, pw string
		most      int
	}{{"bash", "1", 1000}, {"dash", "0", -1}} {
		for _, input := range []string{ServeInput(), ServeScript() + "\n"} {
			log := filepath.Join(t.TempDir(), "strace")
			st := exec.Command("strace", "-f", "-qq", "-e", "trace=read", "-e", "signal=none", "-s", "0", "-o", log, c.shell)
			st.Stdin = strings.NewReader(input + request)
			out, err := st.Output()
			if err != nil {
				t.Fatalf("%s under strace: %v", c.shell, err)
			}
			if want := "7 up " + c.pw + " probe\n7 .\n"; string(out) != want {
				t.Errorf("%s: answered %q, want %q", c.shell, out, want)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			reads := len(regexp.MustCompile(`(?m)^\d+ +read\(0,`).FindAll(b, -1))
			whole := input == ServeInput()
			switch {
			case c.most > 0 && whole && reads > c.most:
				t.Errorf("%s read ServeInput from a pipe in %d reads, want at most %d", c.shell, reads, c.most)
			case c.most > 0 && !whole && reads < len(input)/2:
				t.Errorf("%s read the bare script in %d reads: the test shows nothing", c.shell, reads)
			}
		}
	}
}
