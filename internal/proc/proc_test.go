//go:build linux || darwin

package proc

import (
	"context"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A session with a leader and a member in a group of its own: Members sees
// both, Signal reaches both, WaitGone returns once both are gone.
func TestSessionMembers(t *testing.T) {
	cmd := exec.Command("bash", "-c", "set -m; sleep 1000 & echo $!; exec sleep 1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sid := cmd.Process.Pid
	var bg int
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	for _, c := range buf[:n] {
		if c >= '0' && c <= '9' {
			bg = bg*10 + int(c-'0')
		}
	}
	got := Members(sid)
	if !slices.Contains(got, sid) || !slices.Contains(got, bg) {
		t.Fatalf("Members(%d) = %v, want the leader and %d", sid, got, bg)
	}
	if g, _ := syscall.Getpgid(bg); g == sid {
		t.Fatalf("the background job should lead a group of its own")
	}
	tr := NewTracker(sid)
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tr.WaitGone(ctx); err == nil {
		t.Fatal("WaitGone returned while the session was alive")
	}
	if n := tr.Signal(syscall.SIGKILL); n != 2 {
		t.Errorf("Signal reached %d processes, want 2", n)
	}
	go cmd.Wait() // reap the leader; the member is reaped by init
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := tr.WaitGone(ctx2); err != nil {
		t.Fatalf("WaitGone after SIGKILL: %v (left: %v)", err, tr.Members())
	}
}
