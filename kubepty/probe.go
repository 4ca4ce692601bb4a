package kubepty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentpty/agentpty"
	"k8s.io/client-go/tools/remotecommand"
)

// probeTimeout bounds a probe the session asks for without a context (its
// state, a signal).
const probeTimeout = 10 * time.Second

// hupDelay is how long after SIGTERM what is left gets SIGHUP, as locally.
const hupDelay = 200 * time.Millisecond

// probe runs probeScript's action in the container, as an exec of its own
// without a terminal, and returns its answer's lines (without the final
// "."). It learns the leader's pid from the answer.
func (t *terminal) probe(ctx context.Context, action string, args ...string) ([]string, error) {
	hint := "-"
	if l := t.leader.Load(); l != nil {
		hint = strconv.Itoa(l.pid)
	}
	argv := append([]string{"sh", "-c", probeShell, "kubepty", probeScript, t.nonce, hint, action}, args...)
	exe, err := t.b.executor(argv, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	var out lockedBuffer // a stream cut short by ctx may still be writing
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) == 0 || lines[len(lines)-1] != "." {
		if err == nil {
			err = errors.New("the answer was cut short")
		}
		return nil, fmt.Errorf("agentpty: %s: %s: probe %s: %w", t.name, t.b, action, err)
	}
	lines = lines[:len(lines)-1]
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "leader" {
			if pid, err := strconv.Atoi(f[1]); err == nil {
				t.leader.Store(&leader{pid: pid})
			}
		}
	}
	return lines, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// End ends every process of the session in the container: those carrying
// its nonce, those in the command's session, and their descendants.
// SIGTERM, SIGHUP hupDelay later, SIGKILL once grace has passed, run by
// one probe in the container; when ctx ends first, SIGKILL at once.
func (t *terminal) End(ctx context.Context, grace time.Duration) error {
	cs := func(d time.Duration) string { return strconv.FormatInt(int64(d/(10*time.Millisecond)), 10) }
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		t.sending(s)
	}
	lines, err := t.probe(ctx, "end", cs(min(hupDelay, grace)), cs(grace))
	if ctx.Err() != nil {
		kctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		lines, err = t.probe(kctx, "end", "0", "0")
	}
	if err != nil {
		return err
	}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "left"); ok {
			return fmt.Errorf("agentpty: %s: %s: processes survived SIGKILL:%s", t.name, t.b, rest)
		}
	}
	return nil
}

// Signal sends sig to the terminal's foreground process group (or the
// command when there is none) with kill in the container: the exec API
// carries no signals.
func (t *terminal) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	name := strings.TrimPrefix(signalName(s), "SIG")
	if !ok || name == "" {
		return fmt.Errorf("%w: %s: %s: signal %v has no name kill knows", agentpty.ErrInvalid, t.name, t.b, sig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	t.sending(s) // before: the exit may arrive before the answer
	lines, err := t.probe(ctx, "sig", name)
	leader := false
	for _, l := range lines {
		leader = leader || l == "sent leader"
	}
	if !leader {
		t.unsent(s)
	}
	if err != nil {
		return err
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "sent") {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: %s: no process to signal", agentpty.ErrExited, t.name, t.b)
}

// snapshot is what one state probe learnt.
type snapshot struct {
	echoOff bool
	fg      agentpty.Foreground
}

// state probes the terminal. A probe that fails (the container has no
// shell, the connection is gone) reports nothing known: not waiting,
// echo on.
func (t *terminal) state() snapshot {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	lines, err := t.probe(ctx, "state")
	if err != nil {
		return snapshot{}
	}
	return parseState(lines)
}

// EchoOff reports a terminal in line mode with echo off: a password prompt.
func (t *terminal) EchoOff() bool { return t.state().echoOff }

// Foreground reports the terminal's foreground program now.
func (t *terminal) Foreground() agentpty.Foreground { return t.state().fg }

// parseState reads the state action's answer: "stty ..." (stty -a),
// "arch MACHINE", "fg PGID", and a "p PID STATE TTYFDS|SYSCALL|COMM" line
// per process of the foreground group.
func parseState(lines []string) snapshot {
	var sn snapshot
	calls := archCalls["x86_64"]
	pgid, running := 0, false
	var leaderName string
	for _, l := range lines {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "stty":
			modes := " " + strings.Join(strings.Fields(strings.ReplaceAll(rest, ";", " ")), " ") + " "
			sn.echoOff = strings.Contains(modes, " -echo ") && strings.Contains(modes, " icanon ")
		case "arch":
			if c, ok := archCalls[rest]; ok {
				calls = c
			}
		case "fg":
			pgid, _ = strconv.Atoi(rest)
		case "p":
			head, tail, _ := strings.Cut(rest, "|")
			sys, comm, _ := strings.Cut(tail, "|")
			f := strings.Fields(head)
			if len(f) < 2 {
				continue
			}
			pid, _ := strconv.Atoi(f[0])
			if pid == pgid {
				leaderName = comm
			}
			switch f[1] {
			case "R", "D":
				running = true
			case "S":
				if !sn.fg.Waiting && calls.waitsOnTTY(sys, f[2:]) {
					sn.fg.Waiting, sn.fg.Name, sn.fg.PID = true, comm, pid
				}
			}
		}
	}
	if running {
		sn.fg.Waiting = false
	}
	if !sn.fg.Waiting && pgid > 0 {
		sn.fg.Name, sn.fg.PID = leaderName, pgid
	}
	return sn
}

// sysCalls are an architecture's numbers of the system calls a program
// waits for its terminal in: read (on the terminal's descriptor), and
// select, poll and epoll (with the terminal among its descriptors).
type sysCalls struct {
	read, multi map[uint64]bool
}

var archCalls = map[string]sysCalls{
	"x86_64":  {read: set(0, 19, 17), multi: set(23, 270, 7, 271, 232, 281, 441)},
	"aarch64": {read: set(63, 65, 67), multi: set(72, 73, 22, 441)},
}

func set(n ...uint64) map[uint64]bool {
	m := map[uint64]bool{}
	for _, x := range n {
		m[x] = true
	}
	return m
}

// waitsOnTTY reports a process blocked in sys (a /proc/PID/syscall line)
// waiting for the terminal, which it holds on ttyFDs.
func (c sysCalls) waitsOnTTY(sys string, ttyFDs []string) bool {
	f := strings.Fields(sys)
	if len(f) < 3 || len(ttyFDs) == 0 {
		return false
	}
	nr, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return false
	}
	if c.multi[nr] {
		return true
	}
	if !c.read[nr] {
		return false
	}
	fd, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err != nil {
		return false
	}
	for _, t := range ttyFDs {
		if t == strconv.FormatUint(fd, 10) {
			return true
		}
	}
	return false
}
