// Package testkit holds what the tests of several packages share: the
// check for a program a test needs, a throwaway login user, the
// descriptor count of the leak checks, a local TCP server, and the
// bench's paired measurements. It is for tests only.
package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Need skips t when a program is missing, unless AGENTPTY_REQUIRE=all asks
// for every test to run (then it fails t).
func Need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			Lacks(t, "%s is not installed: %v", p, err)
		}
	}
}

// Lacks skips t for what the machine lacks (why, as a format and its
// arguments), unless AGENTPTY_REQUIRE=all asks for every test to run:
// then it fails t.
func Lacks(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv("AGENTPTY_REQUIRE") == "all" {
		t.Fatalf("AGENTPTY_REQUIRE=all, but %s", why)
	}
	t.Skipf("%s (AGENTPTY_REQUIRE=all makes this a failure)", why)
}

// LoginUser adds the user name, who is not root, with password, no home
// of its own (/tmp) and bash as its shell; it is removed when t ends.
// Adding users needs root.
func LoginUser(t testing.TB, name, password string) {
	t.Helper()
	run := func(stdin string, args ...string) {
		t.Helper()
		c := exec.Command(args[0], args[1:]...)
		c.Stdin = strings.NewReader(stdin)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("", "useradd", "-M", "-d", "/tmp", "-s", "/bin/bash", name)
	t.Cleanup(func() { _ = exec.Command("userdel", "-f", name).Run() })
	run(name+":"+password+"\n", "chpasswd")
}

// SudoUser adds, as LoginUser does, the user name with password, who may
// run anything with sudo after giving the password; the sudoers entry is
// removed when t ends.
func SudoUser(t testing.TB, name, password string) string {
	t.Helper()
	LoginUser(t, name, password)
	sudoers := "/etc/sudoers.d/" + name
	t.Cleanup(func() { os.Remove(sudoers) })
	if err := os.WriteFile(sudoers, []byte(name+" ALL=(ALL) ALL\nDefaults:"+name+" lecture=never\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	return name
}

// OpenFDs counts this process's open file descriptors (skipping t where
// /proc cannot say).
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(ents)
}

// Serve listens on a free port of 127.0.0.1 until t ends, hands each
// connection to serve and closes it after; it returns the port.
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
			_ = c.Close()
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Paired is what Pairs measured: the median of the floor's runs, of the
// library's, and of the ratios of runs taken together.
type Paired struct{ Floor, Lib, Ratio float64 }

// Pairs runs the floor and then the library, n times, so that each pair
// sees the machine alike (its load on these VMs drifts by a third within
// seconds), and returns the medians.
func Pairs(n int, floor, lib func() float64) Paired {
	xs, ys, rs := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i] = floor()
		ys[i] = lib()
		rs[i] = ys[i] / xs[i]
	}
	median := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return Paired{median(xs), median(ys), median(rs)}
}

// Verdict says whether a goal was met.
func Verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// EnvInt reads a positive number from the environment, else def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TimeIt is how long f takes, in seconds.
func TimeIt(f func()) float64 {
	start := time.Now()
	f()
	return time.Since(start).Seconds()
}

// NumberAfter is the number text prints between key and the next end
// (as "job=123." with key "job=" and end "."); the test fails when there
// is none.
func NumberAfter(t testing.TB, text, key, end string) int {
	t.Helper()
	_, rest, ok := strings.Cut(text, key)
	num, _, ended := strings.Cut(rest, end)
	n, err := strconv.Atoi(num)
	if !ok || !ended || err != nil {
		t.Fatalf("no number between %q and %q in %q", key, end, text)
	}
	return n
}
