# exec.sh: one request in a shell of its own (an exec into a container),
# with the functions of probe.sh and end.sh, whose hooks it defines. Its
# arguments: the session's nonce, the leader's pid if known (or "-"), the
# request's number, the action and the action's arguments. The command's
# processes are found by the nonce in /proc/PID/environ (the command runs
# under env AGENTPTY_ID=NONCE). Every line printed starts with "$Q ", and
# "$Q ." ends the answer, so that an answer cut short by a lost
# connection is known as such. Functions read their arguments before
# calling another (dash lets a callee's set -- reach its caller's).
# Lists of pids are left unquoted: they split into words.
# K and w are probe.sh's.
# shellcheck disable=SC2086,SC2034
N=$1 H=$2 Q=$3 A=$4 P1=$5 P2=$6 P3=$7
exec 2>/dev/null
# hook_carriers sets M to the processes that carry the session's nonce.
hook_carriers() {
	M=''
	# shellcheck disable=SC2013 # the paths hold no space
	for f in $(grep -l -a -F "AGENTPTY_ID=$N" /proc/[0-9]*/environ); do
		p=${f#/proc/}; M="$M ${p%/environ}"
	done
}
# Each request is a shell of its own, which keeps no stty answer for the
# next: no run times are read, and stty runs in the probe's foreground.
hook_runs() { K=''; }
hook_sttystart() { return 1; }
hook_sttywait() { w=''; }
# The mark's writer carries the session's nonce: on a terminal whose
# output is stopped it waits there, and endall ends it with the session.
hook_fence() {
	{ exec env "AGENTPTY_ID=$FN" printf "$MARKFMT" "$FN" "$Q" >"$D"; } >/dev/null 2>&1 &
	say fence "$Q"
}
# The leader: the hint while it is alive and carries the nonce, else the
# carrier that leads its own session.
S=''
if [ "$H" != - ] && st $H; then
	set -- $R
	[ "$1" != Z ] && grep -q -a -F "AGENTPTY_ID=$N" /proc/$H/environ && S=$H
fi
if [ -z "$S" ] && [ "$A" != arch ]; then
	hook_carriers
	for p in $M; do
		st $p || continue
		set -- $R
		if [ "$4" = "$p" ] && [ "$1" != Z ]; then S=$p; echo "$Q leader $p"; break; fi
	done
fi
case $A in
state) if [ -n "$S" ]; then FN=$N; eval "$P1"; probe $S; else echo "$Q gone"; fi;;
arch) echo "$Q arch $(uname -m)";;
sig) if [ -n "$S" ]; then sig $S $P1; else echo "$Q gone"; fi;;
end) endall "$S" "$P1" "$P2" "$P3";;
esac
echo "$Q ."
