package termstate

import (
	"encoding/binary"
	"runtime"
	"time"
)

// Call is a system call a thread sleeps in, as /proc/PID/syscall shows
// it: the call's number and its six arguments.
type Call struct {
	Nr   uint64
	Args [6]uint64
}

// ParseCall reads a /proc/PID/syscall line: "nr arg0 ... arg5 sp pc"
// (number in decimal, arguments in hex) in a system call; "running", or
// "-1 sp pc" outside one (not ok).
func ParseCall(b []byte) (c Call, ok bool) {
	i, n := 0, 0
	for k := -1; k < len(c.Args); k++ {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		v, good := parseNum(b[i:j], k >= 0)
		if !good {
			return Call{}, false
		}
		if k < 0 {
			c.Nr = v
		} else {
			c.Args[k] = v
		}
		i, n = j, n+1
	}
	return c, n == 1+len(c.Args)
}

// parseNum reads a decimal number, or with hex a hexadecimal one with or
// without "0x", without making a string.
func parseNum(b []byte, hex bool) (v uint64, ok bool) {
	base := uint64(10)
	if hex {
		base = 16
		if len(b) > 2 && b[0] == '0' && b[1] == 'x' {
			b = b[2:]
		}
	}
	for _, ch := range b {
		var d uint64
		switch {
		case ch >= '0' && ch <= '9':
			d = uint64(ch - '0')
		case hex && ch >= 'a' && ch <= 'f':
			d = uint64(ch-'a') + 10
		default:
			return 0, false
		}
		v = v*base + d
	}
	return v, len(b) > 0
}

// Calls are one architecture's numbers of the system calls that wait on
// descriptors: read (one descriptor, the first argument), select and poll
// (sets in the process's memory), epoll (what the epoll descriptor
// watches), and where their timeouts are. The table of them (Archs) is
// the one both collectors decide with: this machine's kernel (Local) and
// another machine's read by a probe.
type Calls struct {
	Read, Select, Poll, Epoll []uint64
	// Timeouts says, for each wait with one, which argument holds it and
	// how.
	Timeouts map[uint64]Timeout
}

// Timeout is where a wait's timeout is: argument Arg, of kind Timespec or
// Timeval (a pointer to the struct; NULL waits for ever) or Millis (an int
// of milliseconds; negative waits for ever).
type Timeout struct {
	Arg  int
	Kind byte
}

// The kinds of Timeout.
const (
	Timespec = 's'
	Timeval  = 'u'
	Millis   = 'm'
)

// generic is the calls of the architectures that use the kernel's
// generic numbering (asm-generic/unistd.h), which has no select, poll or
// epoll_wait of the older kind.
var generic = Calls{
	Read:     []uint64{63, 65, 67}, // read, readv, pread64
	Select:   []uint64{72},         // pselect6
	Poll:     []uint64{73},         // ppoll
	Epoll:    []uint64{22, 441},    // epoll_pwait, epoll_pwait2
	Timeouts: map[uint64]Timeout{72: {4, Timespec}, 73: {2, Timespec}, 22: {3, Millis}, 441: {3, Timespec}},
}

// Archs are the calls of the architectures, by the name uname -m gives
// them. Each is little-endian, as the decision reads memory.
var Archs = map[string]Calls{
	"x86_64": {
		Read:   []uint64{0, 19, 17},     // read, readv, pread64
		Select: []uint64{23, 270},       // select, pselect6
		Poll:   []uint64{7, 271},        // poll, ppoll
		Epoll:  []uint64{232, 281, 441}, // epoll_wait, epoll_pwait, epoll_pwait2
		Timeouts: map[uint64]Timeout{
			23: {4, Timeval}, 270: {4, Timespec}, 7: {2, Millis}, 271: {2, Timespec},
			232: {3, Millis}, 281: {3, Millis}, 441: {3, Timespec},
		},
	},
	"aarch64":     generic,
	"riscv64":     generic,
	"loongarch64": generic,
	"ppc64le": {
		Read:     []uint64{3, 145, 179}, // read, readv, pread64
		Select:   []uint64{280},         // pselect6
		Poll:     []uint64{281},         // ppoll
		Epoll:    []uint64{303, 441},    // epoll_pwait, epoll_pwait2
		Timeouts: map[uint64]Timeout{280: {4, Timespec}, 281: {2, Timespec}, 303: {3, Millis}, 441: {3, Timespec}},
	},
}

// machines names Go's architectures as uname -m does.
var machines = map[string]string{
	"amd64": "x86_64", "arm64": "aarch64", "riscv64": "riscv64", "loong64": "loongarch64", "ppc64le": "ppc64le",
}

// Local returns the calls of this machine's architecture; ok is false
// for one Archs does not list (its waits then count as hidden ones).
func Local() (c Calls, ok bool) {
	c, ok = Archs[machines[runtime.GOARCH]]
	return c, ok
}

// The kinds of wait a call is.
const (
	notWait = iota
	waitRead
	waitSelect
	waitPoll
	waitEpoll
)

// kind says which kind of wait system call nr is.
func (c Calls) kind(nr uint64) int {
	for k, list := range [...][]uint64{c.Read, c.Select, c.Poll, c.Epoll} {
		for _, n := range list {
			if n == nr {
				return waitRead + k
			}
		}
	}
	return notWait
}

// Addrs returns where in the process's memory the decision reads call's
// timeout (a pointer to a struct) and the descriptor set of a select
// (readfds) or poll (the pollfd array); 0 for none. A probe that reads
// the memory beforehand keys what it read by these.
func (c Calls) Addrs(call Call) (timeout, set uint64) {
	if t, ok := c.Timeouts[call.Nr]; ok && t.Kind != Millis {
		timeout = call.Args[t.Arg]
	}
	switch c.kind(call.Nr) {
	case waitSelect:
		set = call.Args[1]
	case waitPoll:
		set = call.Args[0]
	}
	return timeout, set
}

// timeout returns the timeout call asked for, read from its arguments
// or, for a pointer, through k from process pid's memory; finite is false
// for none, or one that cannot be read.
func (c Calls) timeout(call Call, pid int, k Kernel) (d time.Duration, finite bool) {
	t, ok := c.Timeouts[call.Nr]
	if !ok {
		return 0, false
	}
	v := call.Args[t.Arg]
	if t.Kind == Millis {
		ms := int32(v)
		return time.Duration(ms) * time.Millisecond, ms >= 0
	}
	b := make([]byte, 16)
	if v == 0 || !k.Memory(pid, v, b) {
		return 0, false
	}
	unit := time.Nanosecond
	if t.Kind == Timeval {
		unit = time.Microsecond
	}
	return time.Duration(binary.LittleEndian.Uint64(b))*time.Second + time.Duration(binary.LittleEndian.Uint64(b[8:]))*unit, true
}
