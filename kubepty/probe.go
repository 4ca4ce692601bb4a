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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/remote"
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
	argv := append([]string{"/bin/sh", "-c", probeShell, "kubepty", probeScript, t.nonce, hint, action}, args...)
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
// one probe in the container; when ctx ends first, SIGKILL at once. Once
// they are gone it waits for the stream's status (see awaitStatus).
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
	t.awaitStatus()
	return nil
}

// statusBound is how long End waits, once the processes are gone, for
// the command's status on the exec stream.
const statusBound = 5 * time.Second

// awaitStatus waits up to statusBound for the stream to carry the
// command's status: the session closes the stream after End, and a status
// not yet read would be lost.
func (t *terminal) awaitStatus() {
	tm := time.NewTimer(statusBound)
	defer tm.Stop()
	select {
	case <-t.exited:
	case <-tm.C:
	}
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
	defer t.cache.changed()
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

// probeState probes the terminal with remotestate's probe. A probe that
// fails (the container has no shell, the connection is gone) reports
// nothing known: not waiting, echo on. The answer is kept for EchoOff
// (see probeCache), and the time the probe took is the backend's
// probeTook.
func (t *terminal) probeState() remote.Result {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	gen := t.cache.gen.Load()
	c, known := t.b.calls(ctx, t)
	begin := time.Now()
	lines, err := t.stateLines(ctx, remote.Vars(c))
	t.b.probeTook.Store(int64(time.Since(begin)))
	var r remote.Result
	if err == nil {
		r = remote.Parse([]byte(strings.Join(lines, "\n")), c, known)
	}
	t.cache.keep(r, gen)
	return r
}

// stateLines runs the state action with vars (remote.Vars) under a
// probe number of its own, the number of its fence's mark, and returns
// remotestate's lines without the number.
func (t *terminal) stateLines(ctx context.Context, vars string) ([]string, error) {
	n := strconv.FormatUint(t.probes.Add(1), 10)
	lines, err := t.probe(ctx, "state", vars, n)
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, n+" ")
	}
	return lines, err
}

// Foreground reports the terminal's foreground program now: a probe of
// its own, begun once typed input has had time to reach the terminal
// (see awaitInput), which waits for its fence's mark (see awaitFence),
// and whose answer serves the EchoOff that follows (see probeCache).
func (t *terminal) Foreground() agentpty.Foreground {
	t.awaitInput()
	r := t.probeState()
	if r.Fence > 0 && !t.awaitFence(r.Fence) {
		r.Fg.Waiting = false // what the program wrote did not all arrive: not known to wait
	}
	return r.Fg
}

// EchoOff reports a terminal in line mode with echo off: a password
// prompt. It reuses the last probe's answer while that serves, and
// waits neither for input nor for a mark: the session's reader asks it.
func (t *terminal) EchoOff() bool {
	if r, ok := t.cache.answer(); ok {
		return r.EchoOff
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

// stateReuse bounds how long after its answer came a probe's answer
// serves EchoOff: the library asks it right after Foreground, and the
// session's reader on every chunk of output.
const stateReuse = 100 * time.Millisecond

// probeCache keeps the last probe's answer for EchoOff while nothing that
// could change the terminal's state happened since the probe began. Its
// zero value holds no answer.
type probeCache struct {
	// gen counts what could change the state: output read, input
	// written, a signal sent, a resize.
	gen atomic.Uint64

	mu   sync.Mutex // guards the fields below
	last *remote.Result
	at   time.Time // when last came
	lgen uint64    // gen when its probe began
}

// changed counts output read, input, a signal or a resize.
func (c *probeCache) changed() { c.gen.Add(1) }

// keep keeps r, the answer of a probe begun at gen.
func (c *probeCache) keep(r remote.Result, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.at, c.lgen = &r, time.Now(), gen
}

// answer is the kept answer, while nothing changed and within stateReuse
// of its coming.
func (c *probeCache) answer() (remote.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.last; p != nil && c.gen.Load() == c.lgen && time.Since(c.at) < stateReuse {
		return *p, true
	}
	return remote.Result{}, false
}

// calls are the system calls of the container's architecture, learnt
// with the backend's first state probe (uname -m); known is false for an
// architecture remotestate does not list.
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
