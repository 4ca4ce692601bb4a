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
	"github.com/agentpty/agentpty/remote"
	"k8s.io/client-go/tools/remotecommand"
)

// probeTimeout bounds a probe the session asks for without a context (its
// state, a signal).
const probeTimeout = 10 * time.Second

// probe runs remote.ExecScript's action in the container, as an exec of
// its own without a terminal, under a number of its own (the number of
// a state probe's fence), and returns its answer's lines without the
// number or the final ".". It learns the leader's pid from the answer.
func (t *terminal) probe(ctx context.Context, action string, args ...string) ([]string, error) {
	hint := "-"
	if l := t.leader.Load(); l != nil {
		hint = strconv.Itoa(l.pid)
	}
	n := strconv.FormatUint(t.probes.Add(1), 10)
	argv := append([]string{"/bin/sh", "-c", remote.ExecShell, "kubepty", remote.ExecScript(), t.nonce, hint, n, action}, args...)
	exe, err := t.b.executor(argv, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	var out lockedBuffer // a stream cut short by ctx may still be writing
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out})
	var lines []string
	ended := false
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		l, ok := strings.CutPrefix(l, n+" ")
		switch {
		case !ok:
		case l == ".":
			ended = true
		default:
			lines = append(lines, l)
		}
	}
	if !ended {
		if err == nil {
			err = errors.New("the answer was cut short")
		}
		return nil, fmt.Errorf("agentpty: %s: %s: probe %s: %w", t.name, t.b, action, err)
	}
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
// its nonce, those in the command's session, and their descendants, on
// the local library's schedule (remote.EndArgs: SIGTERM, SIGHUP
// remote.HupDelay later, SIGKILL once grace has passed), run by one
// probe in the container (end.sh); when ctx ends first, SIGKILL at once.
// Once they are gone it waits for the stream's status (see remote.AwaitStatus).
func (t *terminal) End(ctx context.Context, grace time.Duration) error {
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		t.sending(s)
	}
	lines, err := t.probe(ctx, "end", remote.EndArgs(remote.HupDelay, grace)...)
	if ctx.Err() != nil {
		kctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		lines, err = t.probe(kctx, "end", remote.EndArgs(0, 0)...)
	}
	if err != nil {
		return err
	}
	if _, left := remote.EndAnswer(lines); left != "" {
		return fmt.Errorf("agentpty: %s: %s: processes survived SIGKILL: %s", t.name, t.b, left)
	}
	remote.AwaitStatus(t.exited)
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
	t.signalling.RLock()
	defer t.signalling.RUnlock()
	t.sending(s) // before: the exit may arrive before the answer
	defer t.cache.Changed()
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

// probeState probes the terminal with remote's probe. A probe that
// fails (the container has no shell, the connection is gone) reports
// nothing known: not waiting, echo on. The answer is kept (see
// remote.ProbeCache), and the time the probe took is the backend's
// probeTook.
func (t *terminal) probeState() remote.Result {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	s := t.cache.Stamp()
	c, known := t.b.calls(ctx, t)
	begin := time.Now()
	lines, err := t.probe(ctx, "state", remote.Vars(c))
	t.b.probeTook.Store(int64(time.Since(begin)))
	var r remote.Result
	if err == nil {
		r = remote.Parse([]byte(strings.Join(lines, "\n")), c, known)
	}
	t.cache.Keep(r, s)
	return r
}

// Foreground reports the terminal's foreground program now: a probe of
// its own, begun once typed input has had time to reach the terminal
// (see awaitInput), which waits for its fence's mark (see remote.Output.AwaitFence),
// and whose answer serves the EchoOff that follows (see remote.ProbeCache).
func (t *terminal) Foreground() agentpty.Foreground {
	t.awaitInput()
	r := t.probeState()
	if r.Fence > 0 && !t.out.AwaitFence(r.Fence) {
		r.Fg.Waiting = false // what the program wrote did not all arrive: not known to wait
	}
	return r.Fg
}

// EchoOff reports a terminal in line mode with echo off: a password
// prompt. It reuses the last probe's echo flag while that serves (see
// remote.ProbeCache), and waits neither for input nor for a mark: the
// session's reader asks it.
func (t *terminal) EchoOff() bool {
	if off, ok := t.cache.EchoOff(); ok {
		return off
	}
	return t.probeState().EchoOff
}

// maxInputWait bounds awaitInput's wait.
const maxInputWait = time.Second

// awaitInput waits, after a Write, until the input has likely reached the
// terminal: half as long as the backend's last state probe took (at most
// maxInputWait), so that the probe, which looks at the end of its own
// time, looks one and a half probes after the input left. The exec API
// acknowledges no input, and a probe that looked before the input
// arrived would see the program still blocked from before; the input
// goes the probe's way (client, API server, kubelet, runtime), on
// streams already open.
func (t *terminal) awaitInput() {
	typed := t.typed.Load()
	if typed == 0 {
		return
	}
	d := min(time.Duration(t.b.probeTook.Load())/2, maxInputWait) - time.Since(time.Unix(0, typed))
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-t.exited:
	case <-t.ctx.Done():
	}
}

// calls are the system calls of the container's architecture, learnt
// with the backend's first state probe (uname -m); known is false for an
// architecture remote.Archs does not list.
func (b *Backend) calls(ctx context.Context, t *terminal) (c remote.Calls, known bool) {
	arch := b.arch.Load()
	if arch == nil {
		lines, err := t.probe(ctx, "arch")
		if err != nil {
			return remote.Calls{}, false
		}
		for _, l := range lines {
			if a, ok := strings.CutPrefix(l, "arch "); ok {
				arch = &a
				b.arch.Store(arch)
			}
		}
		if arch == nil {
			return remote.Calls{}, false
		}
	}
	c, known = remote.Archs[*arch]
	return c, known
}
