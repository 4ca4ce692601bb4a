package agentpty

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/termstate"
	"golang.org/x/sys/unix"
)

// fgProcs lists the processes of the terminal's foreground group, leader
// first: the ones a line typed now could reach.
func fgProcs(master *os.File) []fgProc {
	pgrp, peer := termstate.GroupAndPeer(master)
	var tty uint64
	if peer >= 0 {
		var st unix.Stat_t
		if unix.Fstat(peer, &st) == nil {
			tty = st.Rdev
		}
		unix.Close(peer)
	}
	if pgrp <= 0 {
		return nil
	}
	var out []fgProc
	members := termstate.GroupMembers(pgrp)
	if st, ok := proc.ReadStat(pgrp, make([]byte, 512)); ok && !st.Gone() {
		members = append([]termstate.Member{{PID: pgrp, Stat: st}}, members...)
	}
	for _, m := range members {
		pid, st := m.PID, m.Stat
		p := fgProc{pid: pid, name: st.Comm}
		p.exe, _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		// Every thread may read the terminal: the process reads when one
		// does, and waits for its child only when all of them do.
		p.waiting = true
		buf := make([]byte, 512)
		for _, tid := range threads(pid) {
			ts, ok := st, true // the leader's stat was read with the group
			if tid != pid {
				ts, ok = proc.ReadStat(tid, buf)
			}
			if !ok || ts.State != 'S' {
				p.waiting = false // running, stopped or gone: judged as it is
				continue
			}
			w, known := termstate.ThreadOnTerminal(tid, tty)
			if !known {
				// The kernel hides the system call of a privileged program
				// (sudo, su) from a host that is not root: at a prompt with
				// echo off, it is the one reading.
				w.On = echoOff(master)
			}
			p.reading = p.reading || w.On
			p.waiting = p.waiting && inChildWait(tid)
		}
		out = append(out, p)
	}
	return out
}

// threads returns the ids of pid's threads, the leader's first; /proc/TID
// reaches each as it reaches a process. Only pid when they cannot be read.
func threads(pid int) []int {
	out := []int{pid}
	entries, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid {
			out = append(out, tid)
		}
	}
	return out
}

// inChildWait reports that pid is blocked waiting for a child to end, as
// a shell is while its command runs: it reads nothing meanwhile.
func inChildWait(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return false
	}
	nr, err := strconv.ParseUint(strings.SplitN(string(b), " ", 2)[0], 10, 64)
	return err == nil && (nr == unix.SYS_WAIT4 || nr == unix.SYS_WAITID)
}

// untrusted says why process p may not be given a secret under list
// (Options.SecretPrograms or SecretRelays), or returns "" when it may: the executable it
// runs is one the list names (the same file, compared by device and
// inode, so a copy elsewhere is not), owned by root and writable by no one
// else.
func untrusted(p fgProc, list []string) string {
	fi, err := os.Stat("/proc/" + strconv.Itoa(p.pid) + "/exe")
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 && euidOf(p.pid) == 0 {
		return untrustedPrivileged(p, list)
	}
	if err != nil {
		return "its executable cannot be looked at (" + err.Error() + ")"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "its executable cannot be looked at"
	}
	listed := false
	for _, want := range list {
		path := want
		if !strings.Contains(want, "/") {
			if path, err = exec.LookPath(want); err != nil {
				continue
			}
		}
		if w, err := os.Stat(path); err == nil && os.SameFile(fi, w) {
			listed = true
			break
		}
	}
	switch {
	case !listed:
		return "it is not in the list"
	case st.Uid != 0:
		return "its executable is not owned by root"
	case fi.Mode().Perm()&0o022 != 0:
		return "its executable is writable by others than root"
	}
	if tracer := tracerOf(p.pid); tracer != 0 {
		return "it is traced by pid " + strconv.Itoa(tracer) + ", which can read what it reads"
	}
	return untrustedCode(p.pid)
}

// untrustedPrivileged judges a process the host may not look into: it
// runs with root's privileges, which only a setuid program the system
// installed gives to a session that is not root's (sudo, su), and neither
// the session nor the host can read its memory. Its command name must be
// on the list, and nothing may trace it.
func untrustedPrivileged(p fgProc, list []string) string {
	listed := false
	for _, want := range list {
		base := filepath.Base(want)
		listed = listed || base == p.name || (len(p.name) == 15 && strings.HasPrefix(base, p.name)) // the kernel keeps 15 bytes of a name
	}
	switch {
	case !listed:
		return "it is not in the list"
	case tracerOf(p.pid) != 0:
		return "it is traced, or its tracer cannot be told"
	}
	return ""
}

// euidOf returns the effective user id of pid, -1 when it cannot be told.
func euidOf(pid int) int {
	if v, ok := statusField(pid, "Uid:"); ok {
		if f := strings.Fields(v); len(f) >= 2 {
			if n, err := strconv.Atoi(f[1]); err == nil {
				return n
			}
		}
	}
	return -1
}

// statusField returns the value of a line of /proc/PID/status.
func statusField(pid int, name string) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// tracerOf returns the pid tracing pid (ptrace), 0 for none; -1 when it
// cannot be told.
func tracerOf(pid int) int {
	v, ok := statusField(pid, "TracerPid:")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		return -1
	}
	return n
}

// untrustedCode says why the code pid runs besides its executable may not
// be trusted, or returns "": every file it has mapped executable (shared
// libraries, a library LD_PRELOAD or LD_LIBRARY_PATH brought in) must be
// owned by root, writable by no one else, and still the file (the inode)
// that was mapped.
func untrustedCode(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return "its memory map cannot be read (" + err.Error() + ")"
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		// address perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[1], "x") || !strings.HasPrefix(f[5], "/") || seen[f[5]+" "+f[4]] {
			continue
		}
		seen[f[5]+" "+f[4]] = true
		path := strings.Join(f[5:], " ")
		ino, _ := strconv.ParseUint(f[4], 10, 64)
		var st unix.Stat_t
		switch {
		case unix.Stat(path, &st) != nil || st.Ino != ino:
			return "it runs code from " + path + ", which was removed or replaced since"
		case st.Uid != 0:
			return "it runs code from " + path + ", which is not owned by root"
		case st.Mode&0o022 != 0:
			return "it runs code from " + path + ", which is writable by others than root"
		}
	}
	return ""
}
