package termstate

import (
	"os"

	"golang.org/x/sys/unix"
)

// Foreground reads what macOS says about the terminal's foreground
// process group: TIOCGPGRP on the master names it, and sysctl
// kern.proc.pgrp gives each member's name and run state. macOS shows no
// process's system call or wait channel to another process, so a group
// whose members all sleep counts as waiting on the terminal: `sleep 5`
// reads as waiting_input there once its output is quiet. Typed input not
// yet read is not seen.
func Foreground(master *os.File, _ *Files, _ func(*os.File) bool) Result {
	pgrp := 0
	_ = control(master, func(fd int) { pgrp, _ = unix.IoctlGetInt(fd, unix.TIOCGPGRP) })
	var r Result
	if pgrp <= 0 {
		return r
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgrp)
	if err != nil || len(procs) == 0 {
		return r
	}
	r.Waiting = true
	for _, p := range procs {
		name := unix.ByteSliceToString(p.Proc.P_comm[:])
		if r.Name == "" || int(p.Proc.P_pid) == pgrp {
			r.Name, r.Program = name, Proc{PID: int(p.Proc.P_pid), Comm: name}
		}
		const sleeping = 3 // SSLEEP in <sys/proc.h>
		if p.Proc.P_stat != sleeping {
			r.Waiting = false
		}
	}
	return r
}

// Files keeps nothing open here: see the Linux one.
type Files struct{}

// Close does nothing: nothing is kept.
func (*Files) Close() {}
