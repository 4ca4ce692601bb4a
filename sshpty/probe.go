package sshpty

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/termwait"
	"golang.org/x/crypto/ssh"
)

// helper is a shell on the host that answers probes and runs kills: one
// channel of the connection, shared by the backend's live terminals. A
// probe then costs one round trip and the shell's builtins (plus stty,
// and dd and od for a select timeout), not a channel and a process start
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
	// bash when there is one: its read -t 0 polls the terminal, which
	// hands the line discipline what was typed, as the local poll does.
	if err := s.Start(`if command -v bash >/dev/null 2>&1; then exec bash --noprofile --norc; else exec sh; fi`); err != nil {
		s.Close()
		return nil, err
	}
	h := &helper{sess: s, in: in, done: make(chan struct{}), waiting: map[int]*answer{}}
	funcs := helperFuncs + killFunc + "\n"
	if noPerl {
		funcs = "NOPERL=1\n" + funcs
	}
	if _, err := io.WriteString(in, funcs); err != nil {
		s.Close()
		return nil, err
	}
	go h.read(out)
	return h, nil
}

// read hands each line to the request it answers, until the channel ends.
func (h *helper) read(out io.Reader) {
	defer close(h.done)
	br := bufio.NewReader(out)
	var err error
	for {
		var line string
		line, err = br.ReadString('\n')
		if err != nil {
			break
		}
		num, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, _ := strconv.Atoi(num)
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
	h.mu.Lock()
	h.dead = err
	for n, a := range h.waiting {
		delete(h.waiting, n)
		close(a.done)
	}
	h.mu.Unlock()
}

// run runs call (a function of helperFuncs and its arguments) and returns
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
	line := fmt.Sprintf("Q=%d; %s; echo \"$Q .\"\n", n, call)
	if bg {
		line = fmt.Sprintf("{ Q=%d; %s; echo \"$Q .\"; } &\n", n, call)
	}
	a := &answer{done: make(chan struct{})}
	h.waiting[n] = a
	_, err := io.WriteString(h.in, line)
	if err != nil {
		delete(h.waiting, n)
		h.dead = err
	}
	h.mu.Unlock()
	if err != nil {
		return nil, err
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

func (h *helper) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
}

// close ends the shell (and a kill it runs in the background: the
// session it ends is being closed too) and waits for the reader.
func (h *helper) close() {
	h.sess.Close()
	<-h.done
}

// helperRun runs call in the backend's probe shell.
func (t *terminal) helperRun(ctx context.Context, call string, bg bool) ([]byte, error) {
	h, err := t.b.probeShell()
	if err != nil {
		return nil, err
	}
	return h.run(ctx, call, bg)
}

// sysCalls are a host architecture's numbers of the system calls that
// wait on descriptors: read (one descriptor), select and poll (sets in the
// process's memory), epoll (what the epoll descriptor watches), and where
// their timeouts are (argument index; ptr: a pointer to a timespec or
// timeval; ms: milliseconds).
type sysCalls struct {
	read, sel, poll, epoll map[uint64]bool
	timeout                map[uint64]timeoutArg
}

type timeoutArg struct {
	arg  int
	kind byte // 's': struct timespec *, 'u': struct timeval *, 'm': int milliseconds
}

var archCalls = map[string]sysCalls{
	"x86_64": {
		read:  set(0, 19, 17),     // read, readv, pread64
		sel:   set(23, 270),       // select, pselect6
		poll:  set(7, 271),        // poll, ppoll
		epoll: set(232, 281, 441), // epoll_wait, epoll_pwait, epoll_pwait2
		timeout: map[uint64]timeoutArg{
			23: {4, 'u'}, 270: {4, 's'}, 7: {2, 'm'}, 271: {2, 's'}, 232: {3, 'm'}, 281: {3, 'm'}, 441: {3, 's'},
		},
	},
	"aarch64": {
		read:    set(63, 65, 67),
		sel:     set(72),
		poll:    set(73),
		epoll:   set(22, 441),
		timeout: map[uint64]timeoutArg{72: {4, 's'}, 73: {2, 's'}, 22: {3, 'm'}, 441: {3, 's'}},
	},
}

func set(n ...uint64) map[uint64]bool {
	m := map[uint64]bool{}
	for _, v := range n {
		m[v] = true
	}
	return m
}

// probeLine is the probe shell's call for the command whose pid is pid.
func probeLine(pid int, nonce string, c sysCalls) string {
	var ws, ep, ts []string
	for _, m := range []map[uint64]bool{c.read, c.sel, c.poll, c.epoll} {
		for nr := range m {
			ws = append(ws, strconv.FormatUint(nr, 10))
		}
	}
	for nr := range c.epoll {
		ep = append(ep, strconv.FormatUint(nr, 10))
	}
	for nr, a := range c.timeout {
		if a.kind != 'm' {
			ts = append(ts, fmt.Sprintf("%d:%d", nr, a.arg))
		}
	}
	nosys := ""
	if len(ws) == 0 { // an architecture whose calls are not listed here: the echo flag decides
		nosys = "1"
	}
	return fmt.Sprintf("FN=%s NOSYS=%s WS=%q EP=%q TS=%q SEL=%q POL=%q probe %d", nonce, nosys, strings.Join(ws, " "), strings.Join(ep, " "), strings.Join(ts, " "), nums(c.sel), nums(c.poll), pid)
}

func nums(m map[uint64]bool) string {
	var out []string
	for nr := range m {
		out = append(out, strconv.FormatUint(nr, 10))
	}
	return strings.Join(out, " ")
}

// probeResult is what one probe found.
type probeResult struct {
	echoOff  bool
	echoRead bool // the probe read the echo flag (stty)
	fence    int  // the mark the probe wrote to the terminal, 0 for none, -1 for one it could not write
	fg       agentpty.Foreground
}

// probeProc is one process of the foreground group as the probe saw it.
type probeProc struct {
	pid    int
	state  byte
	comm   string
	sys    []uint64 // number and arguments; nil when not in a system call
	hidden bool     // the kernel does not show its system call to us
	ttyFDs map[uint64]bool
	epoll  [][2]uint64 // descriptor, events
	mem    []byte      // the timeout its call points at
	set    []byte      // the select or poll descriptor set it waits on
}

// stateFresh is how long a probe's answer is reused: its echo flag for
// EchoOff while no input, signal or resize came since, whatever the
// output (the library asks on every chunk of output when it sends events,
// and a round trip per chunk would throttle the output), the whole answer for EchoOff and Foreground while nothing
// that could change it happened (output, input, a signal, a resize; see
// terminal.gen). A result's state reads both in turn, and then the echo
// flag again: one probe serves the three.
const stateFresh = 10 * time.Millisecond

// probe reads the terminal's state on the host, or reuses the last
// probe's answer (see stateFresh), and keeps the answer.
func (t stateTerminal) probe() probeResult {
	t.probeMu.Lock()
	if t.lastOK && t.gen.Load() == t.lastGen && time.Since(t.lastAt) < stateFresh {
		r := t.last
		t.probeMu.Unlock()
		return r
	}
	t.probeMu.Unlock()
	gen, in, at := t.gen.Load(), t.inGen.Load(), time.Now()
	// Typed input travels on the session's channel, the probe on the
	// probe shell's: a request on the session's channel, answered once the
	// server has taken what came before it, keeps the probe from looking
	// at the program before the input reached its terminal.
	if t.typed.Swap(false) {
		_, _ = t.sess.SendRequest("sync@agentpty", true, nil)
	}
	r, ok := t.probeNow()
	if ok {
		t.probeMu.Lock()
		if r.echoRead {
			t.echo, t.echoAt, t.echoIn = r.echoOff, at, in
		}
		t.last, t.lastGen, t.lastAt, t.lastOK = r, gen, at, true
		t.probeMu.Unlock()
	}
	return r
}

func (t stateTerminal) probeNow() (probeResult, bool) {
	c, ok := archCalls[t.info.arch]
	out, err := t.helperRun(context.Background(), probeLine(t.pid, t.nonce, c), false)
	if err != nil {
		return probeResult{}, false
	}
	r := parseProbe(out, c, ok)
	if r.fence < 0 || r.fence > 0 && !t.awaitFence(r.fence) {
		r.fg.Waiting = false // what the program wrote did not all arrive: not known to wait
	}
	return r, true
}

// parseProbe decides as the local library does: the foreground group's
// leader first; a process running (R, D) means not waiting; a sleeping
// one waits when its system call waits on the terminal, or, where the
// kernel hides the call, when the terminal's echo is off (a password
// prompt).
func parseProbe(out []byte, c sysCalls, known bool) probeResult {
	var p probeParse
	for _, line := range strings.Split(string(out), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		if f := probeLines[kind]; f != nil {
			f(&p, kind, rest)
		}
	}
	return p.decide(c, known)
}

// probeParse is an answer read so far: the lines about the terminal, and
// the processes of the foreground group, the last one (cur) taking the
// lines about a process.
type probeParse struct {
	r      probeResult
	procs  []*probeProc
	cur    *probeProc
	unread bool
}

// probeLines reads each kind of line of an answer (see helperFuncs).
var probeLines = map[string]func(p *probeParse, kind, rest string){
	"unread":  func(p *probeParse, _, _ string) { p.unread = true },
	"fence":   func(p *probeParse, _, rest string) { p.r.fence, _ = strconv.Atoi(rest) },
	"nofence": func(p *probeParse, _, _ string) { p.r.fence = -1 },
	"stty":    func(p *probeParse, _, rest string) { p.r.echoOff, p.r.echoRead = sttyEchoOff(rest), true },
	"p":       (*probeParse).process,
	"s":       func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.syscall(rest) }) },
	"f":       func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.ttyFDList(rest) }) },
	"e":       func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.epollLine(rest) }) },
	"m":       (*probeParse).memory,
	"ms":      (*probeParse).memory,
	"mp":      (*probeParse).memory,
}

// with applies f to the current process, if there is one.
func (p *probeParse) with(f func(*probeProc)) {
	if p.cur != nil {
		f(p.cur)
	}
}

// process reads "p PID STATE COMM", which starts a process's lines.
func (p *probeParse) process(_, rest string) {
	f := strings.SplitN(rest, " ", 3)
	if len(f) < 3 || f[1] == "" {
		p.cur = nil
		return
	}
	pid, _ := strconv.Atoi(f[0])
	p.cur = &probeProc{pid: pid, state: f[1][0], comm: f[2], ttyFDs: map[uint64]bool{}}
	p.procs = append(p.procs, p.cur)
}

// memory reads "m HEX..." (a timeout), "ms" and "mp" (a select or poll
// descriptor set) of the current process.
func (p *probeParse) memory(kind, rest string) {
	p.with(func(q *probeProc) {
		b, _ := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		if kind == "m" {
			q.mem = b
		} else {
			q.set = b
		}
	})
}

// syscall reads /proc/PID/syscall's line: empty where the kernel hides it.
func (q *probeProc) syscall(rest string) {
	w := strings.Fields(rest)
	switch {
	case len(w) == 0:
		q.hidden = true
	case len(w) >= 7:
		for _, v := range w[:7] {
			n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), base(v), 64)
			if err != nil {
				q.hidden = true
				break
			}
			q.sys = append(q.sys, n)
		}
	}
}

// ttyFDList reads the descriptors that are the terminal.
func (q *probeProc) ttyFDList(rest string) {
	for _, v := range strings.Fields(rest) {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			q.ttyFDs[n] = true
		}
	}
}

// epollLine reads "FD events: HEX ..." of what an epoll descriptor watches.
func (q *probeProc) epollLine(rest string) {
	w := strings.Fields(rest)
	if len(w) >= 3 {
		fd, err1 := strconv.ParseUint(w[0], 10, 64)
		ev, err2 := strconv.ParseUint(w[2], 16, 32)
		if err1 == nil && err2 == nil {
			q.epoll = append(q.epoll, [2]uint64{fd, ev})
		}
	}
}

// decide finds the program that waits on the terminal, if one does and
// none of the group runs.
func (p *probeParse) decide(c sysCalls, known bool) probeResult {
	r := p.r
	running := false
	for _, q := range p.procs {
		if r.fg.Name == "" {
			r.fg.Name, r.fg.PID = q.comm, q.pid
		}
		switch q.state {
		case 'R', 'D':
			running = true
			continue
		case 'S':
		default:
			continue
		}
		var w terminalWait
		if q.hidden || !known {
			w.on = r.echoOff // read by the probe for this case
		} else {
			w = q.onTerminal(c)
		}
		if w.on && !r.fg.Waiting {
			r.fg.Name, r.fg.PID, r.fg.Waiting, r.fg.Quiet = q.comm, q.pid, true, w.quiet
		}
	}
	r.fg.Waiting = r.fg.Waiting && !running
	r.fg.Unread = p.unread
	return r
}

func base(v string) int {
	if strings.HasPrefix(v, "0x") {
		return 16
	}
	return 10
}

// sttyEchoOff reads stty -a: echo off in line mode.
func sttyEchoOff(s string) bool {
	echo, icanon := false, false
	for _, w := range strings.Fields(s) {
		switch strings.TrimSuffix(w, ";") {
		case "echo":
			echo = true
		case "icanon":
			icanon = true
		}
	}
	return icanon && !echo
}

// terminalWait is how a process waits on the terminal, if it does.
type terminalWait struct {
	on    bool          // blocked reading the terminal, or in select/poll/epoll for it
	quiet time.Duration // how long output and input must have paused before that counts
}

// onTerminal tells whether the process's system call waits on the
// terminal, and how, as the local library decides it: the descriptor
// sets of select and poll and what epoll watches come from the host
// (stdin stands for a set that cannot be read), a wait with a timeout
// under shortestWait is a pause, and waitQuiet says how long a wait must
// have been quiet to count.
func (p *probeProc) onTerminal(c sysCalls) terminalWait {
	if len(p.sys) < 7 {
		return terminalWait{}
	}
	nr, arg := p.sys[0], p.sys[1:]
	if c.read[nr] {
		return terminalWait{on: p.ttyFDs[arg[0]]}
	}
	on, others := false, false
	note := func(fd uint64) {
		if p.ttyFDs[fd] {
			on = true
		} else {
			others = true
		}
	}
	switch {
	case c.sel[nr]:
		if arg[1] == 0 {
			return terminalWait{}
		}
		if p.set == nil {
			note(0)
		}
		for fd := uint64(0); fd < uint64(8*len(p.set)) && fd < arg[0]; fd++ {
			if p.set[fd/8]&(1<<(fd%8)) != 0 {
				note(fd)
			}
		}
	case c.poll[nr]:
		if p.set == nil {
			note(0)
		}
		for i := 0; i+8 <= len(p.set); i += 8 {
			fd := int32(uint32(p.set[i]) | uint32(p.set[i+1])<<8 | uint32(p.set[i+2])<<16 | uint32(p.set[i+3])<<24)
			if events := uint16(p.set[i+4]) | uint16(p.set[i+5])<<8; events&1 != 0 && fd >= 0 { // POLLIN
				note(uint64(fd))
			}
		}
	case c.epoll[nr]:
		for _, e := range p.epoll {
			if e[1]&1 != 0 { // EPOLLIN
				note(e[0])
			}
		}
	default:
		return terminalWait{}
	}
	if !on {
		return terminalWait{}
	}
	d, finite := p.timeout(nr, arg, c)
	if finite && d < termwait.Shortest {
		return terminalWait{} // a pause in the program's work
	}
	return terminalWait{on: true, quiet: termwait.Quiet(others, d, finite)}
}

// timeout is the timeout the wait asked for; finite is false for none
// (or one that cannot be read).
func (p *probeProc) timeout(nr uint64, arg []uint64, c sysCalls) (d time.Duration, finite bool) {
	a, ok := c.timeout[nr]
	if !ok {
		return 0, false
	}
	switch a.kind {
	case 'm':
		ms := int32(arg[a.arg])
		if ms < 0 {
			return 0, false
		}
		return time.Duration(ms) * time.Millisecond, true
	default:
		if arg[a.arg] == 0 || len(p.mem) < 16 {
			return 0, false
		}
		unit := time.Nanosecond
		if a.kind == 'u' {
			unit = time.Microsecond
		}
		return time.Duration(le64(p.mem))*time.Second + time.Duration(le64(p.mem[8:]))*unit, true
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// EchoOff reports the terminal in line mode without echo: a password
// prompt. It costs a probe (see Foreground), unless one read the flag
// within stateFresh.
func (t stateTerminal) EchoOff() bool {
	t.probeMu.Lock()
	echo, fresh := t.echo, time.Since(t.echoAt) < stateFresh && t.echoIn == t.inGen.Load()
	t.probeMu.Unlock()
	if fresh {
		return echo
	}
	return t.probe().echoOff
}

// Foreground reports the foreground program, read on the host through
// the probe shell: one round trip on the connection's probe channel and a
// few builtins of the shell there, plus the echo flag (a line to the
// connection's perl process where the host has perl, else a stty) and a
// dd and od when the program waits in select with a timeout. The answer
// serves EchoOff and Foreground for stateFresh while nothing that could
// change it happens.
func (t stateTerminal) Foreground() agentpty.Foreground { return t.probe().fg }

// OutputPending reports output on its way: taken off the channel and not
// yet returned by Read, or returned while no later Read waits. Output the
// host has sent and the connection still carries cannot be seen; the
// probe's answer travels behind it on the same connection.
func (t stateTerminal) OutputPending() bool {
	t.omu.Lock()
	defer t.omu.Unlock()
	return len(t.buf) > 0 || !t.waiting
}

// end runs killsess in the background of the probe shell and returns
// what it printed.
func (t *terminal) end(ctx context.Context, hup, grace time.Duration) (string, error) {
	cs := func(d time.Duration) int64 { return int64((d + 9*time.Millisecond) / (10 * time.Millisecond)) }
	out, err := t.helperRun(ctx, fmt.Sprintf("killsess %d %d %d %d", t.pid, cs(hup), cs(grace), cs(killBound)), true)
	return string(out), err
}
