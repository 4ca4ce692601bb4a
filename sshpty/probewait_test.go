//go:build linux

package sshpty

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
)

// waiting is what the probe shell says of its waiting shells (see
// helperFuncs): the fifos' directory, the pid of the shell that waits to
// exec stty and of the one that waits to write a mark, and its own pid.
type waiting struct {
	dir            string
	stty, mark, sh int
}

func askWaiting(t *testing.T, b *Backend) waiting {
	t.Helper()
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.run(waitCtx(t), `echo "$Q w ${PD:--} ${SA:-0} ${SB:-0} $$"`, false)
	if err != nil {
		t.Fatal(err)
	}
	var w waiting
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "w %s %d %d %d", &w.dir, &w.stty, &w.mark, &w.sh); err != nil {
		t.Fatalf("the probe shell said %q: %v", out, err)
	}
	if w.dir == "-" {
		w.dir = ""
	}
	return w
}

// parentOf is pid's parent on this machine (the server is local), or 0.
func parentOf(pid int) int {
	st, _ := proc.ReadStat(pid, make([]byte, 512))
	return st.PPID
}

// waiters counts the probe shell's children that wait on its stty fifo
// and on its mark fifo.
func waiters(w waiting) (stty, mark int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != w.sh {
			continue
		}
		switch l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid)); l {
		case w.dir + "/a":
			stty++
		case w.dir + "/b":
			mark++
		}
	}
	return stty, mark
}

// settle waits, a bounded while, for ok.
func settle(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, not %s", what)
		}
		time.Sleep(10 * time.Millisecond) // a bounded poll of the host's process table
	}
}

// gone waits, a bounded while, until pid has ended on this machine (the
// server is local) and dir is removed.
func gone(t *testing.T, pid int, dir string) {
	t.Helper()
	settle(t, func() bool {
		_, err := os.Stat(dir)
		return !alive(pid) && (dir == "" || os.IsNotExist(err))
	}, fmt.Sprintf("gone: process %d and directory %q", pid, dir))
}

// TestProbeWaitingShells: a probe after the program ran starts neither
// stty nor the mark's writer itself; shells forked beforehand wait for
// them, and new ones replace them. When the probe shell ends, so do they,
// and their fifos go.
func TestProbeWaitingShells(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `echo ready; read x; echo "got $x"; read -s y; echo "got2 $y"`)
	out.waitFor(t, "ready")
	fence, _ := waitRead(t, term, "read")
	w := askWaiting(t, b)
	if w.dir == "" || w.stty == 0 || w.mark == 0 {
		t.Fatalf("no shells wait for a probe's stty and mark: %+v", w)
	}
	for _, pid := range []int{w.stty, w.mark} {
		if p := parentOf(pid); p != w.sh {
			t.Fatalf("waiting shell %d has parent %d, not the probe shell %d", pid, p, w.sh)
		}
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
	if w2.stty == w.stty || w2.mark == w.mark || w2.stty == 0 || w2.mark == 0 {
		t.Errorf("the waiting shells were not used and replaced: before %+v, after %+v", w, w2)
	}
	// The used shells end; one of each kind waits (a mark's shell that
	// had not opened its fifo yet may leave its line to the next one,
	// and wait in its place).
	gone(t, w.stty, "")
	settle(t, func() bool { a, m := waiters(w2); return a == 1 && m == 1 }, "one waiting shell of each kind")
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got2 pw")
	term.Close()
	<-out.done
	gone(t, w2.stty, w2.dir)
	gone(t, w2.mark, "")
}

// TestProbeShellKilled: when the probe shell is killed on the host, its
// waiting shells end too and remove their fifos.
func TestProbeShellKilled(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `echo ready; exec cat`)
	defer func() {
		term.Close()
		<-out.done
	}()
	out.waitFor(t, "ready")
	w := askWaiting(t, b)
	if w.dir == "" || w.stty == 0 || w.mark == 0 {
		t.Fatalf("no shells wait for a probe's stty and mark: %+v", w)
	}
	t.Cleanup(func() { // what a failure left behind
		for _, pid := range []int{w.stty, w.mark} {
			if alive(pid) && parentOf(pid) == 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		os.RemoveAll(w.dir)
	})
	if err := syscall.Kill(w.sh, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone(t, w.stty, w.dir)
	gone(t, w.mark, "")
}

// TestProbeWaitingShellKilled: when a waiting shell is killed on the
// host, the probe still reads the echo flag and writes its mark, starting
// them itself, and the waiting stops for that connection.
func TestProbeWaitingShellKilled(t *testing.T) {
	for _, which := range []string{"stty", "mark"} {
		t.Run(which, func(t *testing.T) {
			_, c := connect(t)
			b := New(c)
			term, out := startTerm(t, b, `echo ready; read -s x; echo "got $x"; read y; echo "done $y"`)
			defer func() {
				term.Close()
				<-out.done
			}()
			out.waitFor(t, "ready")
			fence, off := waitRead(t, term, "read -s")
			if !off {
				t.Fatal("echo on at read -s")
			}
			w := askWaiting(t, b)
			pid := w.stty
			if which == "mark" {
				pid = w.mark
			}
			if pid == 0 {
				t.Fatalf("no %s shell waits: %+v", which, w)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			gone(t, pid, "")
			if _, err := term.Write([]byte("pw\r")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "got pw")
			next, off := waitRead(t, term, "read")
			if off || next <= fence {
				t.Errorf("at read after the %s shell was killed: echo off %v, mark %d after %d; want echo on and a new mark", which, off, next, fence)
			}
			if w2 := askWaiting(t, b); w2.dir != "" || w2.stty != 0 || w2.mark != 0 {
				t.Errorf("the waiting went on after the %s shell was lost: %+v", which, w2)
			}
			gone(t, 0, w.dir)
			if _, err := term.Write([]byte("end\r")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "done end")
		})
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
