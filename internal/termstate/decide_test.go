package termstate

import (
	"encoding/binary"
	"testing"
	"time"
)

// fakeKernel is a Kernel from a table: each thread's call, the
// descriptors that are the terminal, memory and epoll sets.
type fakeKernel struct {
	calls    map[int]string // by tid: a /proc/TID/syscall line; absent: hidden
	threads  map[int][][2]int
	tty      map[uint64]bool
	mem      map[uint64][]byte
	epoll    map[uint64][][2]uint64
	echoOff  bool
	memReads int
}

func (k *fakeKernel) Call(_, tid int) (Call, bool, bool) {
	line, ok := k.calls[tid]
	if !ok {
		return Call{}, false, false
	}
	c, in := ParseCall([]byte(line))
	return c, in, true
}

func (k *fakeKernel) Threads(pid, _ int) []Thread {
	var out []Thread
	for _, t := range k.threads[pid] {
		out = append(out, Thread{t[0], byte(t[1])})
	}
	return out
}

func (k *fakeKernel) Terminal(_ int, fd uint64) bool { return k.tty[fd] }

func (k *fakeKernel) Memory(_ int, addr uint64, p []byte) bool {
	k.memReads++
	b, ok := k.mem[addr]
	if len(p) > 0 && (!ok || len(b) < len(p)) {
		return false
	}
	copy(p, b)
	return true
}

func (k *fakeKernel) Epoll(_ int, epfd uint64, each func(uint64, uint32)) {
	for _, e := range k.epoll[epfd] {
		each(e[0], uint32(e[1]))
	}
}

func (k *fakeKernel) EchoOff() bool { return k.echoOff }

// timespec is a struct timespec in memory.
func timespec(d time.Duration) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(d/time.Second))
	binary.LittleEndian.PutUint64(b[8:], uint64(d%time.Second))
	return b
}

// pollfds are struct pollfds in memory: descriptor, events.
func pollfds(fds ...[2]int) []byte {
	b := make([]byte, 8*len(fds))
	for i, f := range fds {
		binary.LittleEndian.PutUint32(b[8*i:], uint32(f[0]))
		binary.LittleEndian.PutUint16(b[8*i+4:], uint16(f[1]))
	}
	return b
}

// x86_64 lines of /proc/PID/syscall, the terminal on descriptor 0.
const (
	readTTY    = "0 0x0 0x7f00 0x400 0x0 0x0 0x0 0x7ffe 0x7f01"
	readPipe   = "0 0x5 0x7f00 0x400 0x0 0x0 0x0 0x7ffe 0x7f01"
	wait4      = "61 0xffffffffffffffff 0x7ffc 0x0 0x0 0x0 0x0 0x7ffe 0x7f01"
	futex      = "202 0xc000 0x80 0x0 0x0 0x0 0x0 0x7ffe 0x7f01"
	pollNoTime = "7 0x1000 0x1 0xffffffff 0x0 0x0 0x0 0x7ffe 0x7f01" // poll(fds, 1, -1)
	poll50ms   = "7 0x1000 0x1 0x32 0x0 0x0 0x0 0x7ffe 0x7f01"       // poll(fds, 1, 50)
	poll4s     = "7 0x1000 0x1 0xfa0 0x0 0x0 0x0 0x7ffe 0x7f01"      // poll(fds, 1, 4000)
	poll500ms  = "7 0x1000 0x2 0x1f4 0x0 0x0 0x0 0x7ffe 0x7f01"      // poll(fds, 2, 500)
	ppoll      = "271 0x1000 0x1 0x2000 0x0 0x8 0x0 0x7ffe 0x7f01"   // ppoll(fds, 1, &ts, ...)
	pselect    = "270 0x1 0x3000 0x0 0x0 0x0 0x0 0x7ffe 0x7f01"      // pselect6(1, &readfds, 0, 0, NULL, ...)
	epollWait  = "232 0x4 0x7f00 0x8 0xffffffff 0x0 0x0 0x7ffe 0x7f01"
	running    = "running"
)

// The decision, fed from a table: which program waits, under the rules
// both collectors share (the leader first, the thread rule, a pause under
// Shortest, a relay's quiet, a hidden call read from the echo flag).
func TestDecide(t *testing.T) {
	proc := func(pid int, state byte, comm string, threads int) Proc {
		return Proc{PID: pid, State: state, Comm: comm, Start: uint64(pid), Threads: threads}
	}
	cases := []struct {
		name    string
		leader  *Proc
		members []Proc
		k       fakeKernel
		want    Result
	}{
		{name: "reads the terminal", leader: ptr(proc(10, 'S', "cat", 1)),
			k:    fakeKernel{calls: map[int]string{10: readTTY}},
			want: Result{Name: "cat", Waiting: true}},
		{name: "reads a pipe", leader: ptr(proc(10, 'S', "cat", 1)),
			k:    fakeKernel{calls: map[int]string{10: readPipe}},
			want: Result{Name: "cat"}},
		{name: "runs", leader: ptr(proc(10, 'R', "yes", 1)), want: Result{Name: "yes"}},
		{name: "stopped", leader: ptr(proc(10, 'T', "vim", 1)),
			k: fakeKernel{calls: map[int]string{10: readTTY}}, want: Result{Name: "vim"}},
		{name: "not in a call", leader: ptr(proc(10, 'S', "x", 1)),
			k: fakeKernel{calls: map[int]string{10: running}}, want: Result{Name: "x"}},
		{name: "hidden call, echo off", leader: ptr(proc(10, 'S', "sudo", 1)),
			k: fakeKernel{echoOff: true}, want: Result{Name: "sudo", Waiting: true}},
		{name: "hidden call, echo on", leader: ptr(proc(10, 'S', "sudo", 1)), want: Result{Name: "sudo"}},
		{name: "a thread reads", leader: ptr(proc(10, 'S', "gotui", 4)),
			k: fakeKernel{calls: map[int]string{10: futex, 11: futex, 12: readTTY, 13: futex},
				threads: map[int][][2]int{10: {{11, 'S'}, {12, 'S'}, {13, 'S'}}}},
			want: Result{Name: "gotui", Waiting: true, Quiet: Handoff}}, // counts once quiet: what it read may wait for a thread
		{name: "a thread reads, another runs", leader: ptr(proc(10, 'S', "python3", 3)),
			k: fakeKernel{calls: map[int]string{10: futex, 11: readTTY},
				threads: map[int][][2]int{10: {{11, 'S'}, {12, 'R'}}}},
			want: Result{Name: "python3"}},
		{name: "threads wait elsewhere", leader: ptr(proc(10, 'S', "java", 2)),
			k: fakeKernel{calls: map[int]string{10: futex, 11: futex},
				threads: map[int][][2]int{10: {{11, 'S'}}}},
			want: Result{Name: "java"}},
		{name: "a thread whose call is hidden", leader: ptr(proc(10, 'S', "x", 2)),
			k:    fakeKernel{calls: map[int]string{10: futex}, threads: map[int][][2]int{10: {{11, 'S'}}}, echoOff: true},
			want: Result{Name: "x"}},
		{name: "a shell waits for its pipeline, whose second reads", leader: ptr(proc(10, 'S', "bash", 1)),
			members: []Proc{proc(11, 'S', "grep", 1), proc(12, 'S', "cat", 1)},
			k:       fakeKernel{calls: map[int]string{10: wait4, 11: readPipe, 12: readTTY}},
			want:    Result{Name: "cat", Waiting: true}},
		{name: "a member reads while another runs", leader: ptr(proc(10, 'S', "bash", 1)),
			members: []Proc{proc(11, 'S', "cat", 1), proc(12, 'R', "yes", 1)},
			k:       fakeKernel{calls: map[int]string{10: wait4, 11: readTTY}},
			want:    Result{Name: "cat"}},
		{name: "none reads: the newest is named", leader: ptr(proc(10, 'S', "bash", 1)),
			members: []Proc{proc(12, 'S', "sleep", 1), proc(11, 'S', "make", 1)},
			k:       fakeKernel{calls: map[int]string{10: wait4, 11: wait4, 12: futex}},
			want:    Result{Name: "sleep"}},
		{name: "the leader gone", members: []Proc{proc(11, 'S', "cat", 1)},
			k: fakeKernel{calls: map[int]string{11: readTTY}}, want: Result{Name: "cat", Waiting: true}},
		{name: "a tmux client", leader: ptr(proc(10, 'S', "tmux: client", 1)),
			k:    fakeKernel{calls: map[int]string{10: pollNoTime}, mem: map[uint64][]byte{0x1000: pollfds([2]int{5, 1})}},
			want: Result{Name: "tmux: client", Waiting: true, Quiet: Relay, Guessed: true}},
		{name: "poll for ever", leader: ptr(proc(10, 'S', "vim", 1)),
			k:    fakeKernel{calls: map[int]string{10: pollNoTime}, mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 1})}},
			want: Result{Name: "vim", Waiting: true}},
		{name: "poll pausing 50 ms", leader: ptr(proc(10, 'S', "vim", 1)),
			k:    fakeKernel{calls: map[int]string{10: poll50ms}, mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 1})}},
			want: Result{Name: "vim"}},
		{name: "poll for 4 s: housekeeping", leader: ptr(proc(10, 'S', "vim", 1)),
			k:    fakeKernel{calls: map[int]string{10: poll4s}, mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 1})}},
			want: Result{Name: "vim", Waiting: true}},
		{name: "poll for writing only", leader: ptr(proc(10, 'S', "x", 1)),
			k:    fakeKernel{calls: map[int]string{10: pollNoTime}, mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 4})}},
			want: Result{Name: "x"}},
		{name: "poll on the terminal and a socket, 500 ms", leader: ptr(proc(10, 'S', "ssh", 1)),
			k: fakeKernel{calls: map[int]string{10: poll500ms},
				mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 1}, [2]int{3, 1})}, tty: map[uint64]bool{0: true}},
			want: Result{Name: "ssh", Waiting: true, Quiet: 600 * time.Millisecond, Guessed: true}},
		{name: "poll set unreadable: stdin", leader: ptr(proc(10, 'S', "x", 1)),
			k: fakeKernel{calls: map[int]string{10: pollNoTime}}, want: Result{Name: "x", Waiting: true}},
		{name: "ppoll 200 ms", leader: ptr(proc(10, 'S', "node", 1)),
			k: fakeKernel{calls: map[int]string{10: ppoll},
				mem: map[uint64][]byte{0x1000: pollfds([2]int{0, 1}), 0x2000: timespec(200 * time.Millisecond)}},
			want: Result{Name: "node", Waiting: true, Quiet: 300 * time.Millisecond}},
		{name: "pselect for ever", leader: ptr(proc(10, 'S', "python3", 1)),
			k:    fakeKernel{calls: map[int]string{10: pselect}, mem: map[uint64][]byte{0x3000: {1}}},
			want: Result{Name: "python3", Waiting: true}},
		{name: "epoll on the terminal", leader: ptr(proc(10, 'S', "node", 1)),
			k:    fakeKernel{calls: map[int]string{10: epollWait}, epoll: map[uint64][][2]uint64{4: {{0, 0x19}}}},
			want: Result{Name: "node", Waiting: true}},
		{name: "epoll on a socket", leader: ptr(proc(10, 'S', "node", 1)),
			k:    fakeKernel{calls: map[int]string{10: epollWait}, epoll: map[uint64][][2]uint64{4: {{7, 0x19}}}},
			want: Result{Name: "node"}},
		{name: "none", want: Result{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.k.tty == nil {
				c.k.tty = map[uint64]bool{0: true}
			}
			got := Decide(Archs["x86_64"], &c.k, c.leader, func() []Proc { return c.members })
			got.Program = Proc{}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func ptr(p Proc) *Proc { return &p }

// The leader decides alone when it waits on the terminal: the group's
// other members are not asked for (a walk through /proc locally).
func TestDecideLeaderAlone(t *testing.T) {
	k := &fakeKernel{calls: map[int]string{10: readTTY}, tty: map[uint64]bool{0: true}}
	asked := false
	r := Decide(Archs["x86_64"], k, &Proc{PID: 10, State: 'S', Comm: "bash"}, func() []Proc { asked = true; return nil })
	if !r.Waiting || asked {
		t.Errorf("waiting %v, members asked for %v", r.Waiting, asked)
	}
}

// ParseCall reads /proc/PID/syscall's forms.
func TestParseCall(t *testing.T) {
	for line, want := range map[string]struct {
		c  Call
		in bool
	}{
		readTTY + "\n": {Call{0, [6]uint64{0, 0x7f00, 0x400}}, true},
		"441 0x4 0x7f 0x8 0xabc 0x0 0x0 0x7ffe 0x7f01": {Call{441, [6]uint64{4, 0x7f, 8, 0xabc}}, true},
		"running\n":                          {},
		"-1 0x7ffe 0x7f01":                   {},
		"0 0x0 0x1":                          {},
		"":                                   {},
		"0 0xzz 0x0 0x0 0x0 0x0 0x0 0x0 0x0": {},
	} {
		c, in := ParseCall([]byte(line))
		if c != want.c || in != want.in {
			t.Errorf("ParseCall(%q) = %+v %v, want %+v %v", line, c, in, want.c, want.in)
		}
	}
}
