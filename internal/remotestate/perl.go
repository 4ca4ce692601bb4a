package remotestate

// Perl is the collector of Funcs in perl, for a host that has perl: the
// same reads and the same lines (TestPerlMatchesShell holds the two to
// the same answers), without a shell's slowness at reading /proc and with
// the terminal's modes without a process start (stty costs milliseconds).
// It defines answer(Q, FN, PID, WS, EP, TS, SEL, POL), which returns the
// probe's lines, each after "Q " (the lists are those of Vars, their
// items apart by spaces), and writes the fence's mark where the program
// waits; and its steps: prepare(Q, lists), observe(PID), settled() (a
// program of the group waits on the terminal, none runs and nothing typed
// is unread) and finish(FN). A program that uses it adds its own loop. Its mark never blocks:
// 0 written (output stopped) answers "nofence", and a mark taken in part
// is finished by a child.
const Perl = `use strict; use POSIX;
$SIG{CHLD} = "IGNORE";
my $t = POSIX::Termios->new;
my ($Q, @o, %tab, $D, $T, $W, $dec, $run, $unread);
sub rd { open(my $h, "<", $_[0]) or return undef; local $/; my $s = <$h>; close $h; return $s; }
sub num { my $v = shift; return $v =~ /^0x/ ? hex($v) : $v + 0; }
sub st {
	my $s = rd("/proc/$_[0]/stat"); return () unless defined $s && $s ne "";
	my ($i, $j) = (rindex($s, ")"), index($s, "("));
	return () if $i < 0 || $j < 0;
	return (substr($s, $j + 1, $i - $j - 1), split(" ", substr($s, $i + 2)));
}
sub modes {
	my $f;
	return "" unless sysopen($f, $_[0], O_RDONLY | O_NOCTTY | O_NONBLOCK) && defined $t->getattr(fileno $f);
	my $lf = $t->getlflag;
	return ($lf & ICANON ? "icanon" : "-icanon") . " " . ($lf & ECHO ? "echo" : "-echo");
}
sub mark {
	my ($d, $m) = @_;
	my ($f, $n) = (undef, 0);
	if (sysopen($f, $d, O_WRONLY | O_NOCTTY | O_NONBLOCK)) {
		$n = syswrite($f, $m) // 0;
		if ($n > 0 && $n < length $m && !fork) {
			sysopen($f, $d, O_WRONLY | O_NOCTTY);
			syswrite($f, substr($m, $n));
			POSIX::_exit(0);
		}
	}
	return $n > 0 ? 1 : 0;
}
sub mem {
	my ($kind, $pid, $at, $n) = @_;
	return unless $at != 0 && $n > 0;
	my ($f, $b) = (undef, "");
	if (open($f, "<:raw", "/proc/$pid/mem")) { sysseek($f, $at, 0) and sysread($f, $b, $n); close $f; }
	push @o, join(" ", $kind, unpack("(H2)*", $b));
}
sub look {
	my $pid = shift;
	my ($c, @f) = st($pid) or return 0;
	push @o, "p $pid $f[0] $c";
	if ($f[0] eq "R" || $f[0] eq "D") { $dec = 1; $run = 1; return 1; }
	return 1 unless $f[0] eq "S";
	my $s = rd("/proc/$pid/syscall") // ""; chomp $s;
	push @o, "s $s";
	if ($s eq "") { $W = 1; return 1; }
	my @tty = grep { defined } (stat($D))[0, 1];
	my @dev = grep { defined } (stat("/dev/tty"))[0, 1];
	my @fds;
	opendir(my $dh, "/proc/$pid/fd");
	for my $fd (sort grep { /^\d+$/ } ($dh ? readdir($dh) : ())) {
		my @st = (stat("/proc/$pid/fd/$fd"))[0, 1];
		next unless defined $st[0];
		push @fds, $fd if (@tty && $st[0] == $tty[0] && $st[1] == $tty[1]) || (@dev && $st[0] == $dev[0] && $st[1] == $dev[1]);
	}
	push @o, "f" . join("", map { " $_" } @fds);
	my @a = split(" ", $s);
	return 1 if @a < 7;
	my $nr = $a[0];
	if ($tab{WS}{$nr} && @fds) { $dec = 1; $W = 1; }
	if ($tab{EP}{$nr}) {
		for (split /\n/, rd("/proc/$pid/fdinfo/" . num($a[1])) // "") { push @o, "e $1 $2" if /^tfd:\s+(\S+)\s+(.*?)\s*$/; }
	}
	for my $sp (keys %{$tab{TS}}) { mem("m", $pid, num($a[$tab{TS}{$sp} + 1]), 16) if $sp eq $nr; }
	if ($tab{SEL}{$nr}) { my $n = num($a[1]); $n = 1024 if $n > 1024; mem("ms", $pid, num($a[2]), int(($n + 7) / 8)); }
	if ($tab{POL}{$nr}) { my $n = num($a[2]); $n = 1024 if $n > 1024; mem("mp", $pid, num($a[1]), 8 * $n); }
	return 1;
}
sub members {
	if (-e "/proc/$T/task/$T/children") {
		my @q = ($T);
		while (@q) {
			my $x = shift @q;
			for my $c (glob("/proc/$x/task/*/children")) {
				for my $y (split " ", rd($c) // "") {
					push @q, $y;
					my (undef, @f) = st($y) or next;
					next unless $f[2] eq $T;
					look($y);
					return if $dec;
				}
			}
		}
		return;
	}
	for my $x (glob("/proc/[0-9]*/stat")) {
		my ($y) = $x =~ m{^/proc/(\d+)/};
		next if $y eq $T;
		my (undef, @f) = st($y) or next;
		next unless $f[2] eq $T;
		look($y);
		return if $dec;
	}
}
sub observe {
	my ($pid) = @_;
	($W, $dec, $run, $unread, $D, $T) = (0, 0, 0, 0, "", 0);
	my ($c, @f) = st($pid);
	unless (defined $c) { push @o, "gone"; return; }
	my $n = $f[4]; $T = $f[5];
	my ($M, $m) = (($n >> 8) & 4095, ($n & 255) | (($n >> 12) & 1048320));
	$D = "/dev/pts/" . (($M - 136) * 256 + $m) if $M >= 136 && $M <= 143;
	$D = "/proc/$pid/fd/0" if $D ne "" && !-c $D;
	push @o, "t $T $D";
	return if $D eq "";
	push @o, "stty " . modes($D);
	my $f;
	if (sysopen($f, $D, O_RDONLY | O_NOCTTY | O_NONBLOCK)) {
		my $r = ""; vec($r, fileno($f), 1) = 1;
		if (select($r, undef, undef, 0) > 0) { $unread = 1; push @o, "unread"; }
		close $f;
	}
	return unless $T > 0;
	look($T);
	members() unless $dec;
}
sub prepare {
	my ($q, @lists) = @_;
	$Q = $q; @o = (); %tab = ();
	my @names = qw(WS EP TS SEL POL);
	for my $i (0 .. 4) {
		for my $v (split " ", $lists[$i] // "") {
			if ($names[$i] eq "TS") { my ($k, $a) = split /:/, $v; $tab{TS}{$k} = $a; } else { $tab{$names[$i]}{$v} = 1; }
		}
	}
}
sub finish {
	my ($fn) = @_;
	if ($W) { push @o, mark($D, sprintf("\e]6973;%s;f%s\a", $fn, $Q)) ? "fence $Q" : "nofence"; }
	return join("", map { "$Q $_\n" } @o);
}
sub settled { return $W && !$run && !$unread; }
sub answer {
	my ($q, $fn, $pid, @lists) = @_;
	prepare($q, @lists);
	observe($pid);
	return finish($fn);
}
`
