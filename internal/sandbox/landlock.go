//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LandlockABI returns the kernel's Landlock ABI version, or the errno of
// landlock_create_ruleset when the kernel has none.
func LandlockABI() (int, unix.Errno) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return int(v), errno
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

// handledFS returns the filesystem rights Landlock ABI abi (3 or later)
// knows. The ruleset handles all of them, so each is denied where no rule
// grants it.
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

// scopes returns what Landlock ABI abi can scope to the domain: signals
// and abstract Unix sockets (ABI 6, Linux 6.12).
func scopes(abi int) uint64 {
	if abi >= 6 {
		return unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	return 0
}

// Scoped reports whether Landlock ABI abi confines signals and abstract
// Unix sockets to the sandbox.
func Scoped(abi int) bool { return scopes(abi) != 0 }

// deviceFiles are what every program, and a terminal, writes, as
// bubblewrap's private /dev has them: /dev/console is the child's own
// terminal, /dev/pts a devpts of the sandbox's own, /dev/shm a private
// tmpfs.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/console", "/dev/ptmx", "/dev/pts"}

// The kernel's structures (linux/landlock.h). The ruleset attribute grows
// with the ABI; an older kernel accepts the larger size while the fields
// it does not know are zero. The path rule is packed in C: the kernel
// reads its first 12 bytes.
type llRulesetAttr struct{ handledFS, handledNet, scoped uint64 }

type llPathBeneath struct {
	allowed  uint64
	parentFD int32
}

// Restrict confines the calling thread, and what it executes, with
// Landlock ABI abi: everything may be read and executed; only the roots,
// the device files and /dev/shm written; and from ABI 6 on, no signal and
// no abstract Unix socket reaches a process outside the domain.
// no_new_privs must be set. Root i is the file open at rootFDs[i], which
// the host opened without following symlinks: a path looked up here could
// lead elsewhere by now. roots name them in errors.
func Restrict(abi int, roots []string, rootFDs []int) error {
	handled := handledFS(abi)
	attr := llRulesetAttr{handledFS: handled, scoped: scopes(abi)}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	fd := int(r)
	defer unix.Close(fd)
	err := addRule(fd, handled, "/", llRead, false)
	if err == nil {
		err = addRule(fd, handled, "/dev", llRead|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, true)
	}
	for _, dev := range deviceFiles {
		if err == nil {
			err = addRule(fd, handled, dev, llDevice, true)
		}
	}
	if err == nil {
		err = addRule(fd, handled, "/dev/shm", handled, true)
	}
	for i, root := range roots {
		if err == nil {
			err = addRuleFD(fd, handled, rootFDs[i], root, handled)
		}
	}
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addRule grants access beneath path in ruleset fd; a file gets the
// rights a file can have.
func addRule(fd int, handled uint64, path string, access uint64, optional bool) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	defer unix.Close(pfd)
	return addRuleFD(fd, handled, pfd, path, access)
}

// addRuleFD grants access beneath the file open at pfd, named path.
func addRuleFD(fd int, handled uint64, pfd int, path string, access uint64) error {
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
