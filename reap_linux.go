package agentpty

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A session's child is reaped through a pidfd of its own in the runtime's
// poller: the kernel makes the pidfd readable when the child exits, so an
// idle session holds no thread (os/exec's Wait blocks one in waitid per
// child: four thousand sessions, four thousand threads and their stacks).

// wantPidfd asks the fork for a pidfd of the child (CLONE_PIDFD), which the
// caller owns: os.StartProcess keeps a duplicate for the Process.
func wantPidfd(cmd *exec.Cmd) {
	fd := -1
	cmd.SysProcAttr.PidFD = &fd
}

// closePidfd closes the pidfd the fork made for a child that is not
// kept (a start that failed after the fork).
func closePidfd(cmd *exec.Cmd) {
	if fd := takePidfd(cmd); fd >= 0 {
		unix.Close(fd)
	}
}

// takePidfd returns the pidfd the fork made for the caller (-1 for none)
// and forgets it.
func takePidfd(cmd *exec.Cmd) int {
	a := cmd.SysProcAttr
	if a == nil || a.PidFD == nil {
		return -1
	}
	fd := *a.PidFD
	a.PidFD = nil
	return fd
}

// childWaiter reaps one started child, through its pidfd where the
// kernel gives one (Linux 5.4+), else through os/exec's Wait.
type childWaiter struct {
	cmd    *exec.Cmd     // nil once the pidfd reaps: an idle session keeps no copy of the environment
	f      *os.File      // the pidfd, in the poller; nil: cmd.Wait reaps
	reaped chan struct{} // closed once the pidfd has reaped the child
}

// newChildWaiter takes the child's pidfd from cmd. With a pidfd, cmd's
// Process is released (its own duplicate closed) and the child is reaped
// here; cmd.Process must not be used afterwards.
func newChildWaiter(cmd *exec.Cmd) childWaiter {
	w := childWaiter{cmd: cmd}
	fd := takePidfd(cmd)
	if fd < 0 {
		return w
	}
	if unix.SetNonblock(fd, true) != nil {
		unix.Close(fd)
		return w
	}
	_ = cmd.Process.Release()
	return childWaiter{f: os.NewFile(uintptr(fd), "pidfd"), reaped: make(chan struct{})}
}

// wait waits for the child to exit, reaps it and returns its status.
func (w childWaiter) wait() ExitStatus {
	if w.f == nil {
		err := w.cmd.Wait()
		return exitStatus(w.cmd.ProcessState, err)
	}
	ws, err := w.reap()
	w.f.Close()
	close(w.reaped)
	if err != nil {
		return ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	return waitExitStatus(ws)
}

// awaitReaped waits, up to d, until the child is reaped: a cgroup is
// removed only once its killed leader is, and the reaper is this
// process's own. It asks the reaper to look again first, so that even a
// readiness the poller never reported does not hold the cgroup.
func (w childWaiter) awaitReaped(d time.Duration) {
	if w.reaped == nil {
		return
	}
	_ = w.f.SetReadDeadline(time.Now()) // fails once closed: reaped
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.reaped:
	case <-t.C:
	}
}

// gone is closed once the child is reaped; nil where cmd.Wait reaps.
func (w childWaiter) gone() <-chan struct{} { return w.reaped }

// signal sends sigs, in order, to the child through its pidfd, which
// names the child alone even once another process has its number; false
// where there is no pidfd or the first signal did not reach the child.
func (w childWaiter) signal(sigs ...syscall.Signal) bool {
	if w.f == nil {
		return false
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false // the first signal reached the child; the rest may find it gone
	if rc.Control(func(fd uintptr) {
		for i, sig := range sigs {
			if err := unix.PidfdSendSignal(int(fd), sig, nil, 0); i == 0 {
				ok = err == nil
			}
		}
	}) != nil {
		return false // closed: reaped
	}
	return ok
}

// reap waits in the poller until the pidfd is readable (the child has
// exited) and reaps the child. Where the poller cannot watch the pidfd it
// waits for the child in waitid, holding a thread, as os/exec would.
func (w childWaiter) reap() (syscall.WaitStatus, error) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var ws syscall.WaitStatus
	var werr error
	done := false
	look := func(fd uintptr) bool {
		ws, done, werr = waitPidfd(int(fd), unix.WNOHANG)
		return done || werr != nil
	}
	// awaitReaped's deadline: look again, then wait on.
	for err = rc.Read(look); errors.Is(err, os.ErrDeadlineExceeded); err = rc.Read(look) {
		_ = w.f.SetReadDeadline(time.Time{})
	}
	switch {
	case werr != nil:
		return 0, werr
	case done:
		return ws, nil
	case err == nil:
		return 0, errors.New("pidfd: woken without an exit")
	}
	// Not pollable: wait in the kernel (a non-blocking pidfd would make
	// waitid return EAGAIN).
	err = rc.Control(func(fd uintptr) {
		if werr = unix.SetNonblock(int(fd), false); werr == nil {
			ws, done, werr = waitPidfd(int(fd), 0)
		}
	})
	if err == nil {
		err = werr
	}
	return ws, err
}

// The si_code values of a child's siginfo (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldDumped = 3
)

// siginfoChild is the part of siginfo_t that waitid fills for a child.
type siginfoChild struct {
	signo, errno, code int32
	_                  int32
	pid                int32
	uid                uint32
	status             int32
	_                  [100]byte
}

// waitPidfd reaps the child of pidfd fd once it has exited; with
// unix.WNOHANG, done is false while it runs.
func waitPidfd(fd, options int) (ws syscall.WaitStatus, done bool, err error) {
	var info siginfoChild
	for {
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PIDFD, uintptr(fd), uintptr(unsafe.Pointer(&info)),
			uintptr(unix.WEXITED|options), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, false, os.NewSyscallError("waitid", e)
		}
		break
	}
	if info.pid == 0 {
		return 0, false, nil
	}
	// As the kernel's wait4 would have put it.
	switch info.code {
	case cldExited:
		ws = syscall.WaitStatus(info.status << 8)
	case cldDumped:
		ws = syscall.WaitStatus(info.status) | 0x80
	default: // CLD_KILLED
		ws = syscall.WaitStatus(info.status)
	}
	return ws, true, nil
}
