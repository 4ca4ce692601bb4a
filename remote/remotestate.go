package remote

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/termstate"
)

// Calls are a host architecture's system calls that wait on
// descriptors: the decision's one table (termstate.Calls).
type Calls = termstate.Calls

// Archs are the calls of the architectures uname -m names
// (termstate.Archs).
var Archs = termstate.Archs

// Vars are the shell assignments that give probe.sh's probe the system
// calls of c: "WS=... EP=... TS=... SEL=... POL=...".
func Vars(c Calls) string {
	var ts []string
	for nr, a := range c.Timeouts {
		if a.Kind != termstate.Millis {
			ts = append(ts, fmt.Sprintf("%d:%d", nr, a.Arg))
		}
	}
	ws := strings.Join([]string{nums(c.Read), nums(c.Select), nums(c.Poll), nums(c.Epoll)}, " ")
	return fmt.Sprintf("WS=%q EP=%q TS=%q SEL=%q POL=%q", ws, nums(c.Epoll), strings.Join(ts, " "), nums(c.Select), nums(c.Poll))
}

func nums(list []uint64) string {
	var out []string
	for _, nr := range list {
		out = append(out, strconv.FormatUint(nr, 10))
	}
	return strings.Join(out, " ")
}

// Result is what one probe found.
type Result struct {
	EchoOff  bool // the terminal is in line mode without echo
	EchoRead bool // the probe read the echo flag
	// Fence is the mark the probe wrote to the terminal (see probe.sh), 0
	// for none.
	Fence int
	// Fg is the foreground program; Waiting without the fence's check.
	Fg agentpty.Foreground
}

// probeProc is one process of the foreground group, or one of its other
// threads, as the probe saw it.
type probeProc struct {
	pid, tid int
	state    byte
	comm     string
	call     termstate.Call // the system call it sleeps in, if in
	in       bool
	hidden   bool // the kernel does not show its system call to us
	// What the process's threads share: the descriptors that are the
	// terminal, the memory the probe read (by address) and what its epoll
	// descriptors watch (descriptor, events; by epoll descriptor).
	ttyFDs map[uint64]bool
	mem    map[uint64][]byte
	epoll  map[uint64][][2]uint64
	// threads are its other threads, each with its own state and call.
	threads []*probeProc
}

// Parse fills the decision's input from the probe's lines and decides
// with the local library's decision (termstate.Decide): the foreground
// group's leader first; a process running (R, D) means not waiting; a
// sleeping one waits when a thread's system call waits on the terminal,
// or, where the kernel hides the call (or known is false: c is not this
// host's), when the terminal's echo is off (a password prompt).
func Parse(out []byte, c Calls, known bool) Result {
	p := probeParse{calls: c}
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
	r      Result
	calls  Calls
	pgrp   int // the foreground group
	procs  []*probeProc
	cur    *probeProc // the process or thread the lines are about
	main   *probeProc // the process whose threads follow
	unread bool
}

// probeLines reads each kind of line of an answer (see probe.sh).
var probeLines = map[string]func(p *probeParse, kind, rest string){
	"unread": func(p *probeParse, _, _ string) { p.unread = true },
	"fence":  func(p *probeParse, _, rest string) { p.r.Fence, _ = strconv.Atoi(rest) },
	"t":      func(p *probeParse, _, rest string) { p.pgrp, _ = strconv.Atoi(strings.Fields(rest + " 0")[0]) },
	"stty":   func(p *probeParse, _, rest string) { p.r.EchoOff, p.r.EchoRead = echoOffWords(rest), true },
	"p":      (*probeParse).process,
	"T":      (*probeParse).thread,
	"s":      func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.syscall(rest) }) },
	"f":      func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.ttyFDList(rest) }) },
	"e":      (*probeParse).epollLine,
	"m":      (*probeParse).memory,
	"ms":     (*probeParse).memory,
	"mp":     (*probeParse).memory,
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
	p.cur = &probeProc{pid: pid, tid: pid, state: f[1][0], comm: f[2],
		ttyFDs: map[uint64]bool{}, mem: map[uint64][]byte{}, epoll: map[uint64][][2]uint64{}}
	p.main = p.cur
	p.procs = append(p.procs, p.cur)
}

// thread reads "T TID STATE", which starts the lines of another thread of
// the last process.
func (p *probeParse) thread(_, rest string) {
	f := strings.Fields(rest)
	if p.main == nil || len(f) < 2 {
		p.cur = nil
		return
	}
	m := p.main
	tid, _ := strconv.Atoi(f[0])
	p.cur = &probeProc{pid: m.pid, tid: tid, state: f[1][0], comm: m.comm, ttyFDs: m.ttyFDs, mem: m.mem, epoll: m.epoll}
	m.threads = append(m.threads, p.cur)
}

// memory reads "m HEX..." (a timeout), "ms" and "mp" (a select or poll
// descriptor set) of the current thread's call, kept by the address the
// decision reads it at.
func (p *probeParse) memory(kind, rest string) {
	p.with(func(q *probeProc) {
		b, _ := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		timeout, set := p.calls.Addrs(q.call)
		if kind == "m" {
			q.mem[timeout] = b
		} else {
			q.mem[set] = b
		}
	})
}

// syscall reads /proc/PID/syscall's line: empty where the kernel hides it.
func (q *probeProc) syscall(rest string) {
	if strings.TrimSpace(rest) == "" {
		q.hidden = true
		return
	}
	q.call, q.in = termstate.ParseCall([]byte(rest))
}

// ttyFDList reads the descriptors that are the terminal.
func (q *probeProc) ttyFDList(rest string) {
	for _, v := range strings.Fields(rest) {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			q.ttyFDs[n] = true
		}
	}
}

// epollLine reads "FD events: HEX ..." of what the epoll descriptor of
// the current thread's call watches.
func (p *probeParse) epollLine(_, rest string) {
	w := strings.Fields(rest)
	if p.cur == nil || len(w) < 3 {
		return
	}
	fd, err1 := strconv.ParseUint(w[0], 10, 64)
	ev, err2 := strconv.ParseUint(w[2], 16, 32)
	if err1 == nil && err2 == nil {
		epfd := p.cur.call.Args[0]
		p.cur.epoll[epfd] = append(p.cur.epoll[epfd], [2]uint64{fd, ev})
	}
}

// decide finds the program that waits on the terminal, if one does and
// none of the group runs (termstate.Decide).
func (p *probeParse) decide(c Calls, known bool) Result {
	r := p.r
	k := probeKernel{procs: map[int]*probeProc{}, echoOff: r.EchoOff, known: known}
	var leader *termstate.Proc
	var members []termstate.Proc
	for _, q := range p.procs {
		k.procs[q.pid] = q
		tp := termstate.Proc{PID: q.pid, State: q.state, Comm: q.comm, Threads: 1 + len(q.threads)}
		if q.pid == p.pgrp && leader == nil {
			leader = &tp
		} else {
			members = append(members, tp)
		}
	}
	d := termstate.Decide(c, k, leader, func() []termstate.Proc { return members })
	r.Fg = agentpty.Foreground{Name: d.Name, PID: d.Program.PID, Waiting: d.Waiting, Quiet: d.Quiet, Guessed: d.Guessed, Unread: p.unread}
	return r
}

// probeKernel answers the decision's questions (termstate.Kernel) from
// the probe's lines.
type probeKernel struct {
	procs   map[int]*probeProc
	echoOff bool // the probe read the terminal in line mode without echo
	known   bool // the calls are this host's
}

func (k probeKernel) Call(pid, tid int) (c termstate.Call, in, known bool) {
	q := k.procs[pid]
	if q != nil && tid != pid {
		q = q.thread(tid)
	}
	if q == nil || q.hidden || !k.known {
		return termstate.Call{}, false, false
	}
	return q.call, q.in, true
}

// thread is q's other thread tid, nil for none.
func (q *probeProc) thread(tid int) *probeProc {
	for _, t := range q.threads {
		if t.tid == tid {
			return t
		}
	}
	return nil
}

func (k probeKernel) Threads(pid, _ int) []termstate.Thread {
	var out []termstate.Thread
	if q := k.procs[pid]; q != nil {
		for _, t := range q.threads {
			out = append(out, termstate.Thread{TID: t.tid, State: t.state})
		}
	}
	return out
}

func (k probeKernel) Terminal(pid int, fd uint64) bool {
	q := k.procs[pid]
	return q != nil && q.ttyFDs[fd]
}

func (k probeKernel) Memory(pid int, addr uint64, p []byte) bool {
	q := k.procs[pid]
	if len(p) == 0 {
		return true
	}
	if q == nil || len(q.mem[addr]) < len(p) {
		return false
	}
	copy(p, q.mem[addr])
	return true
}

func (k probeKernel) Epoll(pid int, epfd uint64, each func(fd uint64, events uint32)) {
	if q := k.procs[pid]; q != nil {
		for _, e := range q.epoll[epfd] {
			each(e[0], uint32(e[1]))
		}
	}
}

func (k probeKernel) EchoOff() bool { return k.echoOff }

// echoOffWords reads stty -a (or words in its form, "icanon -echo"):
// echo off in line mode.
func echoOffWords(s string) bool {
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
