// Package termstate decides whether a terminal's foreground program waits
// for input, once, for two collectors: this machine's kernel, read from
// /proc (Foreground), and another machine's, read by a backend's probe.
// Both fill the same input (Proc, Kernel) and call Decide, which reads
// waits with one table of system calls (Archs) and one set of timing
// rules (this file).
package termstate

import "time"

// Waits on the terminal that count only once the terminal has been quiet.
const (
	// Shortest is the shortest timeout of a select or poll on the
	// terminal that counts as waiting for input at all: vim, for one,
	// pauses 25 ms that way between showing a mode and drawing the keys it
	// already read.
	Shortest = 100 * time.Millisecond
	// Relay: a program that waits on the terminal and on something else
	// at once (ssh and telnet on their socket, node's event loop, a tmux
	// client) can print without input; it counts as waiting once its
	// output and input have paused this long.
	Relay = 300 * time.Millisecond
	// PendingMax is the longest timeout that is a step the program is
	// about to take (vim's wait for the rest of an escape sequence, 100 ms
	// in Debian's defaults, 1 s with -u NONE; a REPL's timer); a longer one
	// is housekeeping (vim's 4 s updatetime, htop's 1.5 s refresh).
	PendingMax = time.Second
	// PendingSlack is what a pending timeout is given beyond its length,
	// as it began a moment after the last output or input.
	PendingSlack = 100 * time.Millisecond
	// Handoff: a program that reads its terminal on a thread other than
	// its main one hands what it read to another thread, which may not run
	// at once; the reading thread may block on the terminal again first,
	// with no thread of the program running. Go's runtime, for one, gives
	// the waiting goroutine a thread only when its monitor takes the
	// processor back from the thread blocked in read, up to 10 ms later. So
	// such a wait counts once output and input have paused this long.
	Handoff = 50 * time.Millisecond
)

// Quiet is how long a wait on the terminal must have seen no output and
// no input before it counts as waiting for input: at once for a wait on
// the terminal alone, Relay when the program waits on other descriptors
// too (others), and past a pending timeout of d (finite: it has one).
func Quiet(others bool, d time.Duration, finite bool) time.Duration {
	var q time.Duration
	if others {
		q = Relay
	}
	if finite && d <= PendingMax {
		q = max(q, d+PendingSlack)
	}
	return q
}
