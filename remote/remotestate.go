package remote

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/termwait"
)

// Calls are a host architecture's numbers of the system calls that
// wait on descriptors: read (one descriptor), select and poll (sets in the
// process's memory), epoll (what the epoll descriptor watches), and where
// their timeouts are (argument index; ptr: a pointer to a timespec or
// timeval; ms: milliseconds).
type Calls struct {
	read, sel, poll, epoll map[uint64]bool
	timeout                map[uint64]timeoutArg
}

type timeoutArg struct {
	arg  int
	kind byte // 's': struct timespec *, 'u': struct timeval *, 'm': int milliseconds
}

// Archs are the calls of the architectures uname -m names.
var Archs = map[string]Calls{
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

// Vars are the shell assignments that give probe.sh's probe the system
// calls of c: "WS=... EP=... TS=... SEL=... POL=...".
func Vars(c Calls) string {
	var ts []string
	for nr, a := range c.timeout {
		if a.kind != 'm' {
			ts = append(ts, fmt.Sprintf("%d:%d", nr, a.arg))
		}
	}
	ws := strings.Join([]string{nums(c.read), nums(c.sel), nums(c.poll), nums(c.epoll)}, " ")
	return fmt.Sprintf("WS=%q EP=%q TS=%q SEL=%q POL=%q", ws, nums(c.epoll), strings.Join(ts, " "), nums(c.sel), nums(c.poll))
}

func nums(m map[uint64]bool) string {
	var out []string
	for nr := range m {
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
	// threads are its other threads, each with its own state and call
	// and the process's descriptors.
	threads []*probeProc
}

// Parse decides as the local library does: the foreground group's
// leader first; a process running (R, D) means not waiting; a sleeping
// one waits when its system call waits on the terminal, or, where the
// kernel hides the call, when the terminal's echo is off (a password
// prompt).
func Parse(out []byte, c Calls, known bool) Result {
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
	r      Result
	procs  []*probeProc
	cur    *probeProc // the process or thread the lines are about
	main   *probeProc // the process whose threads follow
	unread bool
}

// probeLines reads each kind of line of an answer (see probe.sh).
var probeLines = map[string]func(p *probeParse, kind, rest string){
	"unread": func(p *probeParse, _, _ string) { p.unread = true },
	"fence":  func(p *probeParse, _, rest string) { p.r.Fence, _ = strconv.Atoi(rest) },
	"stty":   func(p *probeParse, _, rest string) { p.r.EchoOff, p.r.EchoRead = EchoOffWords(rest), true },
	"p":      (*probeParse).process,
	"T":      (*probeParse).thread,
	"s":      func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.syscall(rest) }) },
	"f":      func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.ttyFDList(rest) }) },
	"e":      func(p *probeParse, _, rest string) { p.with(func(q *probeProc) { q.epollLine(rest) }) },
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
	p.cur = &probeProc{pid: pid, state: f[1][0], comm: f[2], ttyFDs: map[uint64]bool{}}
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
	p.cur = &probeProc{pid: m.pid, state: f[1][0], comm: m.comm, ttyFDs: m.ttyFDs}
	m.threads = append(m.threads, p.cur)
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
func (p *probeParse) decide(c Calls, known bool) Result {
	r := p.r
	running := false
	for _, q := range p.procs {
		if r.Fg.Name == "" {
			r.Fg.Name, r.Fg.PID = q.comm, q.pid
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
			w.on = r.EchoOff // read by the probe for this case
		} else if w = q.onTerminal(c); !w.on {
			var busy bool
			if w, busy = q.threadsWait(c); busy {
				running = true
				continue
			}
		}
		if w.on && !r.Fg.Waiting {
			r.Fg.Name, r.Fg.PID, r.Fg.Waiting, r.Fg.Quiet, r.Fg.Guessed = q.comm, q.pid, true, w.quiet, w.guessed
		}
	}
	r.Fg.Waiting = r.Fg.Waiting && !running
	r.Fg.Unread = p.unread
	return r
}

// threadsWait looks at the other threads of a process whose main thread
// sleeps on something other than the terminal, as the local library
// does: busy when one runs, else the wait of the first on the terminal.
func (q *probeProc) threadsWait(c Calls) (w terminalWait, busy bool) {
	for _, t := range q.threads {
		switch t.state {
		case 'R', 'D':
			return terminalWait{}, true
		case 'S':
			if w.on || t.hidden {
				continue
			}
			w = t.onTerminal(c)
		}
	}
	return w, false
}

func base(v string) int {
	if strings.HasPrefix(v, "0x") {
		return 16
	}
	return 10
}

// EchoOffWords reads stty -a (or words in its form, "icanon -echo"):
// echo off in line mode.
func EchoOffWords(s string) bool {
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
	on      bool          // blocked reading the terminal, or in select/poll/epoll for it
	quiet   time.Duration // how long output and input must have paused before that counts
	guessed bool          // it waits on more than the terminal: only the pause says it waits for input
}

// onTerminal tells whether the process's system call waits on the
// terminal, and how, as the local library decides it: the descriptor
// sets of select and poll and what epoll watches come from the host
// (stdin stands for a set that cannot be read), a wait with a timeout
// under shortestWait is a pause, and waitQuiet says how long a wait must
// have been quiet to count.
func (p *probeProc) onTerminal(c Calls) terminalWait {
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
	return terminalWait{on: true, quiet: termwait.Quiet(others, d, finite), guessed: others}
}

// timeout is the timeout the wait asked for; finite is false for none
// (or one that cannot be read).
func (p *probeProc) timeout(nr uint64, arg []uint64, c Calls) (d time.Duration, finite bool) {
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
