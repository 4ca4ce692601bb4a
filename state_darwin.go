package agentpty

import (
	"os"

	"golang.org/x/sys/unix"
)

// foreground reads what macOS says about the terminal's foreground process
// group: TIOCGPGRP on the master names it, and sysctl kern.proc.pgrp gives
// each member's name and run state. macOS shows no process's system call
// or wait channel to another process, so a group whose members all sleep
// counts as waiting on the terminal: `sleep 5` reads as waiting_input
// there once its output is quiet. Typed input not yet read is not seen.
func foreground(master *os.File) fgReport {
	pgrp := 0
	_ = control(master, func(fd int) { pgrp, _ = unix.IoctlGetInt(fd, unix.TIOCGPGRP) })
	var rep fgReport
	if pgrp <= 0 {
		return rep
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgrp)
	if err != nil || len(procs) == 0 {
		return rep
	}
	rep.waiting = true
	for _, p := range procs {
		name := unix.ByteSliceToString(p.Proc.P_comm[:])
		if rep.name == "" || int(p.Proc.P_pid) == pgrp {
			rep.name, rep.pid = name, int(p.Proc.P_pid)
		}
		const sleeping = 3 // SSLEEP in <sys/proc.h>
		if p.Proc.P_stat != sleeping {
			rep.waiting = false
		}
	}
	return rep
}

// procFiles keeps nothing open here: see the Linux one.
type procFiles struct{}

func (*procFiles) close() {}

// foregroundVia is foreground; nothing is kept between reads here.
func foregroundVia(master *os.File, _ *procFiles) fgReport { return foreground(master) }
