//go:build linux || darwin

package agentpty

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// startChild starts cmd under a new terminal of cols×rows as the leader of
// its own session, with the terminal as its controlling tty, keeping
// whatever else a sandbox set in SysProcAttr. It returns the master side.
func startChild(cmd *exec.Cmd, cols, rows int) (*os.File, error) {
	master, tty, err := openTerminal()
	if err != nil {
		return nil, hostLimit(err, true)
	}
	defer tty.Close() // the child holds its own copies
	if err := setSize(master, cols, rows); err != nil {
		master.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Setsid makes the child its own process group too; Setpgid as well
	// would make the fork fail. Ctty 0 is the child's stdin, the terminal.
	a := cmd.SysProcAttr
	a.Setsid, a.Setctty, a.Setpgid, a.Ctty = true, true, false, 0
	wantPidfd(cmd)
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, err
	}
	return master, nil
}

// openTerminal opens a pseudo-terminal whose master is in non-blocking
// mode, so reads and writes go through the runtime poller: deadlines work
// and Close unblocks a pending Read. creack/pty's ioctls call Fd(), which
// leaves the master blocking; a duplicate made non-blocking replaces it.
func openTerminal() (master, tty *os.File, err error) {
	m, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.Dup(int(m.Fd()))
	m.Close()
	if err == nil {
		unix.CloseOnExec(fd)
		err = unix.SetNonblock(fd, true)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty, nil
}

// control runs fn on f's descriptor through SyscallConn: Fd() would put
// the master back into blocking mode.
func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// readBlocks reports that v is a file or connection whose descriptor is
// in blocking mode (an Fd call leaves it so): a read deadline then cannot
// cut a read under way.
func readBlocks(v any) bool {
	c, ok := v.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	blocks := false
	_ = rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		blocks = err == nil && fl&unix.O_NONBLOCK == 0
	})
	return blocks
}

// setSize resizes the terminal; the kernel sends SIGWINCH to the program.
func setSize(f *os.File, cols, rows int) error {
	ws := &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}
	var err error
	if cerr := control(f, func(fd int) { err = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) }); cerr != nil {
		return cerr
	}
	return err
}

// pendingInput returns the bytes waiting in the terminal to be read.
func pendingInput(f *os.File) int {
	n := 0
	_ = control(f, func(fd int) { n, _ = unix.IoctlGetInt(fd, ioctlInq) })
	return n
}

// echoOff reports a terminal in line mode that does not echo: a password
// prompt. Readline and full-screen programs turn echo off too, but they
// also leave line mode, so they do not count.
func echoOff(f *os.File) bool {
	var t *unix.Termios
	_ = control(f, func(fd int) { t, _ = unix.IoctlGetTermios(fd, ioctlGetTermios) })
	return t != nil && t.Lflag&unix.ECHO == 0 && t.Lflag&unix.ICANON != 0
}

// echoesNothing reports a terminal that does not echo what is typed, in
// any mode: a password prompt, or a relay's raw terminal.
func echoesNothing(f *os.File) bool {
	var t *unix.Termios
	_ = control(f, func(fd int) { t, _ = unix.IoctlGetTermios(fd, ioctlGetTermios) })
	return t != nil && t.Lflag&unix.ECHO == 0
}

func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return waitExitStatus(ws)
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// waitExitStatus is how a reaped child ended.
func waitExitStatus(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// signalForeground delivers sig to the terminal's foreground process
// group, where a key like Ctrl-C would land, falling back to the leader.
func signalForeground(f *os.File, leader int, sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return errorf(ErrInvalid, "signal %v is not a Unix signal", sig)
	}
	pgrp := 0
	_ = control(f, func(fd int) { pgrp, _ = unix.IoctlGetInt(fd, unix.TIOCGPGRP) })
	if pgrp > 0 {
		return syscall.Kill(-pgrp, ss)
	}
	return syscall.Kill(leader, ss)
}

// parseSignal reads a signal name, with or without "SIG" and in any case,
// or its number.
func parseSignal(name string) (os.Signal, bool) {
	if n, ok := signalNumber(name); ok {
		if n <= 0 || unix.SignalName(syscall.Signal(n)) == "" {
			return nil, false
		}
		return syscall.Signal(n), true
	}
	sig := unix.SignalNum(signalName(name))
	return sig, sig != 0
}

// tryWrite writes what the terminal takes without waiting and returns how
// much that was.
func tryWrite(f *os.File, p []byte) int {
	n := 0
	_ = control(f, func(fd int) {
		if k, err := unix.Write(fd, p); err == nil {
			n = k
		}
	})
	return n
}

// processExists reports whether a process with this pid is alive now.
func processExists(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// signalNumber reads a signal given as a number ("2"), or reports false.
func signalNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(name))
	return n, err == nil
}

// signalName spells a signal as the kernel's tables do: "int" and
// "SIGINT" both become "SIGINT".
func signalName(name string) string {
	name = strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return name
}
