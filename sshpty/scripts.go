package sshpty

import "github.com/agentpty/agentpty/internal/remotestate"

// The shell code run on the host, in POSIX sh with only what every Linux
// host has (the shell's builtins, stty, sleep, dd, od, kill): the probe
// of remotestate.Funcs, sig and killsess.

// helperFuncs are the functions of the probe shell, defined once when it
// starts. Each request is one line that sets Q to its number and calls
// one of them; every line they print starts with Q, and "Q ." ends the
// answer.
const helperFuncs = remotestate.Funcs + `
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
# With perl: the echo flag and the marks through it (see remotestate.Funcs).
if [ -n "$TI_PID" ]; then
	echoflag() {
		if echo "e $D" >&"${TI[1]}" && read -r x <&"${TI[0]}"; then echo "$Q stty $x"; else echo "$Q stty" $(stty -a <"$D"); fi
	}
	fence() {
		printf -v x '\033]6973;%s;f%s\007' "$FN" "$Q"
		if echo "f $D $x" >&"${TI[1]}" && read -r x <&"${TI[0]}"; then
			if [ "$x" = 1 ]; then echo "$Q fence $Q"; else echo "$Q nofence"; fi
		else
			{ printf '\033]6973;%s;f%s\007' "$FN" "$Q" >"$D"; } & echo "$Q fence $Q"
		fi
	}
fi
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
