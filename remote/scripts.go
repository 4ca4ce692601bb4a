package remote

import (
	_ "embed" // the scripts
	"strconv"
	"strings"
	"time"

	"github.com/agentpty/agentpty/internal/endsched"
)

// The shell that runs on the host, in files checked by shellcheck -s sh
// (make shellcheck) and run under dash and bash by the tests: probe.sh
// reads a terminal's state (see Parse), end.sh signals a command's
// processes, and each transport's script (serve.sh, exec.sh) defines the
// hooks they name.
var (
	//go:embed probe.sh
	probeSh string
	//go:embed end.sh
	endSh string
	//go:embed serve.sh
	serveSh string
	//go:embed exec.sh
	execSh string
)

// ServeScript is the shell for a transport that keeps one shell on the
// host for all its terminals (sshpty's probe shell over one channel): it
// answers requests read from its standard input, one a line, "Q=N; CALL;
// echo "$Q ."; prefork", where CALL is "probe PID HINT" after the
// assignments of Vars and FN=NONCE, "sig PID NAME", or EndCall's; and
// "( { unwait; Q=N; CALL; echo "$Q ."; } & )" for one that
// runs in the background (an end): not this shell's child, so that no
// zombie of it stays (dash reaps a background job only at its next
// foreground one). Every line of an answer begins with "N ".
// It needs sh, stty, kill and sleep (and dd and od for a select or
// poll's descriptors); with bash 5 a probe starts no process of its own,
// and with perl too, no stty: one perl reads the terminals' modes.
func ServeScript() string { return serveScript }

// The scripts as sent, joined once: a kubepty probe sends ExecScript, and
// each probe shell's start ServeInput.
var (
	serveScript = probeSh + endSh + serveSh
	serveInput  = `if [ -n "${BASH_VERSION-}" ]; then LC_ALL=C IFS= read -r -d '' -N ` + strconv.Itoa(len(serveScript)+1) +
		` AGENTPTY_SERVE; eval "$AGENTPTY_SERVE"; unset AGENTPTY_SERVE; fi` + "\n" + serveScript + "\n"
	execScript = probeSh + endSh + execSh
)

// ServeInput is what a transport writes first to the shell it started to
// serve requests: ServeScript, after a line with which bash reads all of
// it in a few reads and evaluates it. bash reads a script from a pipe a
// byte at a time (so that a command that reads standard input finds what
// follows its line), which for the ~20 KB of ServeScript was a read(2) a
// byte and most of the shell's start; sh reads the script itself, as
// before.
func ServeInput() string { return serveInput }

// ExecScript is the shell for a transport that starts a shell for each
// request (kubepty's exec), run through ExecShell. Its arguments: the
// session's nonce (the command runs under env AGENTPTY_ID=NONCE, which
// marks it and all it starts), the leader's pid or "-", the request's
// number N, and one of "state VARS" (Vars), "arch", "sig NAME", and "end"
// with EndArgs. Every line begins with "N "; "N ." ends the answer, and
// "N leader PID" names the leader when the hint was not it.
func ExecScript() string { return execScript }

// ExecShell is the command line (sh -c ExecShell sh ExecScript ARGS...)
// that runs ExecScript in bash where there is one: dash reads files a
// byte at a time, which makes a walk through a busy /proc take seconds;
// bash reads /proc's files whole.
const ExecShell = `S=$1; shift; if command -v bash >/dev/null 2>&1; then exec bash -c "$S" remote "$@"; fi; exec /bin/sh -c "$S" remote "$@"`

// HupDelay is the local library's delay between SIGTERM and SIGHUP, and
// KillBound how long the kernel is given after SIGKILL (see endsched):
// a remote terminal's end keeps the local schedule.
const (
	HupDelay  = endsched.HupDelay
	KillBound = endsched.KillBound
)

// EndArgs are end.sh's endall arguments after the pid, in centiseconds:
// SIGHUP hup after SIGTERM (at most grace), SIGKILL at grace, then
// KillBound for the kernel. hup is HupDelay but in a test.
func EndArgs(hup, grace time.Duration) []string {
	cs := func(d time.Duration) string {
		return strconv.FormatInt(int64((d+9*time.Millisecond)/(10*time.Millisecond)), 10)
	}
	return []string{cs(min(hup, grace)), cs(grace), cs(KillBound)}
}

// EndCall is the request that ends the commands pids on ServeScript's
// shell, together (see EndArgs): sessions that end at once share
// endall's scans of the host's processes.
func EndCall(pids []int, hup, grace time.Duration) string {
	a := EndArgs(hup, grace)
	ids := make([]string, len(pids))
	for i, p := range pids {
		ids[i] = strconv.Itoa(p)
	}
	return "endall '" + strings.Join(ids, " ") + "' " + a[0] + " " + a[1] + " " + a[2]
}
