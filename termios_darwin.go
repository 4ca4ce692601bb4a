package agentpty

import "golang.org/x/sys/unix"

// The ioctls that read the terminal's modes and its unread input
// (FIONREAD, from <sys/filio.h>).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
	ioctlInq        = 0x4004667f
)

// iuclc is the input mode that lowers upper case (Linux's IUCLC).
const iuclc = 0 // none

// vdisable is _POSIX_VDISABLE: a special character set to it is off.
const vdisable = 0xff

// controlCharIndex names the special characters of c_cc (VMIN and VTIME
// are counts).
var controlCharIndex = []ccIndex{
	{"VINTR", "intr", unix.VINTR}, {"VQUIT", "quit", unix.VQUIT}, {"VERASE", "erase", unix.VERASE},
	{"VKILL", "kill", unix.VKILL}, {"VEOF", "eof", unix.VEOF}, {"VEOL", "eol", unix.VEOL},
	{"VEOL2", "eol2", unix.VEOL2}, {"VSTART", "start", unix.VSTART}, {"VSTOP", "stop", unix.VSTOP},
	{"VSUSP", "susp", unix.VSUSP}, {"VDSUSP", "dsusp", unix.VDSUSP}, {"VREPRINT", "rprnt", unix.VREPRINT},
	{"VDISCARD", "discard", unix.VDISCARD}, {"VWERASE", "werase", unix.VWERASE}, {"VLNEXT", "lnext", unix.VLNEXT},
	{"VSTATUS", "status", unix.VSTATUS},
}
