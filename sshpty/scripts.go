package sshpty

import "github.com/agentpty/agentpty/remote"

// The shell code run on the host, in POSIX sh with only what every Linux
// host has (the shell's builtins, stty, sleep, dd, od, kill): the probe
// of remote.Funcs, sig and killsess.

// helperFuncs are the functions of the probe shell, defined once when it
// starts. Each request is one line that sets Q to its number and calls
// one of them; every line they print starts with Q, and "Q ." ends the
// answer.
const helperFuncs = `
exec 2>/dev/null
trap '' PIPE
` + remote.Funcs + `
# Two shells of this one's wait for the process starts a probe after a
# run needs: one execs stty for the terminal it is sent (sttystart, while
# the probe's builtins run), the other writes a mark to it (fence). The
# probe then pays neither fork; prefork, after each answer, replaces what
# was used. The stty shell reads its line from a fifo this shell holds
# open (its name removed at once), the mark's shell from a pipe of its
# own; each closes what it inherits of the other's, so that when this
# shell ends, killed or not, their reads end, and so do they. Where bash
# is older than 5, or mktemp, mkfifo or /dev/fd fail, stty and the mark
# start as remotestate's functions start them; EF and MF count those
# (the tests read them).
PW= SA= SB= d=
if [ "${BASH_VERSINFO:-0}" -ge 5 ] && d=$(mktemp -d) && mkfifo -m 600 "$d/a" && exec 6<>"$d/a"; then PW=1; fi
[ -z "$d" ] || rm -rf "$d"
trap 'kill $SA $SB' EXIT
prefork() {
	[ -n "$PW" ] || return 0
	o=$!
	if [ -z "$SA" ]; then
		if eval 'exec 8< <(exec </dev/fd/6 6<&- 7>&-; read -r q d && printf "%s " "$q" && LC_ALL=C exec stty -a <"$d")'; then SA=$!
		else [ "$!" = "$o" ] || kill $!; nowait; return 0
		fi
	fi
	o=$!
	if [ -z "$SB" ]; then
		if eval 'exec 7> >(exec >/dev/null 6<&- 8<&-; read -r q d f && mark "$f" "$q" "$d")'; then SB=$!
		else [ "$!" = "$o" ] || kill $!; nowait
		fi
	fi
}
# nowait stops the waiting for good on this connection: a waiting shell
# was lost (killed on the host), or could not start.
nowait() { kill $SA $SB; SA= SB= PW=; exec 6<&- 7>&- 8<&-; }
sttystart() {
	[ -n "$SA" ] || return 1
	kill -0 $SA || { nowait; return 1; }
	echo "$Q $D" >&6; SA=
}
# sttywait takes stty's answer, which the waiting shell begins with the
# probe's number: any other answer is not this probe's.
sttywait() {
	w=; IFS= read -r -d '' w <&8; exec 8<&-
	case $w in "$Q "*) w=${w#"$Q "};; *) w=; nowait;; esac
}
fence() {
	if [ -n "$SB" ] && kill -0 $SB && echo "$Q $D $FN" >&7; then exec 7>&-; SB=
	else
		[ -z "$PW" ] || nowait
		MF=$((${MF:-0} + 1))
		{ exec 6<&- 7>&- 8<&-; mark "$FN" "$Q" "$D"; } &
	fi
	echo "$Q fence $Q"
}
prefork
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
// since the start, and again to what each later scan finds; then up to $4
// centiseconds for the kernel. It prints "gone", or "left" and the
// survivors.
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
# gone scans until nothing is left (true) or a scan begun at deadline $1
# or later still finds some (false): the time is read before the scan, so
# a scan that outlasts the deadline does not end the wait. With $2 it
# sends SIGKILL to what each scan finds (a child forked just before it).
gone() {
	Z=$1 Y=$2
	while :; do
		now; s=$N
		scan; [ -n "$L" ] || return 0
		[ -z "$Y" ] || kill -s KILL $L
		[ "$s" -lt "$Z" ] || return 1
		sleep $T
	done
}
now; E=$((N + G))
scan
[ -n "$L" ] || { echo "$Q gone"; return; }
kill -s TERM $L; kill -s CONT $L
# SIGHUP comes $H after SIGTERM, however long the scan before it took.
if ! ign; then now; h=$((N + H)); [ $h -gt $E ] && h=$E; gone $h && { echo "$Q gone"; return; }; fi
scan
[ -z "$L" ] || { kill -s HUP $L; kill -s CONT $L; }
gone $E && { echo "$Q gone"; return; }
kill -s KILL $L
now; gone $((N + B)) k && { echo "$Q gone"; return; }
echo "$Q left$L"
}
`
