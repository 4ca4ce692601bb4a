package remote

import "testing"

// Answers as the probe prints them (after the request's number), and what
// they mean, on x86_64.
func TestParse(t *testing.T) {
	const (
		head    = "t 100 /dev/pts/2\nstty icanon echo\n"
		readTTY = "p 100 S cat\ns 0 0x0 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n"
		pollSet = "mp 00 00 00 00 01 00 00 00\n" // fd 0, POLLIN
	)
	cases := []struct {
		name    string
		out     string
		waiting bool
		fgName  string
		echoOff bool
		fence   int
		unread  bool
	}{
		{"reading its terminal", head + readTTY + "fence 7\n", true, "cat", false, 7, false},
		{"running", head + "p 100 R cat\n", false, "cat", false, 0, false},
		{"reading another file", head + "p 100 S cat\ns 0 0x5 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n", false, "cat", false, 0, false},
		{"hidden call, echo off", "t 100 /dev/pts/2\nstty icanon -echo\np 100 S read\ns\n", true, "read", true, 0, false},
		{"hidden call, echo on", head + "p 100 S read\ns\n", false, "read", false, 0, false},
		{"poll without a timeout", head + "p 100 S vim\ns 7 0x7ffd 0x1 0xffffffff 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n" + pollSet, true, "vim", false, 0, false},
		{"poll pausing 50 ms", head + "p 100 S vim\ns 7 0x7ffd 0x1 0x32 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n" + pollSet, false, "vim", false, 0, false},
		{"typed input unread", head + "unread\n" + readTTY, true, "cat", false, 0, true},
		{"a leader waiting for its child that reads", head + "p 100 S bash\ns 61 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0 1 2\n" + "p 101 S cat\ns 0 0x0 0x7f0000 0x20000 0x0 0x0 0x0 0x7ffe 0x7f01\nf 0\n", true, "cat", false, 0, false},
		{"gone", "gone\n", false, "", false, 0, false},
	}
	for _, c := range cases {
		r := Parse([]byte(c.out), Archs["x86_64"], true)
		if r.Fg.Waiting != c.waiting || r.Fg.Name != c.fgName || r.EchoOff != c.echoOff || r.Fence != c.fence || r.Fg.Unread != c.unread {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

func TestEchoOffWords(t *testing.T) {
	for s, want := range map[string]bool{
		"speed 38400 baud; line = 0; -parenb icanon -echo echoe": true,
		"icanon echo": false, "-icanon -echo": false, "icanon -echo": true, "": false,
	} {
		if EchoOffWords(s) != want {
			t.Errorf("EchoOffWords(%q) = %v", s, !want)
		}
	}
}
