# end.sh: signals to a command's processes on a Linux host, in POSIX sh
# with the shell's builtins, kill and sleep; st comes from probe.sh. The
# script that embeds it defines one hook:
#   hook_carriers  set M to the pids that carry the session's mark in
#                  their environment (kubepty's nonce), or empty.
# Every line printed starts with "$Q ".
# Lists of pids are left unquoted: they split into words.
# shellcheck disable=SC2086

# sig PID SIG sends SIG to the foreground group of the terminal of PID,
# or to PID when the terminal has none. It prints "$Q sent leader" when
# PID's own group got it (PID then likely ends by it) and "$Q sent" when
# another group did.
sig() {
	st $1 || return 0
	set -- $1 $2 $R
	# $5: PID's group; $8: the terminal's foreground group.
	if [ "$8" -gt 0 ] && kill -s $2 -- -$8; then
		if [ "$5" = "$8" ]; then echo "$Q sent leader"; else echo "$Q sent"; fi
	elif kill -s $2 $1; then echo "$Q sent leader"; fi
}

# now sets U to the time since boot, in centiseconds.
now() { read -r u _ </proc/uptime; u=${u%.*}${u#*.}; U=${u#0}; }

# scan sets L to the live processes of the commands: those of a session
# or process group in $S (pids separated by spaces), those carrying its mark (hook_carriers), and every
# process below one of them (a subshell's child that called setsid while
# its parent lived), each remembered in K by pid and start time, so that
# a pid used again by another process is not taken for it.
scan() {
	L=''
	hook_carriers
	for x in /proc/[0-9]*; do
		p=${x#/proc/}
		st $p || continue
		set -- $R
		[ "$1" = Z ] && continue
		case "$K" in *" $p:${20} "*) L="$L $p"; continue;; esac
		case " $M " in *" $p "*) K="$K$p:${20} "; L="$L $p"; continue;; esac
		if [ -n "$S" ]; then
			case " $S " in *" $4 "* | *" $3 "*) K="$K$p:${20} "; L="$L $p"; continue;; esac
		fi
		case "$K" in *" $2:"*) K="$K$p:${20} "; L="$L $p";; esac
	done
}

# ign is true when every process of L ignores SIGTERM (an interactive
# bash at its prompt): SIGHUP then follows at once.
ign() {
	for p in $L; do
		m=''
		while read -r k v; do [ "$k" = SigIgn: ] && m=$v; done <"/proc/$p/status"
		m=${m#"${m%????}"}
		[ -n "$m" ] && [ $((0x$m & 16384)) -ne 0 ] || return 1
	done
}

# gone scans until nothing is left (true) or a scan begun at deadline $1
# or later still finds some (false): the time is read before the scan, so
# a scan that outlasts the deadline does not end the wait. With $2 it
# sends SIGKILL to what each scan finds (a child forked just before it).
gone() {
	Z=$1 Y=$2
	while :; do
		now; s=$U
		scan; [ -n "$L" ] || return 0
		[ -z "$Y" ] || kill -s KILL $L
		[ "$s" -lt "$Z" ] || return 1
		sleep 0.02 2>/dev/null || sleep 1
	done
}

# endall S H G B ends every process of the commands whose pids are S,
# separated by spaces (sessions that end together share its scans of
# /proc; empty: those hook_carriers finds and their descendants) on the schedule of the
# local library (remote.HupDelay): SIGTERM and SIGCONT; SIGHUP to what is
# left H centiseconds later (at once when all that is left ignores TERM);
# SIGKILL once G centiseconds have passed since the start, and again to
# what each later scan finds; then up to B centiseconds for the kernel.
# It prints "$Q gone", or "$Q left" and the survivors.
endall() {
	S=$1 H=$2 G=$3 B=$4 K=' '
	now; E=$((U + G))
	scan
	[ -n "$L" ] || { echo "$Q gone"; return 0; }
	kill -s TERM $L; kill -s CONT $L
	# SIGHUP comes H after SIGTERM, however long the scan before it took.
	if ! ign; then
		now; h=$((U + H)); [ $h -gt $E ] && h=$E
		gone $h && { echo "$Q gone"; return 0; }
	fi
	scan
	[ -z "$L" ] || { kill -s HUP $L; kill -s CONT $L; }
	gone $E && { echo "$Q gone"; return 0; }
	kill -s KILL $L
	now; gone $((U + B)) k && { echo "$Q gone"; return 0; }
	echo "$Q left$L"
}
