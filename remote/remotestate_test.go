package remote

import "testing"

// Answers as the probe prints them (after the request's number), and what
// they mean, on x86_64.
func TestParse(t *testing.T) {
	const (
		head    = "t 100 /dev/pts/2\nstty icanon echo\n"
		readTTY = "p 100 S cat\ns 0 0x0 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n"
		pollSet = "mp 00 00 00 00 01 00 00 00\n" // fd 0, POLLIN
		// Captured from real programs on x86_64 (Funcs under bash).
		pyThread = "t 9934 /dev/pts/1\np 9934 S python3\ns 202 0x7f90b0000b70 0x189 0x0 0x0 0x0 0xffffffff 0x7ffcc46e4010 0x7f90b6ea0f16\nf 0 1 2\n" +
			"T 9939 S\ns 0 0x0 0x7f90b0000bc0 0x2000 0x1 0x0 0x0 0x7f90b6b5a630 0x7f90b6f132ec\nfence 1\nstty icanon echo\n"
		shellSleep = "t 10736 /dev/pts/1\np 10736 S bash\ns 61 0xffffffff 0x7ffe36f58ba0 0x0 0x0 0x1 0x8 0x7ffe36f58b78 0x7fe7dd9d9bd3\nf 0 1 2\n" +
			"p 10737 S sleep\ns 230 0x0 0x0 0x7ffe890466f0 0x7ffe89046730 0x0 0x0 0x7ffe890466d8 0x7fa40d709503\nf 0 1 2\nstty icanon echo\n"
		tmuxClient = "t 10864 /dev/pts/3\np 10864 S tmux: client\ns 7 0x55e7e7a340f0 0x2 0xffffffff 0x7f728da4e1c0 0x8 0x1 0x7ffe6dae1218 0x7f728d841230\nf 0 1 2\n" +
			"mp 03 00 00 00 01 00 00 00 06 00 00 00 01 00 00 00\nfence 1\nstty -icanon -echo\n"
	)
	cases := []struct {
		name    string
		out     string
		waiting bool
		fgName  string
		echoOff bool
		fence   int
		unread  bool
		guessed bool
	}{
		{"reading its terminal", head + readTTY + "fence 7\n", true, "cat", false, 7, false, false},
		{"running", head + "p 100 R cat\n", false, "cat", false, 0, false, false},
		{"reading another file", head + "p 100 S cat\ns 0 0x5 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n", false, "cat", false, 0, false, false},
		{"hidden call, echo off", "t 100 /dev/pts/2\nstty icanon -echo\np 100 S read\ns\n", true, "read", true, 0, false, false},
		{"hidden call, echo on", head + "p 100 S read\ns\n", false, "read", false, 0, false, false},
		{"poll without a timeout", head + "p 100 S vim\ns 7 0x7ffd 0x1 0xffffffff 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n" + pollSet, true, "vim", false, 0, false, false},
		{"poll pausing 50 ms", head + "p 100 S vim\ns 7 0x7ffd 0x1 0x32 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n" + pollSet, false, "vim", false, 0, false, false},
		{"typed input unread", head + "unread\n" + readTTY, true, "cat", false, 0, true, false},
		{"a leader waiting for its child that reads", head + "p 100 S bash\ns 61 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n" + "p 101 S cat\ns 0 0x0 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n", true, "cat", false, 0, false, false},
		{"gone", "gone\n", false, "", false, 0, false, false},
		// The local decision's rules reach the remote one: a thread that
		// reads, the newest of a group none of which reads named, a tmux
		// client (which reads only its server's socket) a guess.
		{"a python thread reads", pyThread, true, "python3", false, 1, false, false},
		{"a shell waits for sleep", shellSleep, false, "sleep", false, 0, false, false},
		{"a tmux client", tmuxClient, true, "tmux: client", false, 1, false, true},
	}
	for _, c := range cases {
		r := Parse([]byte(c.out), Archs["x86_64"], true)
		if r.Fg.Waiting != c.waiting || r.Fg.Name != c.fgName || r.EchoOff != c.echoOff || r.Fence != c.fence || r.Fg.Unread != c.unread || r.Fg.Guessed != c.guessed {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

func TestEchoOffWords(t *testing.T) {
	for s, want := range map[string]bool{
		"speed 38400 baud; line = 0; -parenb icanon -echo echoe": true,
		"icanon echo": false, "-icanon -echo": false, "icanon -echo": true, "": false,
	} {
		if echoOffWords(s) != want {
			t.Errorf("echoOffWords(%q) = %v", s, !want)
		}
	}
}
