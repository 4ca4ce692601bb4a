//go:build linux

package agentpty

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NewSandbox returns a Sandbox the kernel enforces on every child it
// starts, or an error wrapping ErrUnsupported that names what this kernel
// lacks: Start never runs a child unconfined.
//
// On Linux:
//
//   - Landlock (ABI 3 or later, Linux 6.2) confines the filesystem: the
//     child may read and execute everything, and create, write, truncate,
//     rename and delete only under p.WritableRoots. It may also read, write
//     and ioctl its terminal and the device files every program uses
//     (/dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom,
//     /dev/tty, /dev/ptmx and /dev/pts, so it can open terminals of its
//     own), and ioctl any device under /dev it may open. The newest ABI the
//     kernel offers is used.
//   - Without p.AllowNetwork the child gets a network namespace of its own.
//     A host with CAP_SYS_ADMIN (root) creates it on the starting thread and
//     brings its loopback up, so servers a command starts on 127.0.0.1
//     work. Otherwise the child is cloned into new user and network
//     namespaces whose loopback stays down, and Landlock (ABI 4) refuses
//     TCP as well. In the user namespace the child keeps its identity in
//     the kernel, but sees itself and files owned by others as the overflow
//     id 65534 ("nobody"): the uid map would be written from the starting
//     thread after the clone, and Landlock rightly refuses that thread
//     writes to /proc.
//   - The child has no capabilities and no_new_privs is set: a root host's
//     child is root without privileges, and setuid programs (sudo) do not
//     gain any.
//
// The confinement happens on a thread of its own, which ends after the
// start: the host process and its other threads stay unconfined.
//
// Landlock does not cover everything a process can do to files and other
// processes: changing the mode, owner or times of a file the child owns,
// connecting to a Unix socket by path (a Docker or D-Bus socket), and
// signalling processes of the same user all stay possible.
//
// The sandbox works as Options.Sandbox itself, not wrapped in another
// Sandbox: its Prepare marks the command so that only its own start can
// run it.
func NewSandbox(p SandboxPolicy) (Sandbox, error) {
	roots, err := policyRoots(p.WritableRoots)
	if err != nil {
		return nil, err
	}
	abi, err := landlockABI()
	if err != nil {
		return nil, err
	}
	s := &landlockSandbox{abi: abi, roots: roots}
	if !p.AllowNetwork {
		if s.net, err = netnsMode(); err != nil {
			return nil, err
		}
	}
	// Everything a start does but the start, on a thread that ends with
	// it: what this kernel refuses shows here, not at every Start.
	if err := onOwnThread(s.confine); err != nil {
		return nil, errorf(ErrUnsupported, "sandbox: %v", err)
	}
	return s, nil
}

// netMode says how a child without network is cut off.
type netMode int

const (
	netHost    netMode = iota // AllowNetwork: the host's network
	netOwn                    // the starting thread enters a new network namespace with loopback up
	netUserOwn                // the child is cloned into new user and network namespaces
)

type landlockSandbox struct {
	abi   int      // the kernel's Landlock ABI version
	roots []string // absolute
	net   netMode
}

// errNotOnThread stands in cmd.Err between Prepare and startOnThread, so a
// command prepared but started any other way fails instead of running
// without its Landlock domain.
var errNotOnThread = errors.New("sandbox: a sandbox from NewSandbox confines the thread that starts the child; " +
	"use it as Options.Sandbox itself, not inside another Sandbox")

// Prepare puts the command in new namespaces where the policy needs it and
// marks it so that it starts only through startOnThread.
func (s *landlockSandbox) Prepare(cmd *exec.Cmd) error {
	if s.net == netUserOwn {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		// No uid or gid maps: see NewSandbox.
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	}
	if cmd.Err == nil {
		cmd.Err = errNotOnThread
	}
	return nil
}

// startOnThread confines a thread of its own and starts cmd from it: the
// fork inherits the thread's Landlock domain, network namespace, empty
// capabilities and no_new_privs, and the thread ends afterwards.
func (s *landlockSandbox) startOnThread(cmd *exec.Cmd, start func() error) error {
	switch cmd.Err {
	case errNotOnThread:
	case nil:
		return errors.New("sandbox: the command was not prepared by the sandbox starting it")
	default:
		return cmd.Err // the command was not found: nothing to start
	}
	return onOwnThread(func() error {
		if err := s.confine(); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		cmd.Err = nil
		return start()
	})
}

// onOwnThread runs f on a thread that ends with it. The goroutine locks its
// thread and never unlocks it, so the runtime ends the thread rather than
// hand what f did to it (a namespace, a Landlock domain, no capabilities)
// to other goroutines; and while it is locked the runtime starts new
// threads from its template thread, never by cloning this one.
//
// The runtime's main thread is the exception: it cannot end, so the
// runtime would park it for good, confined, inside the host, and in the
// very Landlock domain of the children, which may then trace it. When the
// goroutine lands there, it keeps that thread busy, so that a second
// goroutine runs f elsewhere, and then gives it back untouched.
func onOwnThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if tid := unix.Gettid(); tid == mainThread || tid == unix.Getpid() {
			errc <- onOwnThread(f)
			runtime.UnlockOSThread()
			return
		}
		errc <- f()
	}()
	return <-errc
}

// mainThread is the runtime's main thread: package initialization runs
// on it (runtime.main insists).
var mainThread = unix.Gettid()

// confine applies the policy to the calling thread, which must be locked
// and must end afterwards.
func (s *landlockSandbox) confine() error {
	if s.net == netOwn {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	fd, err := s.ruleset()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// With no capabilities left in any set, and no_new_privs, exec gives
	// the child none back: not even to root, whose new permitted set is cut
	// down to the (empty) old one.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, or an error
// wrapping ErrUnsupported that says what is missing.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
	case unix.ENOSYS:
		return 0, errorf(ErrUnsupported, "landlock is not enabled in this kernel (landlock_create_ruleset: %v; "+
			"it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)", errno)
	case unix.EOPNOTSUPP:
		return 0, errorf(ErrUnsupported, "landlock is not enabled in this kernel (landlock_create_ruleset: %v; "+
			"it is built in but off: add landlock to the lsm= boot parameter)", errno)
	default:
		return 0, errorf(ErrUnsupported, "landlock is not usable here (landlock_create_ruleset: %v)", errno)
	}
	if v < 3 {
		return 0, errorf(ErrUnsupported, "landlock ABI %d cannot stop a child truncating files outside its writable roots "+
			"(that needs ABI 3, Linux 6.2)", v)
	}
	return int(v), nil
}

// Landlock rights, as groups the rules grant.
const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llFile are the rights a rule on a file, rather than a directory, may
	// grant.
	llFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llDevice = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS returns the filesystem rights Landlock ABI abi (3 or later, as
// landlockABI requires) knows. The ruleset handles all of them, so each is
// denied where no rule grants it.
func handledFS(abi int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER | // renames and links across directories (ABI 2)
		unix.LANDLOCK_ACCESS_FS_TRUNCATE) // ABI 3
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// deviceFiles are what every program, and a terminal, writes. /dev/ptmx
// and /dev/pts also serve the host: creack/pty opens the new terminal on
// the confined thread.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts"}

// The kernel's structures (linux/landlock.h). The ruleset attribute grows
// with the ABI; an older kernel accepts the larger size while the fields
// it does not know are zero. The path rule is packed in C: the kernel
// reads its first 12 bytes.
type llRulesetAttr struct{ handledFS, handledNet, scoped uint64 }

type llPathBeneath struct {
	allowed  uint64
	parentFD int32
}

// ruleset builds the Landlock ruleset for s and returns its descriptor
// (close-on-exec, as the kernel makes it).
func (s *landlockSandbox) ruleset() (int, error) {
	handled := handledFS(s.abi)
	attr := llRulesetAttr{handledFS: handled}
	if s.net == netUserOwn && s.abi >= 4 {
		// No rule grants them, so every TCP bind and connect is refused.
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	fd := int(r)
	add := func(path string, access uint64, optional bool) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if optional && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("landlock rule for %s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return fmt.Errorf("landlock rule for %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFile
		}
		rule := llPathBeneath{allowed: access & handled, parentFD: int32(pfd)}
		if rule.allowed == 0 {
			return nil
		}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock_add_rule for %s: %w", path, errno)
		}
		return nil
	}
	err := add("/", llRead, false)
	if err == nil {
		err = add("/dev", llRead|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, true)
	}
	for _, dev := range deviceFiles {
		if err == nil {
			err = add(dev, llDevice, true)
		}
	}
	for _, root := range s.roots {
		if err == nil {
			err = add(root, handled, false)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// loopbackUp brings up the loopback of the calling thread's network
// namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// netnsMode finds how this host can give a child a network of its own.
func netnsMode() (netMode, error) {
	own := onOwnThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		return loopbackUp()
	})
	if own == nil {
		return netOwn, nil
	}
	if err := probeUserNetns(); err != nil {
		return 0, errorf(ErrUnsupported, "sandbox: no network namespace for a child without network: %v; %v", own, err)
	}
	return netUserOwn, nil
}

// probeUserNetns clones a child into new user and network namespaces, as
// Prepare arranges for every start, and has it exec a path that cannot
// exist: ENOENT from exec means the clone worked. Nothing runs, and
// ForkExec reaps the child.
func probeUserNetns() error {
	attr := &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}}
	pid, err := syscall.ForkExec("/proc/agentpty-probe/none", []string{"agentpty-probe"}, attr)
	switch {
	case err == nil: // cannot happen
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return nil
	case errors.Is(err, syscall.ENOENT):
		return nil
	}
	return fmt.Errorf("clone(CLONE_NEWUSER|CLONE_NEWNET): %w", err)
}

// String describes the confinement, for logs.
func (s *landlockSandbox) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "landlock ABI %d; writable: %s; network: ", s.abi, describeRoots(s.roots))
	switch s.net {
	case netHost:
		b.WriteString("the host's")
	case netOwn:
		b.WriteString("a namespace of its own, loopback up")
	case netUserOwn:
		b.WriteString("user and network namespaces of its own, loopback down")
		if s.abi >= 4 {
			b.WriteString(", TCP refused by landlock")
		}
	}
	return b.String()
}
