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

// perlFront is the probe channel's program where the host has perl and
// bash (__TOKEN__ replaced by the channel's token, see helper.token): it
// answers probe requests itself (remotestate.Perl) and hands
// every other line to a bash of its own, whose output goes straight to
// the channel. A probe then wakes one process on the host, not a shell
// and a stty (or a coprocess) in turn; answers come in any order, as
// they do from the shell.
const perlFront = remotestate.Perl + `
use Time::HiRes qw(time);
# A probe's line carries the channel's token (PT), so that no line of a
# longer request (a file's text) is taken for one.
my $rq = qr/^Q=(\d+); PT=__TOKEN__ FN=(\S*) NOSYS=\S* WS="([^"]*)" EP="([^"]*)" TS="([^"]*)" SEL="([^"]*)" POL="([^"]*)" (probe|watch) (\d+); echo "\$Q \."$/;
pipe(my $r, my $w) or die;
my $sh = fork;
die unless defined $sh;
if (!$sh) {
	close $w;
	open(STDIN, "<&", $r);
	$SIG{CHLD} = "DEFAULT";
	exec "bash", "--noprofile", "--norc";
	POSIX::_exit(127);
}
close $r;
select((select($w), $| = 1)[0]);
my ($buf, @watch, $rin) = ("");
vec($rin, fileno(STDIN), 1) = 1;
# A watch is answered once the group waits again (or after ` + watchBudget + ` s), looked
# at every ` + watchFirst + ` s at first, then half as often again each time, up to every
# ` + watchMost + ` s; nothing is looked at while none is pending.
sub tick {
	my ($q, $fn, $pid, $until, @lists) = @{$_[0]};
	prepare($q, @lists);
	observe($pid);
	unless (settled() || time > $until) {
		$_[0][9] = time + $_[0][10];
		$_[0][10] = $_[0][10] * 1.5 > ` + watchMost + ` ? ` + watchMost + ` : $_[0][10] * 1.5;
		return 0;
	}
	syswrite(STDOUT, finish($fn) . "$q .\n");
	return 1;
}
while (1) {
	my $rout = $rin;
	my $next;
	for (@watch) { $next = $_->[9] if !defined $next || $_->[9] < $next; }
	my $n = select($rout, undef, undef, defined $next ? ($next > time ? $next - time : 0) : undef);
	if ($n > 0) {
		my $got = sysread(STDIN, $buf, 65536, length $buf);
		last unless $got;
		while ((my $i = index($buf, "\n")) >= 0) {
			my $l = substr($buf, 0, $i + 1, "");
			if ($l !~ $rq) { print $w $l; next; }
			if ($8 eq "probe") { syswrite(STDOUT, answer($1, $2, $9, $3, $4, $5, $6, $7) . "$1 .\n"); next; }
			my $x = [$1, $2, $9, time + ` + watchBudget + `, $3, $4, $5, $6, $7, 0, ` + watchFirst + `];
			push @watch, $x unless tick($x);
		}
	}
	my $now = time;
	@watch = grep { $_->[9] > $now || !tick($_) } @watch;
}
print $w $buf;
close $w;
`

// A watch looks at the terminal's group watchFirst seconds after the
// last look, then half as long again each time up to watchMost, and
// answers after watchBudget whatever it sees.
const (
	watchFirst  = "0.00005"
	watchMost   = "0.002"
	watchBudget = "0.02"
)

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
