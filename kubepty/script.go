package kubepty

import "github.com/agentpty/agentpty/remote"

// probeShell runs probeScript in bash where there is one: dash reads
// files a byte at a time, which makes a walk through a busy /proc take
// seconds; bash reads /proc's files whole.
const probeShell = `S=$1; shift; if command -v bash >/dev/null 2>&1; then exec bash -c "$S" kubepty "$@"; fi; exec /bin/sh -c "$S" kubepty "$@"`

// probeScript is the POSIX sh the probes run in the container, with only
// what any image with a shell has (sh's builtins, grep, stty, uname,
// sleep, kill; dd and od for a select or poll's descriptors). Its
// arguments: the session's nonce, the leader's pid if known (or "-"), the
// action and the action's arguments (for state: remote.Vars and the
// probe's number). The state is remotestate's probe, as
// sshpty reads it on an SSH host (see remote.Funcs); the command's
// processes are found by the nonce in /proc/PID/environ. Functions read
// their arguments before calling another (dash lets a callee's set --
// reach its caller's). Every answer ends with a line ".", so that an
// answer cut short by a lost connection is known as such.
const probeScript = remote.Funcs + `
N=$1 H=$2 A=$3 P1=$4 P2=$5
exec 2>/dev/null
carriers() { M=; for f in $(grep -l -a -F "AGENTPTY_ID=$N" /proc/[0-9]*/environ); do p=${f#/proc/}; M="$M ${p%/environ}"; done; }
S=
if [ "$H" != - ] && st $H; then set -- $R; [ "$1" != Z ] && grep -q -a -F "AGENTPTY_ID=$N" /proc/$H/environ && S=$H; fi
if [ -z "$S" ]; then
	carriers
	for p in $M; do st $p || continue; set -- $R; if [ "$4" = "$p" ] && [ "$1" != Z ]; then S=$p; echo "leader $p"; break; fi; done
fi
# state is remotestate's probe of the command's terminal, its lines
# after "$Q ", the probe's number (P2); a program that looks blocked gets
# the fence's mark of that number written to its terminal, which the
# session's reader takes out of the output.
state() {
	Q=${P2:-0} FN=$N
	[ -n "$S" ] || { echo "$Q gone"; return; }
	eval "$P1"
	probe $S
}
# The mark's writer carries the session's nonce: on a terminal whose
# output is stopped it waits there, and End ends it with the session.
fence() { { exec env "AGENTPTY_ID=$FN" printf "$MARKFMT" "$FN" "$Q" >"$D"; } >/dev/null 2>&1 & echo "$Q fence $Q"; }
# Each probe is a shell of its own, which keeps no stty answer for the next.
runs() { K=; }
sig() {
	[ -n "$S" ] && st $S || { echo gone; return; }
	set -- $R
	# "sent leader" when the command itself got it: in the foreground group, or alone.
	if [ "$6" -gt 0 ] && kill -s $SIG -- -$6; then if [ "$3" = "$6" ]; then echo sent leader; else echo sent; fi
	elif kill -s $SIG $S; then echo sent leader; fi
}
now() { read -r u r </proc/uptime; u=${u%.*}${u#*.}; U=${u#0}; }
scan() {
	L=; carriers
	for d in /proc/[0-9]*; do
		p=${d#/proc/}; st $p || continue; set -- $R
		[ "$1" = Z ] && continue
		case " $M $K " in
		*" $p "*) L="$L $p";;
		*" $2 "*) K="$K $p"; L="$L $p";;
		*) if [ -n "$S" ] && [ "$4" = "$S" ]; then K="$K $p"; L="$L $p"; fi;;
		esac
	done
}
# until_gone scans until nothing is left (true) or a scan begun at
# deadline $1 or later still finds some (false): the time is read before
# the scan, so a scan that outlasts the deadline does not end the wait.
# With $2 it sends SIGKILL to what each scan finds (a child forked just
# before it).
until_gone() {
	Z=$1 Y=$2
	while :; do
		now; s=$U
		scan; [ -n "$L" ] || return 0
		[ -z "$Y" ] || kill -s KILL $L
		[ "$s" -lt "$Z" ] || return 1
		sleep 0.02 || sleep 1
	done
}
end() {
	now; G=$1 E=$((U + $2)); K=
	scan; [ -n "$L" ] || { echo gone; return; }
	kill -s TERM $L; kill -s CONT $L
	# SIGHUP comes $G after SIGTERM, however long the scan before it took.
	now; h=$((U + G)); [ $h -gt $E ] && h=$E
	until_gone $h && { echo gone; return; }
	kill -s HUP $L; kill -s CONT $L
	until_gone $E && { echo gone; return; }
	kill -s KILL $L
	now; until_gone $((U + 100)) k && { echo gone; return; }
	echo "left$L"
}
case $A in
state) state;;
arch) echo "arch $(uname -m)";;
sig) SIG=$P1; sig;;
end) end "$P1" "$P2";;
esac
echo .
`
