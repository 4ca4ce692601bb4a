//go:build linux

package sshpty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/remote"
)

// The probe channel is the login's shell and nothing else on the host
// (its parent is the server's session process), and through it alone a
// session's state, input_hidden and WriteSecret work at read and read -s.
func TestStateThroughTheShell(t *testing.T) {
	_, c := connect(t)
	h, err := startHelper(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.run(waitCtx(t), `read -r c </proc/$PPID/comm; echo "$Q $c ${BASH_VERSION:+bash}"`, false)
	h.close()
	if f := strings.Fields(string(out)); err != nil || len(f) != 2 || !strings.HasPrefix(f[0], "sshd") || f[1] != "bash" {
		t.Fatalf("the probe shell and its parent: %q (%v); want bash below sshd", out, err)
	}
	m := newManager(t, c, agentpty.Options{})
	res := mustStart(t, m, agentpty.StartRequest{Command: `read -p 'a> ' x; echo "x=$x"; read -s -p 'b> ' y; echo "y=${#y}"; read z`, WaitUntil: agentpty.WaitUntilInput})
	if res.State != agentpty.StateWaitingInput || res.InputHidden || !strings.HasSuffix(res.Output, "a> ") {
		t.Fatalf("at read: %+v", res)
	}
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "one", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if w.State != agentpty.StateWaitingInput || !w.InputHidden || !strings.Contains(w.Output, "x=one") {
		t.Fatalf("at read -s: %+v", w)
	}
	s, err := m.WriteSecret(waitCtx(t), res.ID, []byte("s3cret-Xy"))
	if err == nil && !strings.Contains(s.Output, "y=9") {
		s = mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitFor: "y=9"})
	}
	if err != nil || strings.Contains(s.Output, "s3cret") {
		t.Fatalf("WriteSecret: %+v %v", s, err)
	}
}

// Options.SecretPrograms names the programs a secret may be typed into;
// over SSH the programs at the prompt cannot be named (the backend is no
// ProgramChecker), so Options.Validate refuses the pair and no session
// starts, where every WriteSecret used to be refused one by one.
func TestSecretProgramsRefusedOverSSH(t *testing.T) {
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{SecretPrograms: []string{"sudo"}})
	_, err := m.Start(waitCtx(t), agentpty.StartRequest{Command: "echo started", WaitFor: "started"})
	if !errors.Is(err, agentpty.ErrInvalid) || !strings.Contains(err.Error(), "Options.SecretPrograms") || !strings.Contains(err.Error(), "Options.Backend") {
		t.Fatalf("Start with SecretPrograms over SSH: %v; want ErrInvalid naming both fields", err)
	}
	if len(m.List()) != 0 {
		t.Errorf("sessions after the refusal: %+v", m.List())
	}
}

// One probe serves EchoOff, Foreground and EchoOff again, as a result
// reads them; input, a signal or a resize since the probe makes the next
// read probe anew.
func TestOneProbePerState(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out, st := startReadS(t, b)
	probes := probeCalls(t, b)
	lengthenFresh(t)
	st.changed() // as input does: the last answer is not reused
	n := probes()
	echo, fg, echo2 := st.EchoOff(), st.Foreground(), st.EchoOff()
	if got := probes() - n; got != 1 {
		t.Fatalf("three reads with nothing between them cost %d probes; want 1", got)
	}
	if !echo || !echo2 || !fg.Waiting || fg.Name != "bash" {
		t.Fatalf("at read -s: echo off %v, %v, foreground %+v", echo, echo2, fg)
	}
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got 2")
	if err := term.End(context.Background(), time.Second); err != nil {
		t.Error(err)
	}
}

// A probe of a program at rest starts no process: the echo flag the
// shell read last and the last mark written stand while nothing of the
// command ran. Once the program has run (it read a line, then turned echo
// off for read -s), the probe that sees it wait reads the flag anew and
// writes a new mark.
//
// Where perl reads the modes, the reads are the requests perl is sent.
func TestProbeKeepsTheEchoFlag(t *testing.T) {
	eachModesReader(t, testProbeKeepsTheEchoFlag)
}

func testProbeKeepsTheEchoFlag(t *testing.T, perl bool) {
	testkit.Need(t, "stty")
	b, term, out := readyTerm(t, `echo ready; read x; echo "got $x"; read -s y; echo done`)
	dir, sttyStarts := sttyCounter(t)
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.run(waitCtx(t), "PATH="+dir+":$PATH; hash -r", false); err != nil {
		t.Fatal(err)
	}
	modesReader(t, b, perl)
	starts := func() int {
		if perl {
			out, err := h.run(waitCtx(t), `echo "$Q ${SR:-0} ${EF:-0}"`, false)
			var sent, fallback int
			if _, serr := fmt.Sscanf(strings.TrimSpace(string(out)), "%d %d", &sent, &fallback); err != nil || serr != nil {
				t.Fatalf("the probe shell said %q: %v %v", out, err, serr)
			}
			return sent + fallback
		}
		return sttyStarts()
	}
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	// At rest: two probes that see it wait with the same mark. The first
	// probe that sees it wait may have read its run times while it was
	// still on a CPU (the kernel adds a running task's time when it stops).
	mark := 0
	for {
		a, b := probeTwice(st)
		if a.Fg.Waiting && b.Fg.Waiting && a.Fence == b.Fence {
			mark = b.Fence
			break
		}
		if ctx.Err() != nil {
			t.Fatal("bash never came to rest at read")
		}
	}
	n := starts()
	for i := 0; i < 5; i++ {
		r, ok := st.probeNow()
		if !ok || !r.Fg.Waiting || r.EchoOff || !r.EchoRead || r.Fence == 0 {
			t.Fatalf("at read: %+v", r)
		}
		if r.Fence != mark {
			t.Errorf("probe %d of a program at rest wrote a new mark (%d after %d)", i+1, r.Fence, mark)
		}
	}
	if got := starts() - n; got != 0 {
		t.Errorf("5 probes of a program at rest started stty %d times; want 0", got)
	}
	if _, err := term.Write([]byte("one\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got one")
	r, _ := st.probeNow()
	for ; !r.Fg.Waiting; r, _ = st.probeNow() {
		if ctx.Err() != nil {
			t.Fatal("bash never waited at read -s")
		}
	}
	if !r.EchoOff || r.Fence <= mark {
		t.Errorf("the first probe that sees read -s wait reads echo on, or writes no new mark: %+v", r)
	}
	if starts() == n {
		t.Error("the program ran and no stty read the flag anew")
	}
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "done")
}

// A program can run and block again between the probe's read of its run
// times and its look at what it waits in: woken, it turned echo off and
// reads again. The probe, seeing it wait, reads the run times again, and
// reads the flag and writes a mark anew rather than reusing those kept
// at rest. The probe shell is made to wake it there (a signal whose trap
// runs stty -echo) and to wait until it is back at its read.
func TestProbeSeesARunBetweenItsReads(t *testing.T) {
	testkit.Need(t, "stty")
	b, term, _ := readyTerm(t, `trap 'stty -echo' USR1; echo ready; while :; do read x; done`)
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	// One line, as every request to the probe shell.
	hook := `eval "$(declare -f echostart | sed '1s/^echostart/echostart0/')"; ` +
		`echostart() { echostart0; [ -n "$RACE" ] || return 0; RACE=; ` +
		`read -r RA0 RB </proc/$P/schedstat; read -r RN0 RB </proc/$P/syscall; kill -USR1 $P; RI=0; ` +
		`while [ $RI -lt 1000 ]; do RI=$((RI + 1)); read -r RA RB </proc/$P/schedstat; read -r RN RB </proc/$P/syscall; ` +
		`[ "$RA" != "$RA0" ] && [ "$RN" = "$RN0" ] && return 0; sleep 0.01; done; }`
	if _, err := h.run(waitCtx(t), hook, false); err != nil {
		t.Fatal(err)
	}
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	mark := 0
	for {
		a, b := probeTwice(st)
		if a.Fg.Waiting && b.Fg.Waiting && a.Fence == b.Fence && !b.EchoOff {
			mark = b.Fence
			break
		}
		if ctx.Err() != nil {
			t.Fatal("bash never came to rest at read")
		}
	}
	if _, err := h.run(waitCtx(t), "RACE=1", false); err != nil {
		t.Fatal(err)
	}
	r, ok := st.probeNow()
	if !ok || !r.Fg.Waiting || !r.EchoOff || r.Fence <= mark {
		t.Errorf("bash ran stty -echo and read again between the probe's reads: %+v %v; want it waiting, echo off, a new mark after %d", r, ok, mark)
	}
}

// A program that ran since the last probe, and runs again between the
// probe's read of its run times and its look (a start's first probe
// meets this when the first line comes before the program's exec), has
// its modes read anew by perl, where perl reads them, not by a stty the
// probe shell starts: here 1.2 ms of a 4 ms start. The probe shell wakes
// bash with a signal before the reads (its trap turns echo off) and
// again between them (echo on): the answer says echo on, perl was sent
// both reads, and no stty started. Before, the second read was a stty.
func TestProbeRereadsByPerlAfterARun(t *testing.T) {
	testkit.Need(t, "stty", "perl")
	b, term, _ := readyTerm(t, `trap 'stty -echo' USR1; trap 'stty echo' USR2; echo ready; while :; do read x; done`)
	dir, sttyStarts := sttyCounter(t)
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	modesReader(t, b, true)
	// kick SIG wakes bash with SIG and waits until it ran and is back at
	// its read; echostart is wrapped to kick it before and after its read
	// of the run times, when RACE is set. One line, as every request.
	hook := `PATH=` + dir + `:$PATH; hash -r; ` +
		`kick() { read -r RA0 RB </proc/$P/schedstat; read -r RN0 RB </proc/$P/syscall; kill -$1 $P; RI=0; ` +
		`while [ $RI -lt 1000 ]; do RI=$((RI + 1)); read -r RA RB </proc/$P/schedstat; read -r RN RB </proc/$P/syscall; ` +
		`[ "$RA" != "$RA0" ] && [ "$RN" = "$RN0" ] && return 0; sleep 0.01; done; }; ` +
		`eval "$(declare -f echostart | sed '1s/^echostart/echostart0/')"; ` +
		`echostart() { [ -n "$RACE" ] || { echostart0; return 0; }; RACE=; kick USR1; echostart0; kick USR2; }`
	if _, err := h.run(waitCtx(t), hook, false); err != nil {
		t.Fatal(err)
	}
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	for {
		a, b := probeTwice(st)
		if a.Fg.Waiting && b.Fg.Waiting && a.Fence == b.Fence && !b.EchoOff {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("bash never came to rest at read")
		}
	}
	reads := func() int {
		out, err := h.run(waitCtx(t), `echo "$Q ${SR:-0}"`, false)
		n, serr := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || serr != nil {
			t.Fatalf("the probe shell said %q: %v %v", out, err, serr)
		}
		return n
	}
	n := reads()
	if _, err := h.run(waitCtx(t), "RACE=1", false); err != nil {
		t.Fatal(err)
	}
	r, ok := st.probeNow()
	if !ok || !r.Fg.Waiting || r.EchoOff {
		t.Errorf("bash turned echo off, then on between the probe's reads: %+v %v; want it waiting, echo on", r, ok)
	}
	if got := reads() - n; got != 2 {
		t.Errorf("the probe sent perl %d reads of the modes; want 2: one before the run, one after", got)
	}
	if n := sttyStarts(); n != 0 {
		t.Errorf("the probe started stty %d times; want 0: perl reads the modes again", n)
	}
}

// sttyCounter writes, in a directory of t's, a stty that counts its
// starts and runs the real one. The server is local: first in the probe
// shell's PATH, it counts the stty starts of the probes. It returns the
// directory and what reads the count.
func sttyCounter(t *testing.T) (dir string, starts func() int) {
	t.Helper()
	real, err := exec.LookPath("stty")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	count := filepath.Join(dir, "count")
	wrapper := fmt.Sprintf("#!/bin/sh\necho >>%s\nexec %s \"$@\"\n", count, real)
	if err := os.WriteFile(filepath.Join(dir, "stty"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, func() int {
		b, _ := os.ReadFile(count)
		return len(b)
	}
}

// Input, a resize or a signal ends the reuse of a probe's answer:
// Foreground and EchoOff ask the host again after any of them, however
// fresh the answer. The control, the same reads with nothing in between,
// is answered from the last probe.
func TestInputResizeSignalEndTheReuse(t *testing.T) {
	_, term, out := readyTerm(t, `trap '' USR1; echo ready; read x; echo "got $x"`)
	waitRead(t, term, "read")
	st := term.(stateTerminal)
	lastAt := func() time.Time {
		if l := st.cache.Last(); l != nil {
			return l.At()
		}
		return time.Time{}
	}
	lengthenFresh(t)
	reads := map[string]func(){"Foreground": func() { st.Foreground() }, "EchoOff": func() { st.EchoOff() }}
	for _, tc := range []struct {
		name string
		act  func() error
	}{
		{"nothing", func() error { return nil }},
		{"input", func() error { _, err := term.Write([]byte("y")); return err }},
		{"resize", func() error { return term.Resize(100, 30) }},
		{"signal", func() error { return term.Signal(syscall.SIGUSR1) }},
	} {
		for what, read := range reads {
			st.changed() // the next read probes
			st.Foreground()
			at := lastAt()
			if err := tc.act(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			read()
			if probed, want := lastAt() != at, tc.name != "nothing"; probed != want {
				t.Errorf("%s after %s: probed anew %v, want %v", what, tc.name, probed, want)
			}
		}
	}
	if _, err := term.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got ")
}

// The echo flag is kept while no process of the command runs, so a change
// made meanwhile by a process outside the command's tree (stty from
// elsewhere) is seen once one of the command's processes runs: at once
// for a program blocked reading the terminal (the change of modes wakes
// it), and for one that sleeps elsewhere (pause) only once it runs (a
// signal's handler, by send_signal), as the README says.
func TestEchoChangedFromOutside(t *testing.T) {
	testkit.Need(t, "stty", "/usr/bin/python3")
	_, c := connect(t)
	b := New(c)
	for _, tc := range []struct {
		name, script string
		seenAtOnce   bool
	}{
		{"reading", `trap 'echo ran' USR1; echo "on $(tty) ready"; while :; do read x; done`, true},
		// python says ready once it has loaded, which takes it 20 ms of CPU.
		{"paused", `exec /usr/bin/python3 -c '
import os, signal
signal.signal(signal.SIGUSR1, lambda *a: print("ran", flush=True))
print("on", os.ttyname(0), "ready", flush=True)
while True: signal.pause()
'`, false},
	} {
		term, out := startTerm(t, b, tc.script)
		out.waitFor(t, "ready")
		dev := strings.Fields(strings.SplitN(out.String(), "on ", 2)[1])[0]
		st := term.(stateTerminal)
		// The server is local: the terminal is this machine's, and so are
		// the command's run times.
		ran := fmt.Sprintf("/proc/%d/schedstat", term.PID())
		// At rest: two probes alike, the second from the kept flag, with
		// no run of the program between them.
		ctx := waitCtx(t)
		for {
			before, _ := os.ReadFile(ran)
			a, b := probeTwice(st)
			after, _ := os.ReadFile(ran)
			if a == b && string(before) == string(after) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: the program never came to rest", tc.name)
			}
		}
		if r, _ := st.probeNow(); r.EchoOff {
			t.Fatalf("%s: echo off before the change", tc.name)
		}
		before, err := os.ReadFile(ran)
		if err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command("sh", "-c", "stty -echo <"+dev).CombinedOutput(); err != nil {
			t.Fatalf("stty -echo <%s: %v %s", dev, err, msg)
		}
		if tc.seenAtOnce {
			// Woken, it may not have run yet when the probe reads its run
			// times: the probe follows its run.
			within(t, 10*time.Second, func() bool {
				now, err := os.ReadFile(ran)
				return err != nil || string(now) != string(before)
			}, tc.name+": the reader ran once the modes changed")
		}
		if r, _ := st.probeNow(); r.EchoOff != tc.seenAtOnce {
			t.Errorf("%s: after stty -echo from outside, before a signal: echo off %v; want %v", tc.name, r.EchoOff, tc.seenAtOnce)
		}
		if err := term.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "ran")
		if r, _ := st.probeNow(); !r.EchoOff {
			t.Errorf("%s: echo still on once the command ran after stty -echo from outside", tc.name)
		}
		closeTerm(term, out)
	}
}

// probeTwice is two probes' answers, one after the other.
func probeTwice(st stateTerminal) (a, b remote.Result) {
	a, _ = st.probeNow()
	b, _ = st.probeNow()
	return a, b
}

// Output still on its way counts: a program that prints a flood and then
// reads is seen waiting only once the flood has arrived here (the
// probe's mark, written to the terminal after it, comes behind it). The
// flood is read slowly, so that much of it is still on the connection
// when the program reaches its read.
func TestWaitingAfterAFlood(t *testing.T) {
	_, c := connect(t)
	term, err := New(c).Start(context.Background(), agentpty.Command{Argv: []string{"bash", "-c", `head -c 4000000 /dev/zero | tr '\0' x; echo; echo END-OF-FLOOD; read x`}, Env: []string{"TERM=xterm"}, Cols: 80, Rows: 24, Name: "pty-1"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []byte
	b := make([]byte, 4096) // cleared before each Read, under mu
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			clear(b)
			mu.Unlock()
			n, err := term.Read(b)
			mu.Lock()
			got = append(got, b[:n]...)
			mu.Unlock()
			if err != nil {
				return
			}
			time.Sleep(time.Millisecond) // a slow reader, not a wait for anything: 4 KB a millisecond
		}
	}()
	defer func() {
		term.Close()
		<-done
	}()
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	for {
		r, _ := st.probeNow()
		if r.Fg.Waiting {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the program never waited at its read")
		}
	}
	// What has arrived: what the reader appended, what Read has yet to
	// return, and a chunk Read returned that the reader has not appended
	// yet, still in b (Read fills b under Output's lock, held here; b is
	// cleared before each Read, so it holds that chunk or one already
	// appended).
	var arrived, withHeld string
	st.out.Held(func(buf []byte) {
		mu.Lock()
		pending, held := string(buf), string(bytes.TrimRight(b, "\x00"))
		arrived = string(got) + pending
		withHeld = string(got) + held + pending
		mu.Unlock()
	})
	if !strings.Contains(arrived, "END-OF-FLOOD") && !strings.Contains(withHeld, "END-OF-FLOOD") {
		t.Errorf("the program was seen waiting with %d bytes of its output here, without its last line", len(withHeld))
	}
}

// lengthenFresh makes probes' answers serve for an hour while t runs, so
// that a test tells a reuse from its end by what happened, not by how
// fast the machine is.
func lengthenFresh(t *testing.T) {
	saved := remote.StateFresh
	t.Cleanup(func() { remote.StateFresh = saved })
	remote.StateFresh = time.Hour
}
