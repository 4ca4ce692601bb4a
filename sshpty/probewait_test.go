//go:build linux

package sshpty

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/remote"
)

// waiting is what the probe shell says of its waiting shells (see
// remote.ServeScript): whether it keeps them, the pid of the shell that waits to
// exec stty and of the one that waits to write a mark, its own pid, how
// often a probe started stty or the mark itself, and the pid of the perl
// that reads the modes (0: none).
type waiting struct {
	on                       bool
	stty, mark, sh           int
	sttyStarted, markStarted int
	perl                     int
}

func askWaiting(t *testing.T, b *Backend) waiting {
	t.Helper()
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.run(waitCtx(t), `echo "$Q w ${PW:-0} ${SA:-0} ${SB:-0} $$ ${EF:-0} ${MF:-0} ${SP:-0}"`, false)
	if err != nil {
		t.Fatal(err)
	}
	var w waiting
	var on int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "w %d %d %d %d %d %d %d", &on, &w.stty, &w.mark, &w.sh, &w.sttyStarted, &w.markStarted, &w.perl); err != nil {
		t.Fatalf("the probe shell said %q: %v", out, err)
	}
	w.on = on == 1
	return w
}

// eachModesReader runs test with perl reading the terminals' modes, where
// the host has perl, and with the shells that exec stty (perl hidden from
// the probe shell by NOPERL); perl says which, and whether askWaiting
// must see it.
func eachModesReader(t *testing.T, test func(t *testing.T, perl bool)) {
	for _, perl := range []bool{true, false} {
		t.Run(map[bool]string{true: "perl", false: "stty"}[perl], func(t *testing.T) {
			if perl {
				testkit.Need(t, "perl")
			} else {
				saved := probeShellLine
				t.Cleanup(func() { probeShellLine = saved })
				probeShellLine = "export NOPERL=1; " + saved
			}
			test(t, perl)
		})
	}
}

// modesReader fails t unless perl reads the modes exactly when it
// should; where it does, it first waits, a bounded while, for perl to
// have loaded (until then the stty shell serves). It returns what the
// probe shell says then.
func modesReader(t *testing.T, b *Backend, perl bool) waiting {
	t.Helper()
	if w := askWaiting(t, b); (w.perl != 0) != perl {
		t.Fatalf("perl reads the modes: %v, want %v (%+v)", w.perl != 0, perl, w)
	}
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, func() bool {
		out, _ := h.run(waitCtx(t), `perlready && echo "$Q ready"`, false)
		return !perl || strings.Contains(string(out), "ready")
	}, "perl ready")
	return askWaiting(t, b)
}

// parentOf is pid's parent on this machine (the server is local), or 0.
func parentOf(pid int) int {
	st, _ := proc.ReadStat(pid, make([]byte, 512))
	return st.PPID
}

// gone waits, a bounded while, until pid has ended on this machine (the
// server is local).
func gone(t *testing.T, pid int) {
	t.Helper()
	within(t, 10*time.Second, func() bool { return !alive(pid) }, fmt.Sprintf("process %d gone", pid))
}

// TestProbeWaitingShells: a probe after the program ran starts neither
// stty nor the mark's writer itself; shells forked beforehand wait for
// them, and new ones replace them. The fifo's name is gone from the host
// at once; when the probe shell ends, so do the waiting shells.
//
// Where the host has perl, one perl reads the modes for every probe once
// it has loaded: the stty shell is not used, perl is not replaced, and no
// probe starts a process to read them. Before, each probe after a run
// exec'd stty.
func TestProbeWaitingShells(t *testing.T) {
	eachModesReader(t, testProbeWaitingShells)
}

func testProbeWaitingShells(t *testing.T, perl bool) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `echo ready; read x; echo "got $x"; read -s y; echo "got2 $y"`)
	out.waitFor(t, "ready")
	fence, _ := waitRead(t, term, "read")
	w := modesReader(t, b, perl)
	if !w.on || w.stty == 0 || w.mark == 0 {
		t.Fatalf("no shells wait for a probe's stty and mark: %+v", w)
	}
	for _, pid := range []int{w.stty, w.mark, w.perl} {
		if pid == 0 {
			continue // no perl
		}
		if p := parentOf(pid); p != w.sh {
			t.Fatalf("waiting shell %d has parent %d, not the probe shell %d", pid, p, w.sh)
		}
	}
	if fifo, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/6", w.sh)); !strings.HasSuffix(fifo, " (deleted)") {
		t.Errorf("the probe shell's fifo %q still has a name on the host", fifo)
	}
	// bash runs, then waits at read -s: the waiting shells read the flag
	// and write the mark, and new ones wait.
	if _, err := term.Write([]byte("one\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got one")
	next, off := waitRead(t, term, "read -s")
	if !off || next <= fence {
		t.Errorf("at read -s: echo off %v, mark %d after %d; want echo off and a new mark", off, next, fence)
	}
	w2 := askWaiting(t, b)
	if kept := w2.stty == w.stty; kept != perl || w2.mark == w.mark || w2.stty == 0 || w2.mark == 0 || w2.perl != w.perl {
		t.Errorf("the waiting shells were not used and replaced (where perl reads the modes, the stty shell is not used, and perl stays): before %+v, after %+v", w, w2)
	}
	if w2.sttyStarted != 0 || w2.markStarted != 0 {
		t.Errorf("probes started stty %d times and the mark %d times themselves; want 0", w2.sttyStarted, w2.markStarted)
	}
	if !perl {
		gone(t, w.stty)
	}
	gone(t, w.mark)
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got2 pw")
	closeTerm(term, out)
	gone(t, w2.stty)
	gone(t, w2.mark)
	if perl {
		gone(t, w2.perl)
	}
}

// TestProbeShellKilled: when the probe shell is killed on the host, its
// waiting shells end too, even while a request runs in its background
// (a kill does), which holds none of their pipes.
func TestProbeShellKilled(t *testing.T) {
	eachModesReader(t, testProbeShellKilled)
}

func testProbeShellKilled(t *testing.T, perl bool) {
	b, _, _ := readyTerm(t, `echo ready; exec cat`)
	w := modesReader(t, b, perl)
	if !w.on || w.stty == 0 || w.mark == 0 {
		t.Fatalf("no shells wait for a probe's stty and mark: %+v", w)
	}
	t.Cleanup(func() { // what a failure left behind
		for _, pid := range []int{w.stty, w.mark, w.perl} {
			if pid != 0 && alive(pid) && parentOf(pid) == 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	bg := make(chan struct{})
	go func() {
		defer close(bg)
		h.run(waitCtx(t), "sleep 30.4242", true) // answers only when the shell ends
	}()
	// The background request's sleep: no child of the shell (see
	// TestNoZombieOnTheFarSide), known by its argument.
	sleeper := 0
	within(t, 10*time.Second, func() bool {
		for _, k := range proc.Pids() {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k)); string(b) == "sleep\x0030.4242\x00" {
				sleeper = k
			}
		}
		return sleeper != 0
	}, "the background request started")
	if err := syscall.Kill(w.sh, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	within(t, 2*time.Second, func() bool { return !alive(w.stty) && !alive(w.mark) && (w.perl == 0 || !alive(w.perl)) },
		"the waiting shells gone while the background request still holds the probe shell's other descriptors")
	if !alive(sleeper) {
		t.Errorf("the background request ended before the waiting shells were seen gone: the test shows nothing")
	}
	syscall.Kill(sleeper, syscall.SIGKILL)
	<-bg
}

// within waits up to d for ok, polling the host's process table.
func within(t *testing.T, d time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v, not %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // a bounded poll
	}
}

// TestProbeWaitingShellKilled: when a waiting shell is killed on the
// host, the probe still reads the echo flag and writes its mark, starting
// them itself, and the waiting stops for that connection (perl's too).
// When perl is killed, the stty shell reads the modes, and the waiting
// goes on.
func TestProbeWaitingShellKilled(t *testing.T) {
	eachModesReader(t, testProbeWaitingShellKilled)
}

func testProbeWaitingShellKilled(t *testing.T, perl bool) {
	for _, which := range []string{map[bool]string{true: "perl", false: "stty"}[perl], "mark"} {
		t.Run(which, func(t *testing.T) {
			b, term, out := readyTerm(t, `echo ready; read -s x; echo "got $x"; read y; echo "done $y"`)
			fence, off := waitRead(t, term, "read -s")
			if !off {
				t.Fatal("echo on at read -s")
			}
			w := modesReader(t, b, perl)
			pid := map[string]int{"stty": w.stty, "mark": w.mark, "perl": w.perl}[which]
			if pid == 0 {
				t.Fatalf("no %s shell waits: %+v", which, w)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			gone(t, pid)
			if _, err := term.Write([]byte("pw\r")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "got pw")
			next, off := waitRead(t, term, "read")
			if off || next <= fence {
				t.Errorf("at read after the %s shell was killed: echo off %v, mark %d after %d; want echo on and a new mark", which, off, next, fence)
			}
			w2 := askWaiting(t, b)
			if which == "perl" {
				if !w2.on || w2.perl != 0 || w2.stty == 0 || w2.sttyStarted != 0 {
					t.Errorf("after perl was lost, the stty shell does not read the modes: %+v", w2)
				}
			} else {
				if w2.on || w2.stty != 0 || w2.mark != 0 || w2.perl != 0 {
					t.Errorf("the waiting went on after the %s shell was lost: %+v", which, w2)
				}
				if started := map[string]int{"stty": w2.sttyStarted, "mark": w2.markStarted}[which]; started == 0 {
					t.Errorf("the probe did not start %s itself: %+v", which, w2)
				}
				for _, pid := range []int{w.stty, w.mark, w.perl} {
					if pid != 0 {
						gone(t, pid)
					}
				}
			}
			if _, err := term.Write([]byte("end\r")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "done end")
		})
	}
}

// TestProbeAfterABlockedWrite: a write the program does not read times
// out with its bytes still on the way; a probe after it answers at once
// instead of waiting for them.
func TestProbeAfterABlockedWrite(t *testing.T) {
	_, term, _ := readyTerm(t, `stty raw -echo; echo ready; exec sleep 30`)
	if err := term.(interface{ SetWriteDeadline(time.Time) error }).SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Write(bytes.Repeat([]byte("x"), 8<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("writing 8 MiB that nothing reads: %v, want the deadline", err)
	}
	st := term.(stateTerminal)
	done := make(chan agentpty.Foreground, 1)
	go func() {
		st.EchoOff()
		done <- st.Foreground()
	}()
	select {
	case fg := <-done:
		if fg.Name != "sleep" {
			t.Errorf("the foreground is %q, want sleep", fg.Name)
		}
	case <-time.After(remote.FenceWait * 3 / 4): // under the mark's own bound: not waited out behind the write
		t.Fatalf("a probe did not answer within %v of a write that timed out", remote.FenceWait*3/4)
	}
}

// waitRead probes until the program waits on the terminal and returns
// the probe's mark and echo flag.
func waitRead(t *testing.T, term agentpty.Terminal, what string) (fence int, echoOff bool) {
	t.Helper()
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	for {
		r, ok := st.probeNow()
		if ok && r.Fg.Waiting {
			return r.Fence, r.EchoOff
		}
		if ctx.Err() != nil {
			t.Fatalf("the program never waited at %s", what)
		}
	}
}

// TestProbeShellUnderSh: where the host has no bash (or one older than
// 5), the probe shell is sh; the helper's functions parse there, keep no
// waiting shells, and a probe starts stty and the mark itself.
func TestProbeShellUnderSh(t *testing.T) {
	testkit.Need(t, "dash", "cat")
	calls := localCalls(t)
	cmd := catUnderPTY(t)
	script := remote.ServeScript() + fmt.Sprintf("\nQ=1 FN=x %s probe %d 1; echo \"$Q w ${PW:-0} ${EF:-0} ${MF:-0}\"\n", remote.Vars(calls), cmd.Process.Pid)
	ctx := waitCtx(t)
	for {
		sh := exec.CommandContext(ctx, "dash")
		sh.Stdin = strings.NewReader(script)
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("dash: %v\n%s", err, out)
		}
		lines := strings.ReplaceAll("\n"+string(out), "\n1 ", "\n")[1:]
		r := remote.Parse([]byte(lines), calls, true)
		if !r.Fg.Waiting {
			if ctx.Err() != nil {
				t.Fatalf("cat never waited:\n%s", lines)
			}
			continue // cat has not reached its read yet
		}
		if !r.EchoRead || r.EchoOff || r.Fence != 1 {
			t.Errorf("under sh: %+v\n%s", r, lines)
		}
		if !strings.Contains(lines, "w 0 1 1\n") {
			t.Errorf("under sh the probe shell kept waiting shells, or did not start stty and the mark itself:\n%s", lines)
		}
		return
	}
}

// TestProbeSeesEchoTurnedOff: a program that reads a line, works a little
// and then reads with echo off is seen at its second read with echo off,
// by the first probe that sees it wait and by every probe after it. The
// command has 400 threads, so that each look at its run times takes long
// enough for the program to move while a probe looks (a probe that read
// the modes before the look at the run times saw echo on there, and kept
// it).
func TestProbeSeesEchoTurnedOff(t *testing.T) {
	testkit.Need(t, "python3")
	_, term, out := readyTerm(t, `python3 -c "import threading,time,subprocess; [threading.Thread(target=time.sleep,args=(60,),daemon=True).start() for _ in range(400)]; print('ready',flush=True); subprocess.call(['bash','--norc','-c','read x; for i in {1..3000}; do :; done; read -s y; echo done'])"`)
	waitRead(t, term, "read")
	if _, err := term.Write([]byte("a\r")); err != nil {
		t.Fatal(err)
	}
	if _, off := waitRead(t, term, "read -s"); !off {
		t.Error("the first probe that sees read -s wait says echo on")
	}
	st := term.(stateTerminal)
	for i := 0; i < 3; i++ {
		if r, _ := st.probeNow(); !r.Fg.Waiting || !r.EchoOff {
			t.Errorf("probe %d at read -s: waiting %v, echo off %v", i+1, r.Fg.Waiting, r.EchoOff)
		}
	}
	if _, err := term.Write([]byte("b\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "done")
}

// movesTerminal reads a line on its terminal, then leaves it for a new
// one with echo off (it leads its session: TIOCNOTTY, then TIOCSCTTY on
// a pty of its own) and reads there.
const movesTerminal = `exec /usr/bin/python3 -c '
import fcntl, os, signal, sys, termios
signal.signal(signal.SIGHUP, signal.SIG_IGN) # TIOCNOTTY hangs up the old one
sys.stdin.readline()
fcntl.ioctl(0, termios.TIOCNOTTY)
m, s = os.openpty()
fcntl.ioctl(s, termios.TIOCSCTTY, 0)
a = termios.tcgetattr(s)
a[3] &= ~termios.ECHO
termios.tcsetattr(s, termios.TCSANOW, a)
print("moved", flush=True)
os.read(s, 1)
'`

// TestProbeHintFollowsANewTerminal: the hint (output or input since the
// last probe) starts stty for the terminal the last probe found; when the
// command has another terminal by then, the probe drops that stty's
// answer and reads the new terminal's modes. The command reads a line
// with echo on, then moves to a terminal of its own with echo off: the
// first probe after the move says echo off.
func TestProbeHintFollowsANewTerminal(t *testing.T) {
	testkit.Need(t, "/usr/bin/python3")
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, movesTerminal)
	defer func() {
		// Moved off its terminal, the command outlives its hang-up.
		_ = syscall.Kill(term.PID(), syscall.SIGKILL)
		closeTerm(term, out)
	}()
	if _, off := waitRead(t, term, "the first read"); off {
		t.Fatal("echo off at the first read")
	}
	device := func() string {
		h, err := b.probeShell()
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.run(waitCtx(t), fmt.Sprintf(`eval "echo \"\$Q \${DV%d-}\""`, term.PID()), false)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := device()
	if w := askWaiting(t, b); !w.on || w.stty == 0 {
		t.Fatalf("no shell waits to exec stty: the hint's path is not taken: %+v", w)
	}
	if _, err := term.Write([]byte("go\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "moved")
	st := term.(stateTerminal)
	r, ok := st.probeNow() // with the hint: input and output came since the last

	if after := device(); after == before || !strings.HasPrefix(after, "/dev/pts/") {
		t.Fatalf("the command's terminal is %q after the move, %q before: the test proves nothing", after, before)
	}
	if !ok || !r.EchoRead || !r.EchoOff {
		t.Errorf("the first probe after the move to a terminal with echo off: %+v (ok %v); want echo off", r, ok)
	}
	// (It is not seen waiting: the probe's mark goes to the new terminal,
	// which only the command reads.)
}

// TestProbeShellLifetime: the probe shell starts with the first session
// of a connection, serves every later one, and ends with the last.
func TestProbeShellLifetime(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	b.mu.Lock()
	before := b.helper
	b.mu.Unlock()
	if before != nil {
		t.Fatal("a probe shell runs before any session")
	}
	first, fout := startTerm(t, b, `echo ready; exec cat`)
	fout.waitFor(t, "ready")
	sh := askWaiting(t, b).sh
	second, sout := startTerm(t, b, `echo ready; exec cat`)
	sout.waitFor(t, "ready")
	if again := askWaiting(t, b).sh; again != sh {
		t.Errorf("the second session has probe shell %d, the first %d; want one for both", again, sh)
	}
	closeTerm(first, fout)
	if !alive(sh) || askWaiting(t, b).sh != sh {
		t.Error("the probe shell ended, or changed, while a session still runs")
	}
	closeTerm(second, sout)
	gone(t, sh)
}

// TestProbeOnAStoppedTerminal: a terminal whose output is stopped
// (Ctrl-S) holds back the probe's mark, but not the probe shell: the
// probe answers once remote.FenceWait has passed, not knowing the program to
// wait, and a probe of another session on the connection answers at
// once. Once output goes on (Ctrl-Q), the program is seen waiting again.
func TestProbeOnAStoppedTerminal(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	stopped, sout := startTerm(t, b, `echo ready; while :; do read -t 0.2 x && echo "got $x"; done`)
	other, oout := startTerm(t, b, `echo ready; read y; echo "got $y"`)
	defer closeTerm(other, oout)
	defer closeTerm(stopped, sout)
	sout.waitFor(t, "ready")
	oout.waitFor(t, "ready")
	before, _ := waitRead(t, stopped, "read -t")
	waitRead(t, other, "read")
	if _, err := stopped.Write([]byte("\x13")); err != nil { // Ctrl-S
		t.Fatal(err)
	}
	// probeNow does not wait for typed input as probe does: the ^S has
	// reached the terminal before a probe writes its mark.
	stopped.(stateTerminal).order.wait()
	// Until a probe writes a new mark (bash runs every 0.2 s: the last
	// mark stands only while it did not), which the stopped terminal
	// holds back.
	ctx := waitCtx(t)
	for {
		answered := make(chan remote.Result, 1)
		go func() {
			r, _ := stopped.(stateTerminal).probeNow()
			answered <- r
		}()
		var r remote.Result
		select {
		case r = <-answered:
		case <-time.After(remote.FenceWait + 5*time.Second):
			t.Fatalf("the probe of a stopped terminal did not answer within %v", remote.FenceWait+5*time.Second)
		}
		if r.Fence > before {
			if r.Fg.Waiting {
				t.Errorf("a program whose terminal's output is stopped is seen waiting: %+v", r)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no probe wrote a new mark")
		}
	}
	began := time.Now()
	if r, ok := other.(stateTerminal).probeNow(); !ok || !r.Fg.Waiting {
		t.Errorf("the other session while one terminal is stopped: %+v %v; want waiting at read", r, ok)
	}
	if took := time.Since(began); took > remote.FenceWait/2 {
		t.Errorf("the other session's probe took %v while one terminal is stopped", took)
	}
	if _, err := stopped.Write([]byte("\x11")); err != nil { // Ctrl-Q
		t.Fatal(err)
	}
	waitRead(t, stopped, "read -t, output going on")
	if _, err := other.Write([]byte("y\r")); err != nil {
		t.Fatal(err)
	}
	oout.waitFor(t, "got y")
}

// TestPerlReadsTheModesAsSttyDoes: the probe shell's perl reads the
// flags the probe reports as stty -a shows them, for a terminal in each
// combination of canonical mode and echo, and the probe starts no stty
// for them (nor the mark: the waiting shells serve); with NOPERL the
// stty shell reads them (SU says which: 9 perl, 8 the stty shell). The
// probe shell is bash 5 here, reading its requests from a pipe, as over
// SSH.
func TestPerlReadsTheModesAsSttyDoes(t *testing.T) {
	testkit.Need(t, "bash", "perl", "stty", "cat")
	calls := localCalls(t)
	for _, c := range []struct{ set, want string }{
		{"sane", "icanon echo"}, {"-echo", "icanon -echo"}, {"raw -echo", "-icanon -echo"}, {"-icanon echo", "-icanon echo"},
	} {
		cmd := exec.Command("bash", "-c", "stty "+c.set+"; echo ready; exec cat")
		f, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		for seen := ""; !strings.Contains(seen, "ready"); {
			n, err := f.Read(buf)
			if err != nil {
				t.Fatalf("stty %s: %v before ready", c.set, err)
			}
			seen += string(buf[:n])
		}
		go io.Copy(io.Discard, f) // the marks the probe writes
		for _, perl := range []bool{true, false} {
			// Once perl has loaded, where it reads (a bounded poll: 10 s).
			ready := `i=0; while [ -n "$SP" ] && ! perlready && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done`
			script := remote.ServeScript() + "\n" + ready + fmt.Sprintf("\nQ=1 FN=x %s probe %d 0; echo \"w ${SU:-0} ${EF:-0} ${MF:-0}\"\n", remote.Vars(calls), cmd.Process.Pid)
			sh := exec.CommandContext(waitCtx(t), "bash", "--noprofile", "--norc")
			sh.Env = append(os.Environ(), "NOPERL=") // empty: perl reads
			if !perl {
				sh.Env = append(sh.Env, "NOPERL=1")
			}
			sh.Stdin = strings.NewReader(script)
			out, err := sh.Output()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			if want := "1 stty " + c.want + "\n"; !strings.Contains(string(out), want) {
				t.Errorf("stty %s, perl %v: the probe said\n%s\nwant %q", c.set, perl, out, want)
			}
			if want := fmt.Sprintf("\nw %d 0 0\n", map[bool]int{true: 9, false: 8}[perl]); !strings.HasSuffix(string(out), want) {
				t.Errorf("stty %s, perl %v: the probe shell says %q at the end; want %q (perl reading or not, no stty or mark of its own)", c.set, perl, out, want)
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	}
}

// localCalls are the system calls of this machine's architecture, which
// the probe reads; t is skipped where remote.Archs does not list it.
func localCalls(t *testing.T) remote.Calls {
	t.Helper()
	arch, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	calls, ok := remote.Archs[strings.TrimSpace(string(arch))]
	if !ok {
		t.Skip("an architecture remote.Archs does not list")
	}
	return calls
}

// TestSttyShellServesUntilPerlLoads: a probe never waits for perl to
// load (a probe shell starts with each first session): until perl says
// it is ready, the stty shell reads the modes. Here a "perl" first in
// PATH never says so (it reads its requests, holding its output open,
// and writes nothing).
func TestSttyShellServesUntilPerlLoads(t *testing.T) {
	testkit.Need(t, "bash", "stty", "cat")
	calls := localCalls(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "perl"), []byte("#!/bin/sh\nexec cat 3>&1 >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := catUnderPTY(t)
	script := remote.ServeScript() + fmt.Sprintf("\nQ=1 FN=x %s probe %d 0; echo \"w ${SU:-0} ${SP:+1} ${EF:-0}\"\n", remote.Vars(calls), cmd.Process.Pid)
	sh := exec.CommandContext(waitCtx(t), "bash", "--noprofile", "--norc")
	sh.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "NOPERL=")
	sh.Stdin = strings.NewReader(script)
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "1 stty icanon echo\n") || !strings.HasSuffix(string(out), "\nw 8 1 0\n") {
		t.Errorf("with a perl that never loads, the probe said\n%s\nwant the modes from the stty shell (w 8 1 0)", out)
	}
}

// catUnderPTY starts cat on a terminal of this machine's for a probe run
// here, and ends it when t ends; what cat's terminal shows (the probe's
// marks) is read and dropped.
func catUnderPTY(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("cat")
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	go io.Copy(io.Discard, f)
	return cmd
}
