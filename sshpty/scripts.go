package sshpty

// The shell code run on the host, in POSIX sh with only what every Linux
// host has (the shell's builtins, stty, sleep, dd, od). It reads what the
// local library reads from the kernel: /proc/PID/stat (state, process
// group, session, terminal, the terminal's foreground group),
// /proc/PID/syscall (the system call a sleeping process is blocked in,
// and its arguments), /proc/PID/fd (which descriptors are the terminal),
// /proc/PID/fdinfo (what an epoll descriptor watches), /proc/PID/mem (a
// select or poll timeout), and the terminal's modes through stty.

// helperFuncs are the functions of the probe shell, defined once when it
// starts. Each request is one line that sets Q to its number and calls
// one of them; every line they print starts with Q, and "Q ." ends the
// answer.
const helperFuncs = `
exec 2>/dev/null
trap '' PIPE
# Where bash and perl are, one perl process answers the echo flag and
# writes the probes' marks, without a process start per probe (stty's
# costs milliseconds); elsewhere stty and a subshell do it.
if [ -n "$BASH_VERSION" ] && [ -z "$NOPERL" ] && command -v perl >/dev/null 2>&1; then
	read -r -d '' TIP <<'PERL'
` + termiosPerl + `
PERL
	coproc TI { exec perl -e "$TIP"; }
fi
# echoflag prints the echo and line modes of the terminal $D.
echoflag() {
	if [ -n "$TI_PID" ] && echo "e $D" >&"${TI[1]}" && read -r x <&"${TI[0]}"; then echo "$Q stty $x"; return; fi
	echo "$Q stty" $(stty -a <"$D")
}
# fence writes the probe's mark to the terminal $D without ever blocking
# the probe shell (a stopped terminal would hold it).
fence() {
	if [ -n "$TI_PID" ]; then
		printf -v x '\033]6973;%s;f%s\007' "$FN" "$Q"
		if echo "f $D $x" >&"${TI[1]}" && read -r x <&"${TI[0]}"; then
			if [ "$x" = 1 ]; then echo "$Q fence $Q"; else echo "$Q nofence"; fi
			return
		fi
	fi
	{ printf '\033]6973;%s;f%s\007' "$FN" "$Q" >"$D"; } & echo "$Q fence $Q"
}
st() { l=; { read -r l </proc/$1/stat; } 2>/dev/null; [ -n "$l" ] || return 1; C=${l#*\(}; C=${C%\)*}; R=${l##*) }; }
# bash's ## is slow on a long line: the same cut from the last ")".
[ -z "$BASH_VERSION" ] || eval 'st() { l=; read -r l </proc/$1/stat || [ -n "$l" ] || return 1; sx=${l%)*}; C=${sx#*\(}; R=${l:${#sx}+2}; }'
look() {
	st $1 || return 1
	set -- $1 $R
	echo "$Q p $1 $2 $C"
	case $2 in R|D) DEC=1; return 0;; S) ;; *) return 0;; esac
	s=; { read -r s </proc/$1/syscall; } 2>/dev/null
	echo "$Q s $s"
	if [ -z "$s" ]; then W=1; return 0; fi
	f=; for x in /proc/$1/fd/*; do if [ "$x" -ef "$D" ] || [ "$x" -ef /dev/tty ]; then f="$f ${x##*/}"; fi; done
	echo "$Q f$f"
	p=$1; set -- $s
	[ $# -ge 7 ] || return 0
	case " $WS " in *" $1 "*) [ -n "$f" ] && DEC=1 W=1;; esac
	case " $EP " in *" $1 "*) while read -r k v r; do [ "$k" = tfd: ] && echo "$Q e $v $r"; done </proc/$p/fdinfo/$(($2));; esac
	for sp in $TS; do
		case $sp in "$1":*) eval "a=\${$((${sp#*:} + 2))}"; mem m $((a)) 16;; esac
	done
	# The descriptor set of a select (nfds, readfds) or a poll (fds, nfds).
	case " $SEL " in *" $1 "*) n=$(($2)); [ $n -le 1024 ] || n=1024; mem ms $(($3)) $(((n + 7) / 8));; esac
	case " $POL " in *" $1 "*) n=$(($3)); [ $n -le 1024 ] || n=1024; mem mp $(($2)) $((8 * n));; esac
	return 0
}
mem() {
	[ "$2" -ne 0 ] && [ "$3" -gt 0 ] && echo "$Q $1" $(dd if=/proc/$p/mem bs=1 skip=$2 count=$3 2>/dev/null | od -An -v -tx1)
}
tty() {
	st $1 || { echo "$Q gone"; return 1; }
	set -- $R; n=$5; T=$6
	M=$(( (n >> 8) & 4095 )); m=$(( (n & 255) | ((n >> 12) & 1048320) ))
	D=; if [ $M -ge 136 ] && [ $M -le 143 ]; then D=/dev/pts/$(( (M - 136) * 256 + m )); fi
	echo "$Q t $T $D"
	[ -n "$D" ]
}
probe() {
	W=
	look1 $1
	# A program that looks blocked on the terminal may have written output
	# that is still on its way: a mark written to the terminal now comes
	# after all of it, and the reader waits for it.
	if [ -n "$W" ]; then fence; fi
}
look1() {
	tty $1 || return
	echoflag
	if [ -n "$BASH_VERSION" ]; then read -t 0 <"$D" && echo "$Q unread"; fi
	[ "$T" -gt 0 ] || return
	DEC=
	look $T
	[ -z "$DEC" ] || return
	# The group's other members, found below its leader (children files)
	# rather than by reading all of /proc, which a shell does slowly.
	if [ -e /proc/$T/task/$T/children ]; then
		q=$T
		while [ -n "$q" ]; do
			x=${q%% *}; case $q in *" "*) q=${q#* };; *) q=;; esac
			for c in /proc/$x/task/*/children; do
				k=; { read -r k <"$c"; } 2>/dev/null
				for y in $k; do
					q="${q:+$q }$y"
					st $y || continue
					set -- $R
					[ "$3" = "$T" ] || continue
					look $y
					[ -z "$DEC" ] || return
				done
			done
		done
		return
	fi
	for x in /proc/[0-9]*/stat; do
		y=${x#/proc/}; y=${y%/stat}
		[ "$y" = "$T" ] && continue
		st $y || continue
		set -- $R
		[ "$3" = "$T" ] || continue
		look $y
		[ -z "$DEC" ] || return
	done
}
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
// termiosPerl answers, a line each: "e TTY" with the terminal's line and
// echo modes as stty words ("icanon -echo"), and "f TTY MARK" with 1 once
// MARK is written to the terminal, 0 when it cannot take it now (output
// stopped). A mark the terminal took in part is finished by a child, so
// the answer never waits.
const termiosPerl = `use POSIX;
$| = 1;
$SIG{CHLD} = "IGNORE";
my $t = POSIX::Termios->new;
while (my $l = <STDIN>) {
	chomp $l;
	my ($op, $d, $m) = split / /, $l, 3;
	my $f;
	if ($op eq "e") {
		my $a = "";
		if (sysopen($f, $d, O_RDONLY | O_NOCTTY | O_NONBLOCK) && defined $t->getattr(fileno $f)) {
			my $lf = $t->getlflag;
			$a = ($lf & ICANON ? "icanon" : "-icanon") . " " . ($lf & ECHO ? "echo" : "-echo");
		}
		print "$a\n";
	} elsif ($op eq "f") {
		my $n = 0;
		if (sysopen($f, $d, O_WRONLY | O_NOCTTY | O_NONBLOCK)) {
			$n = syswrite($f, $m) // 0;
			if ($n > 0 && $n < length $m && !fork) {
				sysopen($f, $d, O_WRONLY | O_NOCTTY);
				syswrite($f, substr($m, $n));
				POSIX::_exit(0);
			}
		}
		print $n > 0 ? "1\n" : "0\n";
	}
	close $f if $f;
}`

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
