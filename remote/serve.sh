# serve.sh: a shell that answers numbered requests on its standard input,
# one a line: "Q=N; CALL; echo "$Q ."; prefork" (see sshpty), or
# "( { unwait; Q=N; CALL; echo "$Q ."; } & )" for one that runs in the
# background (an end): a grandchild, so that no zombie of it waits under
# this shell (see hook_fence). It has the functions of probe.sh and
# end.sh, and defines their hooks.
# Lists of pids are left unquoted: they split into words.
# shellcheck disable=SC2086
exec 2>/dev/null
trap '' PIPE
# Two shells of this one's wait for the process starts a probe after a
# run needs: one execs stty for the terminal it is sent (sttystart, while
# the probe's builtins run), the other writes a mark to it (fence). The
# probe then pays neither fork; prefork, after each answer, replaces what
# was used. The stty shell reads its line from a fifo this shell holds
# open (its name removed at once), the mark's shell from a pipe of its
# own; each closes what it inherits of the other's, so that when this
# shell ends, killed or not, their reads end, and so do they. Where bash
# is older than 5, or mktemp, mkfifo or /dev/fd fail, stty and the mark
# start as probe.sh's plain hooks start them; EF and MF count those
# (the tests read them).
#
# Where the host has perl, the modes are read without a process start at
# all, once perl has loaded (it says "+" then; until then, and if it
# ends, the stty shell serves): one perl (SP), started with the first
# prefork, reads the terminals' modes (tcgetattr, as stty does) for every
# probe, from a fifo of its own, answering "N icanon echo" (or "-icanon",
# "-echo"; nothing after "N " where it cannot) and a NUL for each "N
# DEVICE" line. stty's own process start is most of a probe's time after
# the command ran, and of a session's start, whose first probe always
# reads the modes. NOPERL=1 in the environment keeps to stty (the tests).
PW='' SA='' SB='' SP='' PR='' PT='' d=''
# shellcheck disable=SC3028 # a POSIX sh has none: the fallback
if [ "${BASH_VERSINFO:-0}" -ge 5 ] && d=$(mktemp -d) && mkfifo -m 600 "$d/a" "$d/b" && exec 6<>"$d/a" 5<>"$d/b"; then PW=1; fi
[ -z "$d" ] || rm -rf "$d"
# O_NONBLOCK and O_NOCTTY: the open neither waits for a carrier nor makes
# the terminal this shell's.
# shellcheck disable=SC2016,SC2034 # perl's variables, for perl; used in an eval
PLS='$|=1; print "+\0"; while (<STDIN>) { my ($q, $d) = split; my $w = "";
	if (defined $d && sysopen(my $f, $d, O_RDONLY|O_NOCTTY|O_NONBLOCK)) { my $t = POSIX::Termios->new;
		if (defined $t->getattr(fileno $f)) { my $l = $t->getlflag; $w = ($l & ICANON ? "" : "-") . "icanon " . ($l & ECHO ? "" : "-") . "echo"; }
		close $f; }
	print "$q $w\0"; }'
trap 'kill $SA $SB $SP' EXIT
prefork() {
	[ -n "$PW" ] || return 0
	o=$!
	if [ -z "$PT" ]; then
		PT=1 # perl starts once
		if [ -z "${NOPERL-}" ] && command -v perl >/dev/null && eval 'exec 9< <(exec </dev/fd/5; unwait; exec perl -MPOSIX -e "$PLS")'; then SP=$!
		else [ "$!" = "$o" ] || kill $!
		fi
	fi
	o=$!
	if [ -z "$SA" ]; then
		if eval 'exec 8< <(exec </dev/fd/6; unwait; read -r q d && printf "%s " "$q" && LC_ALL=C exec stty -a <"$d")'; then SA=$!
		else [ "$!" = "$o" ] || kill $!; nowait; return 0
		fi
	fi
	o=$!
	if [ -z "$SB" ]; then
		if eval 'exec 7> >(exec >/dev/null; unwait; read -r q d f && mark "$f" "$q" "$d")'; then SB=$!
		else [ "$!" = "$o" ] || kill $!; nowait
		fi
	fi
}
# nowait stops the waiting for good on this connection: a waiting shell
# was lost (killed on the host), or could not start. perl goes with them.
nowait() { kill $SA $SB $SP; SA='' SB='' SP='' PW=''; unwait; }
# unwait closes this shell's ends of the waiting shells' fifos and pipes:
# each waiting shell and what runs in the background calls it, so that
# none holds another's open.
unwait() { exec 5<&- 6<&- 7>&- 8<&- 9<&-; }
# noperl stops asking perl: it ended, or answered out of turn.
noperl() { kill $SP; SP='' PR=''; exec 9<&-; }
# perlready says whether perl has said it is ready, without waiting.
perlready() {
	[ -n "$SP" ] || return 1
	[ -z "$PR" ] || return 0
	# shellcheck disable=SC3045 # only bash 5 and later start perl
	read -t 0 <&9 || return 1
	x=''
	# shellcheck disable=SC3045 # bash's, as above
	IFS= read -r -d '' x <&9
	if [ "$x" = + ]; then PR=1; else noperl; return 1; fi
}
# hook_sttystart asks perl once it is ready, else the stty shell; SU says
# which, and SR counts the reads of the modes begun here (the tests read
# it).
hook_sttystart() {
	if perlready; then
		if kill -0 $SP; then echo "$Q $D" >&5; SU=9 SR=$((${SR:-0} + 1)); return 0; fi
		noperl
	fi
	[ -n "$SA" ] || return 1
	kill -0 $SA || { nowait; return 1; }
	echo "$Q $D" >&6; SA='' SU=8 SR=$((${SR:-0} + 1))
}
# hook_sttywait takes the answer, which the stty shell or perl begins with
# the probe's number: any other answer is not this probe's.
hook_sttywait() {
	w=''
	# shellcheck disable=SC3045 # only bash 5 and later prefork
	if [ "$SU" = 9 ]; then IFS= read -r -d '' w <&9; else IFS= read -r -d '' w <&8; exec 8<&-; fi
	case $w in
	"$Q "*) w=${w#"$Q "};;
	*) w=; if [ "$SU" = 9 ]; then noperl; else nowait; fi;;
	esac
}
hook_fence() {
	if [ -n "$SB" ] && kill -0 $SB && echo "$Q $D $FN" >&7; then exec 7>&-; SB=
	else
		[ -z "$PW" ] || nowait
		MF=$((${MF:-0} + 1))
		# In a subshell that ends at once: the mark's writer is then no
		# child of this shell, and no zombie waits here for a wait that
		# sh (dash) runs only for its next foreground job.
		( { unwait; mark "$FN" "$Q" "$D"; } & )
	fi
	say fence "$Q"
}
hook_runs() { runs "$1"; }
# No process carries a mark: the command's session names its processes.
# shellcheck disable=SC2034 # M is end.sh's
hook_carriers() { M=''; }
prefork
