package termstate

import (
	"encoding/binary"
	"time"
)

// Proc is a process of the terminal's foreground group, as its stat
// shows it.
type Proc struct {
	PID     int
	State   byte   // R running, D on the disk, S asleep; T, Z and the rest: stopped, gone
	Comm    string // its command name
	Start   uint64 // when it started (clock ticks since boot); 0 where not known
	Threads int    // how many threads it has; 0 or 1 for the main one alone
}

// Kernel is how the decision reads, when it needs them, what a collector
// knows of a process beyond its stat: a collector of this machine's /proc
// reads each only when asked, a remote probe's parser answers from the
// lines it was given.
type Kernel interface {
	// Call returns the system call thread tid of process pid sleeps in
	// (tid == pid: its main thread): in is false outside one, known false
	// where the kernel hides it from us.
	Call(pid, tid int) (c Call, in, known bool)
	// Threads lists pid's threads other than its main one (n of them by
	// its stat) with their states. The decision stops at the first that
	// runs (R, D), so the list may end there.
	Threads(pid, n int) []Thread
	// Terminal reports that pid's descriptor fd is the terminal: its
	// slave, or /dev/tty (for a process of the foreground group, this
	// terminal).
	Terminal(pid int, fd uint64) bool
	// Memory reads len(p) bytes of pid's memory at addr.
	Memory(pid int, addr uint64, p []byte) bool
	// Epoll calls each with every descriptor pid's epoll descriptor epfd
	// watches and the events it watches for.
	Epoll(pid int, epfd uint64, each func(fd uint64, events uint32))
	// EchoOff reports the terminal in line mode without echo: a password
	// prompt, which stands for a hidden call.
	EchoOff() bool
}

// Thread is a thread of a process other than its main one.
type Thread struct {
	TID   int
	State byte
}

// Wait is how a thread waits on the terminal, if it does.
type Wait struct {
	On    bool          // blocked reading the terminal, or in select/poll/epoll for it to be readable
	Quiet time.Duration // how long output and input must have paused before that counts (see Quiet)
	// Guessed: it waits on something besides the terminal (a socket, a
	// pty of its own, a server), so the kernel cannot tell whether it
	// waits for input or for the far side: only the quiet says so.
	Guessed bool
}

// Result is what the decision found of the foreground group.
type Result struct {
	// Name names Program for a person: its command name, or a better
	// name the collector knows.
	Name    string
	Program Proc          // the one waiting on the terminal, else a running leader, else the newest of the group
	Waiting bool          // a process of the group waits on the terminal and none runs
	Quiet   time.Duration // ... which counts once output and input have paused this long
	Guessed bool          // ... and is a guess: the program waits on more than the terminal
	Unread  bool          // the terminal holds typed input not read yet (set by the collector)
}

// Decide finds the program of the foreground group that waits on the
// terminal, if one does and none of the group runs. The leader (nil:
// gone) decides alone when it runs or waits on the terminal itself (a
// shell, a REPL, an editor: the usual case); only otherwise (git waiting
// for its pager, make for its recipe, a pipeline) are the group's other
// members asked for.
func Decide(c Calls, k Kernel, leader *Proc, members func() []Proc) Result {
	s := scan{c: c, k: k}
	if leader != nil {
		s.look(*leader)
		if s.running && !s.found {
			return Result{Name: leader.Comm, Program: *leader} // a running leader is the program at work
		}
	}
	if !s.found {
		for _, m := range members() {
			s.look(m)
		}
	}
	switch {
	case s.found:
		return Result{Name: s.reader.Comm, Program: s.reader, Waiting: !s.running, Quiet: s.wait.Quiet, Guessed: s.wait.Guessed}
	case s.newest.PID != 0:
		return Result{Name: s.newest.Comm, Program: s.newest}
	}
	return Result{}
}

// scan looks through the members of a foreground group for the one
// waiting on the terminal, and the newest.
type scan struct {
	c       Calls
	k       Kernel
	running bool // a member runs or waits on the disk
	found   bool // reader waits on the terminal, the first to
	reader  Proc
	wait    Wait // ... and how
	newest  Proc
}

func (s *scan) look(p Proc) {
	if s.newest.PID == 0 || p.Start > s.newest.Start || p.Start == s.newest.Start && p.PID > s.newest.PID {
		s.newest = p
	}
	switch p.State {
	case 'R', 'D':
		s.running = true
		return
	case 'S':
	default:
		return // stopped, traced, zombie: not waiting on the terminal
	}
	w, known := s.threadWait(p.PID, p.PID)
	if !known { // the kernel hides its system call: a password prompt still counts
		w = Wait{On: s.k.EchoOff()}
	}
	if known && !w.On && p.Threads > 1 { // the main thread waits on something else: another may read
		var running bool
		if w, running = s.threads(p); running {
			s.running = true
			return
		}
	}
	if !w.On && handsOverTerminal(p.Comm) {
		w = Wait{On: true, Quiet: Relay, Guessed: true}
	}
	if w.On && !s.found {
		s.reader, s.wait, s.found = p, w, true
	}
}

// threadWait is the wait of thread tid of process pid; known is false
// where its call is hidden.
func (s *scan) threadWait(pid, tid int) (w Wait, known bool) {
	call, in, known := s.k.Call(pid, tid)
	if !in {
		return Wait{}, known
	}
	return s.c.OnTerminal(call, pid, s.k), true
}

// threads looks through the other threads of process p, whose main
// thread sleeps on something other than the terminal: a Go program reads
// its terminal on a goroutine's thread, fzf and Java and Rust programs on
// a thread of their own. running: a thread of p runs or waits on the
// disk, so the program is at work whatever another thread waits for.
// Otherwise w is the wait of the first thread found on the terminal,
// which counts once the terminal has been quiet for Handoff at least.
func (s *scan) threads(p Proc) (w Wait, running bool) {
	ts := s.k.Threads(p.PID, p.Threads-1)
	for _, t := range ts {
		if t.State == 'R' || t.State == 'D' {
			return Wait{}, true
		}
	}
	for _, t := range ts {
		if t.State != 'S' {
			continue
		}
		if w, _ = s.threadWait(p.PID, t.TID); w.On {
			w.Quiet = max(w.Quiet, Handoff)
			return w, false
		}
	}
	return Wait{}, false
}

// handsOverTerminal reports a program whose server reads its terminal: a
// tmux client passes the terminal to the tmux server and itself waits on
// the server's socket only, so it never reads the terminal it shows.
func handsOverTerminal(comm string) bool { return comm == "tmux: client" }

// OnTerminal tells whether call, which a thread of process pid sleeps in,
// waits on the terminal: blocked reading it, or in select/poll/epoll for
// it to be readable; and how (see Quiet). A wait with a timeout under
// Shortest is a pause in the program's work.
func (c Calls) OnTerminal(call Call, pid int, k Kernel) Wait {
	kind := c.kind(call.Nr)
	switch kind {
	case waitRead:
		return Wait{On: k.Terminal(pid, call.Args[0])}
	case notWait:
		return Wait{}
	}
	on, others := c.watched(kind, call, pid, k)
	if !on {
		return Wait{}
	}
	d, finite := c.timeout(call, pid, k)
	if finite && d < Shortest {
		return Wait{} // a pause in the program's work
	}
	return Wait{On: true, Quiet: Quiet(others, d, finite), Guessed: others}
}

// watched reports whether a select, poll or epoll_wait (kind) waits to
// read the terminal, and whether it waits on something else too. A set
// that cannot be read stands for stdin, the usual one.
func (c Calls) watched(kind int, call Call, pid int, k Kernel) (on, others bool) {
	var w watch
	arg := call.Args
	switch kind {
	case waitSelect:
		if arg[1] == 0 {
			return false, false
		}
		nfds := min(arg[0], 1024)
		bits := make([]byte, (nfds+7)/8)
		if !k.Memory(pid, arg[1], bits) {
			w.note(k.Terminal(pid, 0))
		}
		for fd := uint64(0); fd < nfds && !w.enough(); fd++ {
			if bits[fd/8]&(1<<(fd%8)) != 0 {
				w.note(k.Terminal(pid, fd))
			}
		}
	case waitPoll:
		n := min(arg[1], 1024)
		fds := make([]byte, 8*n)
		if !k.Memory(pid, arg[0], fds) {
			w.note(k.Terminal(pid, 0))
			break
		}
		for i := uint64(0); i < n && !w.enough(); i++ {
			e := fds[8*i:]
			const pollIn = 0x1
			if fd := int32(binary.LittleEndian.Uint32(e)); binary.LittleEndian.Uint16(e[4:])&pollIn != 0 && fd >= 0 {
				w.note(k.Terminal(pid, uint64(fd)))
			}
		}
	case waitEpoll:
		return epollWatched(k, pid, arg[0])
	}
	return w.on, w.others
}

// epollWatched is watched for an epoll descriptor.
func epollWatched(k Kernel, pid int, epfd uint64) (on, others bool) {
	w := &watch{}
	k.Epoll(pid, epfd, func(fd uint64, events uint32) {
		const epollIn = 0x1
		if events&epollIn != 0 && !w.enough() {
			w.note(k.Terminal(pid, fd))
		}
	})
	return w.on, w.others
}

// watch is what a wait watches: the terminal, and others.
type watch struct{ on, others bool }

func (w *watch) note(terminal bool) {
	if terminal {
		w.on = true
	} else {
		w.others = true
	}
}

func (w *watch) enough() bool { return w.on && w.others }
