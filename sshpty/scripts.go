package sshpty

import "github.com/agentpty/agentpty/internal/remotestate"

// The shell code run on the host, in POSIX sh with only what every Linux
// host has (the shell's builtins, stty, sleep, dd, od, kill): the probe
// of remotestate.Funcs, sig and killsess.

// helperFuncs are the functions of the probe shell, defined once when it
// starts. Each request is one line that sets Q to its number and calls
// one of them; every line they print starts with Q, and "Q ." ends the
// answer.
const helperFuncs = `
exec 2>/dev/null
trap '' PIPE
` + remotestate.Funcs + `
sig() {
	st $1 || return
	set -- $1 $2 $R
	if [ "$8" -gt 0 ] && kill -s $2 -- -$8; then echo "$Q sent"; elif kill -s $2 $1; then echo "$Q sent"; fi
}
`

// killsess ends every process of the session whose id is $1 (the
// command's pid): its session and process group, and every process found
// below one of them (a subshell's child that called setsid while its
// parent lived), each remembered by pid and start time. SIGTERM and
// SIGCONT; SIGHUP to what is left $2 centiseconds later (at once when all
// that is left ignores TERM); SIGKILL once $3 centiseconds have passed
// since the start; then up to $4 centiseconds for the kernel. It prints
// "gone", or "left" and the survivors.
// It runs in the background of the probe shell, so that probes go on.
const killFunc = `
killsess() {
S=$1 H=$2 G=$3 B=$4
now() { read -r u r </proc/uptime; u=${u%.*}${u#*.}; N=${u#0}; }
K=" "
scan() {
	L=
	for x in /proc/[0-9]*/stat; do
		l=; { read -r l <"$x"; } 2>/dev/null; [ -n "$l" ] || continue
		p=${x#/proc/}; p=${p%/stat}; r=${l##*) }
		set -- $r
		[ "$1" = Z ] && continue
		case "$K" in *" $p:${20} "*) L="$L $p"; continue;; esac
		if [ "$4" = "$S" ] || [ "$3" = "$S" ]; then K="$K$p:${20} "; L="$L $p"
		else case "$K" in *" $2:"*) K="$K$p:${20} "; L="$L $p";; esac
		fi
	done
}
ign() {
	for p in $L; do
		m=; while read -r k v; do [ "$k" = SigIgn: ] && m=$v; done </proc/$p/status
		m=${m#${m%????}}
		[ -n "$m" ] && [ $((0x$m & 16384)) -ne 0 ] || return 1
	done
}
T=0.02; sleep $T || T=1
gone() {
	while :; do
		scan; [ -n "$L" ] || return 0
		now; [ "$N" -lt "$1" ] || return 1
		sleep $T
	done
}
now; E=$((N + G))
scan
[ -n "$L" ] || { echo "$Q gone"; return; }
kill -s TERM $L; kill -s CONT $L
if ! ign; then h=$((N + H)); [ $h -gt $E ] && h=$E; gone $h && { echo "$Q gone"; return; }; fi
scan
[ -z "$L" ] || { kill -s HUP $L; kill -s CONT $L; }
gone $E && { echo "$Q gone"; return; }
kill -s KILL $L
now; gone $((N + B)) && { echo "$Q gone"; return; }
echo "$Q left$L"
}
`
