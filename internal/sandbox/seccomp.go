//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// auditArch returns the seccomp architecture of this build, or false where
// the filter is not written for it: architectures that multiplex the
// socket calls (socketcall) or are big-endian need a filter of their own.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64, true
	}
	return 0, false
}

// FilterSupported reports whether the seccomp filter knows this
// architecture.
func FilterSupported() bool {
	_, ok := auditArch()
	return ok
}

// deniedCalls fail with EPERM in every sandbox: io_uring performs socket
// and file operations that no seccomp filter sees, and the kernel
// keyrings hold the host user's secrets.
var deniedCalls = []uint32{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY}

// bpf is a classic BPF instruction whose jumps name labels.
type bpf struct {
	label  string // this instruction's, if any
	code   uint16
	k      uint32
	jt, jf string // jump targets; "" is the next instruction
}

const (
	bpfLd   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfAnd  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K
	offNr   = 0  // seccomp_data.nr
	offArch = 4  // seccomp_data.arch
	offArg0 = 16 // the low half of args[0] (little-endian)
	offArg1 = 24
)

// filter returns the program (classic BPF jumps only forward): a foreign
// architecture (i386 or x32 calls on amd64) gets ENOSYS for everything,
// deniedCalls EPERM, unshare and clone EPERM when they ask for a user
// namespace (in which the child would hold every capability: raw sockets,
// nf_tables, mounts, the usual road to a kernel exploit), clone3 ENOSYS
// (a filter cannot read the flags it points to; the C library then falls
// back to clone), and without network every socket family but IPv4,
// IPv6 and netlink (all three confined to the sandbox's own network
// namespace) EACCES, and so do datagram socketpairs: no Unix socket
// outside the sandbox can be reached by path (a datagram socket could
// send to one with sendto; stream and seqpacket pairs cannot), nor a
// family no network namespace confines (vsock to the hypervisor,
// Bluetooth).
func filter(arch uint32, network bool) []bpf {
	p := []bpf{
		{code: bpfLd, k: offArch},
		{code: bpfJeq, k: arch, jf: "nosys"},
		{code: bpfLd, k: offNr},
	}
	if runtime.GOARCH == "amd64" {
		p = append(p, bpf{code: bpfJge, k: 0x40000000, jt: "nosys"}) // __X32_SYSCALL_BIT
	}
	for _, nr := range deniedCalls {
		p = append(p, bpf{code: bpfJeq, k: nr, jt: "eperm"})
	}
	p = append(p,
		bpf{code: bpfJeq, k: unix.SYS_CLONE3, jt: "nosys"},
		bpf{code: bpfJeq, k: unix.SYS_UNSHARE, jt: "nsflags"},
		bpf{code: bpfJeq, k: unix.SYS_CLONE, jt: "nsflags"}) // flags first on every architecture here
	if !network {
		p = append(p,
			bpf{code: bpfJeq, k: unix.SYS_SOCKET, jt: "socket"},
			bpf{code: bpfJeq, k: unix.SYS_SOCKETPAIR, jt: "socketpair"})
	}
	p = append(p, bpf{code: bpfRet, k: unix.SECCOMP_RET_ALLOW})
	if !network {
		p = append(p,
			bpf{label: "socket", code: bpfLd, k: offArg0},
			bpf{code: bpfJeq, k: unix.AF_INET, jt: "allow"},
			bpf{code: bpfJeq, k: unix.AF_INET6, jt: "allow"},
			bpf{code: bpfJeq, k: unix.AF_NETLINK, jt: "allow", jf: "eacces"},
			bpf{label: "socketpair", code: bpfLd, k: offArg0},
			bpf{code: bpfJeq, k: unix.AF_UNIX, jf: "allow"},
			bpf{code: bpfLd, k: offArg1},
			bpf{code: bpfAnd, k: 0xf}, // SOCK_TYPE_MASK: without SOCK_NONBLOCK and SOCK_CLOEXEC
			bpf{code: bpfJeq, k: unix.SOCK_STREAM, jt: "allow"},
			bpf{code: bpfJeq, k: unix.SOCK_SEQPACKET, jt: "allow", jf: "eacces"})
	}
	return append(p,
		bpf{label: "nsflags", code: bpfLd, k: offArg0},
		bpf{code: bpfJset, k: unix.CLONE_NEWUSER, jt: "eperm"},
		bpf{label: "allow", code: bpfRet, k: unix.SECCOMP_RET_ALLOW},
		bpf{label: "nosys", code: bpfRet, k: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		bpf{label: "eperm", code: bpfRet, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf{label: "eacces", code: bpfRet, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)})
}

// assemble resolves the labels into jump offsets.
func assemble(p []bpf) ([]unix.SockFilter, error) {
	at := map[string]int{}
	for i, in := range p {
		if in.label != "" {
			at[in.label] = i
		}
	}
	jump := func(i int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		t, ok := at[label]
		if !ok || t <= i || t-i-1 > 255 {
			return 0, fmt.Errorf("seccomp: bad jump from %d to %q", i, label)
		}
		return uint8(t - i - 1), nil
	}
	out := make([]unix.SockFilter, len(p))
	for i, in := range p {
		jt, err := jump(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := jump(i, in.jf)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}

// installFilter applies the filter to the calling thread, and what it
// executes. no_new_privs must be set.
func installFilter(network bool) error {
	arch, ok := auditArch()
	if !ok {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	prog, err := assemble(filter(arch, network))
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
