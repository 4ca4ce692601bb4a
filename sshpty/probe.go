package sshpty

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/remote"
	"golang.org/x/crypto/ssh"
)

// helper is a shell on the host that answers probes and runs kills: one
// channel of the connection, shared by the backend's live terminals. A
// probe then costs one round trip and the shell's builtins (plus a read
// of the modes, by perl or stty, when a process of the command ran since
// the last, since the shell keeps each command's echo flag, and dd and od
// for a select timeout), not a
// channel and a process start
// each, which on a host whose login shell reads a heavy .bashrc (bash
// does for commands sshd runs) is a second. Requests are numbered and
// answered in any order: a kill runs in the background while probes go
// on.
type helper struct {
	sess *ssh.Session
	in   io.WriteCloser
	done chan struct{} // closed when the reader has stopped

	mu      sync.Mutex // guards the fields below and orders writes to in
	seq     int
	waiting map[int]*answer
	dead    error
}

// answer is one request's lines, complete when done is closed.
type answer struct {
	out  bytes.Buffer
	done chan struct{}
}

// probeShellLine starts the probe shell: bash when there is one (its
// read -t 0 polls the terminal, which hands the line discipline what was
// typed, as the local poll does), else sh. A variable for tests.
var probeShellLine = `if command -v bash >/dev/null 2>&1; then exec bash --noprofile --norc; else exec sh; fi`

func startHelper(c *ssh.Client) (*helper, error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	in, err1 := s.StdinPipe()
	out, err2 := s.StdoutPipe()
	_, err3 := s.StderrPipe() // sent to /dev/null there; no copier here
	if err := errors.Join(err1, err2, err3); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Start(loginLine(probeShellLine)); err != nil {
		s.Close()
		return nil, err
	}
	h := &helper{sess: s, in: in, done: make(chan struct{}), waiting: map[int]*answer{}}
	go h.read(out)
	if _, err := io.WriteString(in, remote.ServeInput()); err != nil {
		err = h.lost(context.Background(), err)
		s.Close()
		return nil, err
	}
	return h, nil
}

// read hands each line to the request it answers, until the channel ends.
func (h *helper) read(out io.Reader) {
	defer close(h.done)
	br := bufio.NewReader(out)
	var err error
	var stray string // the first line that answers nothing: the login shell's own words
	for {
		var line string
		line, err = br.ReadString('\n')
		if err != nil {
			break
		}
		num, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, nerr := strconv.Atoi(num)
		if nerr != nil && stray == "" {
			stray = strings.TrimSpace(line[:min(len(line), 200)])
		}
		h.mu.Lock()
		if a := h.waiting[n]; a != nil {
			if rest == "." {
				delete(h.waiting, n)
				close(a.done)
			} else {
				a.out.WriteString(rest + "\n")
			}
		}
		h.mu.Unlock()
	}
	if stray != "" {
		// nologin runs no command: it says so and ends.
		err = fmt.Errorf("the login shell ran no command, saying %q (a login shell must run commands: sh, bash, zsh, fish, tcsh, not nologin): %w", stray, err)
	}
	h.mu.Lock()
	h.dead = err
	for n, a := range h.waiting {
		delete(h.waiting, n)
		close(a.done)
	}
	h.mu.Unlock()
}

// run runs call (a function of remote.ServeScript and its arguments) and returns
// what it printed; in the background when bg, so that later requests do
// not wait for it. ctx ending abandons the answer, not the call.
func (h *helper) run(ctx context.Context, call string, bg bool) ([]byte, error) {
	h.mu.Lock()
	if h.dead != nil {
		h.mu.Unlock()
		return nil, h.dead
	}
	h.seq++
	n := h.seq
	// prefork (see remote.ServeScript) once the answer is out.
	line := fmt.Sprintf("Q=%d; %s; echo \"$Q .\"; prefork\n", n, call)
	if bg {
		// Not holding the waiting shells' fifo and pipes (see serve.sh).
		// A grandchild: no zombie of it stays under the shell.
		line = fmt.Sprintf("( { unwait; Q=%d; %s; echo \"$Q .\"; } & )\n", n, call)
	}
	a := &answer{done: make(chan struct{})}
	h.waiting[n] = a
	_, err := io.WriteString(h.in, line)
	if err != nil {
		delete(h.waiting, n)
	}
	h.mu.Unlock()
	if err != nil {
		return nil, h.lost(ctx, err)
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		h.mu.Lock()
		delete(h.waiting, n)
		h.mu.Unlock()
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != nil && a.out.Len() == 0 {
		return nil, h.dead
	}
	return a.out.Bytes(), nil
}

// lost is the error of a request the shell could not be sent (err): its
// channel is ending, and the reader says why once it has read the rest
// (a login shell that runs no command says so before it ends). err where
// the reader has not ended within aliveWait, or ctx ends first.
func (h *helper) lost(ctx context.Context, err error) error {
	tm := time.NewTimer(aliveWait)
	defer tm.Stop()
	select {
	case <-h.done:
	case <-tm.C:
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead == nil {
		h.dead = err
	}
	return h.dead
}

func (h *helper) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
}

// close ends the shell (and a kill it runs in the background: the
// session it ends is being closed too) and waits for the reader, for
// aliveWait at most: a server that stopped answering never closes the
// channel, and the reader then ends with the connection.
func (h *helper) close() {
	h.sess.Close()
	tm := time.NewTimer(aliveWait)
	defer tm.Stop()
	select {
	case <-h.done:
	case <-tm.C:
	}
}

// shellRun runs call in the probe shell, starting it if needed (see
// helper.run).
func (b *Backend) shellRun(ctx context.Context, call string, bg bool) ([]byte, error) {
	h, err := b.probeShell()
	if err != nil {
		return nil, err
	}
	return h.run(ctx, call, bg)
}

// probe reads the terminal's state on the host, or reuses the last
// probe's answer (see remote.StateFresh), and keeps the answer.
func (t stateTerminal) probe() remote.Result {
	if r, ok := t.cache.Answer(); ok {
		return r
	}
	s := t.cache.Stamp()
	t.order.wait() // after the input written before it reached the terminal
	r, ok := t.probeNow()
	if ok {
		t.cache.Keep(r, s)
	}
	return r
}

// probeNow runs remote's probe (probe.sh) in the probe shell; false when the
// shell did not answer.
func (t *terminal) probeNow() (remote.Result, bool) {
	c, known := remote.Archs[t.info.arch]
	out, err := t.b.shellRun(context.Background(), fmt.Sprintf("FN=%s %s probe %d %d", t.nonce, remote.Vars(c), t.pid, t.cache.Hint()), false)
	if err != nil {
		return remote.Result{}, false
	}
	r := remote.Parse(out, c, known)
	if r.Fence > 0 && !t.out.AwaitFence(r.Fence) {
		r.Fg.Waiting = false // what the program wrote did not all arrive: not known to wait
	}
	return r, true
}

// EchoOff reports the terminal in line mode without echo: a password
// prompt. It costs a probe (see Foreground), unless one read the flag
// within remote.StateFresh.
func (t stateTerminal) EchoOff() bool {
	if off, ok := t.cache.EchoOff(); ok {
		return off
	}
	return t.probe().EchoOff
}

// Foreground reports the foreground program, read on the host through
// the probe shell: one round trip on the connection's probe channel and a
// few builtins of the shell there, plus a read of the echo flag (by
// perl, or a stty) when a process of the command ran since the shell
// last read it (see remote.Funcs), a subshell that writes a mark when the program
// looks blocked on its terminal and ran since the last mark, and a dd and
// od when it waits in select or poll with a timeout. The answer
// serves EchoOff and Foreground for remote.StateFresh while nothing that could
// change it happens.
func (t stateTerminal) Foreground() agentpty.Foreground { return t.probe().Fg }

// OutputPending reports output on its way: taken off the channel and not
// yet returned by Read, or returned while no later Read waits. Output the
// host has sent and the connection still carries cannot be seen; the
// probe's answer travels behind it on the same connection.
func (t stateTerminal) OutputPending() bool { return t.out.Pending() }

// end runs end.sh's endall in the background of the probe shell, with the
// other sessions that end at the same time (see endBatch), and returns
// what it printed.
func (t *terminal) end(ctx context.Context, hup, grace time.Duration) (string, error) {
	return t.b.endBatch(ctx, t.pid, hup, grace)
}
