# probe.sh: the shell functions that collect a terminal's state on a
# Linux host, in POSIX sh with only what every Linux host has (the shell's
# builtins, stty, dd, od): "probe PID [1]", after the assignments of Vars
# (and FN, the nonce of the fence's mark, and Q, the request's number),
# prints the lines Parse reads, each after "$Q ". They read what the local
# library reads from the kernel: /proc/PID/stat (state, process group,
# session, terminal, the terminal's foreground group), /proc/PID/syscall
# (the system call a sleeping process is blocked in, and its arguments),
# /proc/PID/fd (which descriptors are the terminal), /proc/PID/fdinfo
# (what an epoll descriptor watches), /proc/PID/mem (a select or poll
# timeout and descriptor set), and the terminal's modes through stty.
#
# The echo flag costs a process start (stty), most of a probe's time: a
# shell that runs probes one after another (serve.sh) keeps each
# command's last flag and starts no stty while nothing that could have
# changed it ran (see echostart); so too the fence's mark (see probe).
#
# The script that embeds this one defines its hooks, each once:
#   hook_runs PID   set K as runs does, or empty: no answer is kept;
#   hook_sttystart  start "stty -a <$D" in the background, or fail;
#   hook_sttywait   set w to what that stty printed, or empty (echoflag
#                   then runs stty itself, and counts it in EF);
#   hook_fence      write a mark to $D that tells when the output before
#                   it has arrived (see mark), and say "fence $Q".
# Shell variables are left unquoted where a list of numbers is meant to
# split into words.
# shellcheck disable=SC2086
st() { l=; { read -r l </proc/$1/stat; } 2>/dev/null; [ -n "$l" ] || return 1; C=${l#*\(}; C=${C%\)*}; R=${l##*) }; }
# bash's ## is slow on a long line: the same cut from the last ")".
[ -z "$BASH_VERSION" ] || eval 'st() { l=; read -r l </proc/$1/stat || [ -n "$l" ] || return 1; sx=${l%)*}; C=${sx#*\(}; R=${l:${#sx}+2}; }'
# echostart begins reading the modes of $D that matter ("icanon
# -echo"); echoflag prints them as "$Q stty ...". Modes change only when
# a process runs: while the foreground group and the run time of every
# thread of the command $P and of every process below it (runs) are what
# they were before this shell last ran stty for $P, that stty's answer
# (EK$P, EW$P) stands. Otherwise hook_sttystart may start stty in the
# background, so that the probe's builtins run meanwhile, and hook_sttywait
# then sets w to what it printed; where it does not (this default),
# echoflag runs stty.
echostart() {
	# The run times the hint read serve while the foreground group is the
	# one it read them with.
	if [ -n "$KH" ] && [ "$T" = "$HT" ]; then K=$KH; else hook_runs $P; fi
	if [ "$EB" = bg ]; then
		[ "$D" != "$HD" ] || return 0
		hook_sttywait; EB= # begun for a terminal the command no longer has
	fi
	if [ -n "$K" ] && eval "[ \"\$K\" = \"\${EK$P-}\" ]"; then EB=kept
	elif hook_sttystart; then EB='bg'
	fi
}
echoflag() {
	w=
	case $EB in
	kept) eval "say stty \$EW$P"; return;;
	bg) hook_sttywait;;
	esac
	# Here when none ran in the background, or it did not answer (its
	# shell was killed), which EF counts; or when the modes must be read
	# again (again, see probe).
	[ -n "$w" ] || { [ "$EB" = again ] || EF=$((${EF:-0} + 1)); w=$(LC_ALL=C exec stty -a <"$D"); }
	case " $w " in *[[:space:]]icanon[[:space:]]*) ic=icanon;; *) ic=-icanon;; esac
	case " $w " in *[[:space:]]echo[[:space:]]*) ec='echo';; *) ec=-echo;; esac
	say stty "$ic" "$ec"
}
# runs sets K to the foreground group $T and the run time (schedstat) of
# every thread of process $1 and of every process below it; empty where
# the kernel keeps either out of /proc.
runs() {
	K=$T q=$1
	[ -e /proc/$1/task/$1/children ] || { K=; return; }
	while [ -n "$q" ]; do
		x=${q%% *}; case $q in *" "*) q=${q#* };; *) q=;; esac
		for d in "/proc/$x/task"/*; do
			r=; { read -r r k <$d/schedstat; } 2>/dev/null
			[ -n "$r" ] || { K=; return; }
			K="$K $x:$r"
			c=; { read -r c <$d/children; } 2>/dev/null
			[ -z "$c" ] || q="${q:+$q }$c"
		done
	done
}
# mark writes the mark of nonce $1 and number $2 to terminal $3, in the
# format MARKFMT (FencePrefix's, then the number and BEL).
MARKFMT='\033]6973;%s;f%s\007'
# shellcheck disable=SC2059 # the format is MARKFMT, the values its arguments
mark() { printf "$MARKFMT" "$1" "$2" >"$3"; }
# say adds a line to the answer, after "$Q "; probe prints the answer in
# one write once it has all of it (a write a line wakes the transport,
# sshd, once a line), and what it holds before a line would take it near
# the size a pipe writes whole (PIPE_BUF, 4096 bytes on Linux; ${#...}
# counts characters, and a process name may hold a few of UTF-8's): lines
# that a request in the background prints never fall inside one of these.
say() {
	sl="$Q $*
"
	[ $((${#ANS} + ${#sl})) -le 3584 ] || { printf '%s' "$ANS"; ANS=''; }
	ANS="$ANS$sl"
}
# look prints the lines of process $1: its state, and, when it sleeps, its
# main thread's system call (see call); with more threads than one, each
# other thread's state ("T TID STATE") and, when it sleeps, its call: a Go
# program or fzf reads the terminal on a thread of its own.
look() {
	st $1 || return 1
	set -- $1 $R
	say p "$1" "$2" "$C"
	case $2 in R|D) DEC=1; return 0;; S) ;; *) return 0;; esac
	p=$1 nt=${19:-1} f=-
	call /proc/$1
	[ "$nt" -gt 1 ] 2>/dev/null || return 0
	for d in "/proc/$p/task"/*; do
		[ "${d##*/}" != "$p" ] || continue
		st "$p/task/${d##*/}" || continue
		set -- $R
		say T "${d##*/}" "$1"
		case $1 in R|D) DEC=1; return 0;; S) call "$d";; esac
	done
	return 0
}
# call prints the system call the thread whose /proc directory is $1 (of
# process $p) sleeps in, and what it needs to tell whether that waits on
# the terminal: the terminal's descriptors (once a process, "f"), what an
# epoll watches, the memory a timeout or a descriptor set is in.
call() {
	s=; { read -r s <$1/syscall; } 2>/dev/null
	say s "$s"
	if [ -z "$s" ]; then W=1; return 0; fi
	if [ "$f" = - ]; then
		f=
		# shellcheck disable=SC3013 # -ef: dash, bash and busybox sh all have it
		for x in "/proc/$p/fd"/*; do if [ "$x" -ef "$D" ] || [ "$x" -ef /dev/tty ]; then f="$f ${x##*/}"; fi; done
		say "f$f"
	fi
	# Without the terminal among its descriptors it cannot wait on it: its
	# memory is not read.
	[ -n "$f" ] || return 0
	set -- $s
	[ $# -ge 7 ] || return 0
	case " $WS " in *" $1 "*) DEC=1 W=1;; esac
	case " $EP " in *" $1 "*) while read -r k v r; do [ "$k" = tfd: ] && say e "$v" "$r"; done </proc/$p/fdinfo/$(($2));; esac
	a=0
	for sp in $TS; do
		case $sp in "$1":*) eval "a=\${$((${sp#*:} + 2))}"; mem m $((a)) 16;; esac
	done
	# The descriptor set of a select (nfds, readfds) or a poll (fds, nfds).
	case " $SEL " in *" $1 "*) n=$(($2)); [ $n -le 1024 ] || n=1024; mem ms $(($3)) $(((n + 7) / 8));; esac
	case " $POL " in *" $1 "*) n=$(($3)); [ $n -le 1024 ] || n=1024; mem mp $(($2)) $((8 * n));; esac
	return 0
}
mem() {
	# shellcheck disable=SC2046 # od's words are the line's words
	[ "$2" -ne 0 ] && [ "$3" -gt 0 ] && say "$1" $(dd if=/proc/$p/mem bs=1 skip=$2 count=$3 2>/dev/null | od -An -v -tx1)
}
tty() {
	st $1 || { say gone; unset EK$1 EW$1 FK$1 FQ$1 DV$1 TV$1; return 1; }
	tp=$1; set -- $R; n=$5; T=$6
	M=$(( (n >> 8) & 4095 )); m=$(( (n & 255) | ((n >> 12) & 1048320) ))
	D=; if [ $M -ge 136 ] && [ $M -le 143 ]; then D=/dev/pts/$(( (M - 136) * 256 + m )); fi
	# A container's /dev may lack it: the command's own descriptor then,
	# when that is a terminal (a mark must never go into a file or pipe).
	[ -z "$D" ] || [ -c "$D" ] || { D=; [ -c /proc/$tp/fd/0 ] && D=/proc/$tp/fd/0; }
	say t "$T" "$D"
	[ -n "$D" ] && eval "DV$tp=\$D TV$tp=\$T"
}
# "probe PID 1" says that the command has likely run since the last
# probe (output or input came): stty then starts as soon as the run times
# are read (KH), for the terminal and the foreground group the last probe
# found (echostart starts it again if the terminal changed).
probe() { ANS=''; collect "$@"; printf '%s' "$ANS"; }
collect() {
	W='' P=$1 K='' EB='' NM='' KH=''
	if [ "$2" = 1 ] && eval "D=\${DV$1-} T=\${TV$1-}" && [ -n "$D" ] && [ -n "$T" ]; then
		hook_runs $P; KH=$K HT=$T HD=$D
		if hook_sttystart; then EB='bg'; fi
	fi
	look1 $1 || { [ "$EB" != bg ] || hook_sttywait; return 0; }
	# A program can run and block between the run times' read and look
	# (woken by input, it read a line, turned echo off and reads again):
	# seen waiting, its run times are read again, and where they changed,
	# the modes read or kept before are read anew and a new mark written.
	# The new read goes to hook_sttystart where it can begin one (perl can
	# at once; the stty shell was used up by the first), else echoflag
	# runs stty. A start's first probe meets this often: the command's
	# first line can come before the exec of the program that reads.
	if [ -n "$W" ] && [ -n "$K" ]; then
		KB=$K; hook_runs $P
		if [ "$K" != "$KB" ]; then
			KH=
			[ "$EB" != bg ] || hook_sttywait # begun before the run: stale
			case $EB in bg|kept) if hook_sttystart; then EB='bg'; else EB=again; fi;; esac
		fi
	fi
	# A program that looks blocked on the terminal may have written output
	# that is still on its way: a mark written to the terminal now comes
	# after all of it, and the reader waits for it. While nothing of the
	# command ran since the last mark (K, see echostart), nothing was
	# written after it: that mark serves, and no mark is written.
	if [ -n "$W" ]; then
		if [ -n "$K" ] && eval "[ \"\$K\" = \"\${FK$P-}\" ]"; then eval "say fence \$FQ$P"
		else hook_fence; NM=1
		fi
	fi
	echoflag
	# Kept under the run times read before either began (KH for modes the
	# hint started), so that a later run of the command changes them.
	# (Modes read before the run times could be older than they say.)
	[ -n "$K" ] || return 0
	[ "$EB" = kept ] || [ -z "$w" ] || eval "EK$P=\${KH:-\$K} EW$P=\"\$ic \$ec\""
	[ -z "$NM" ] || eval "FK$P=\$K FQ$P=\$Q"
}
# look1 finds the terminal, begins reading its modes, and looks at the
# foreground group; false when the command is gone or has no terminal.
look1() {
	tty $1 || return 1
	echostart
	# shellcheck disable=SC3045 # bash only
	if [ -n "$BASH_VERSION" ]; then read -t 0 <"$D" && say unread; fi
	[ "$T" -gt 0 ] || return 0
	DEC=
	look $T
	[ -z "$DEC" ] || return 0
	# The group's other members, found below its leader (children files)
	# rather than by reading all of /proc, which a shell does slowly.
	if [ -e /proc/$T/task/$T/children ]; then
		q=$T
		while [ -n "$q" ]; do
			x=${q%% *}; case $q in *" "*) q=${q#* };; *) q=;; esac
			for c in "/proc/$x/task"/*/children; do
				k=; { read -r k <"$c"; } 2>/dev/null
				for y in $k; do
					q="${q:+$q }$y"
					member $y
					[ -z "$DEC" ] || return 0
				done
			done
		done
		return 0
	fi
	for x in /proc/[0-9]*/stat; do
		y=${x#/proc/}; y=${y%/stat}
		[ "$y" = "$T" ] && continue
		member $y
		[ -z "$DEC" ] || return 0
	done
}
# member looks at process $1 if it is of the foreground group $T.
member() {
	st $1 || return
	set -- $1 $R
	[ "$4" = "$T" ] && look $1
}
