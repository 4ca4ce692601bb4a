package kubepty

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty/kubetest"
	"github.com/agentpty/agentpty/remote"
)

// A program blocked on its terminal waits only once what it wrote before
// it blocked has come through the exec stream: the stand-in's node holds
// each chunk of output a while, so that the program has printed all and
// blocks long before the last chunk arrives, and no probe may see it
// waiting until then. The probe's mark, written to the terminal after
// the output, tells when.
func TestWaitingAfterItsOutput(t *testing.T) {
	_, b := standin(t, kubetest.OutputDelay(150*time.Millisecond))
	// A first probe that already finds the program waiting (a loaded
	// machine ran it to its read before the probe) tests nothing here:
	// the program is started again, a few times at most.
	for try := 1; ; try++ {
		if probes := probeUntilWaiting(t, b); probes >= 2 {
			return
		}
		if try == 5 {
			t.Fatalf("waiting at the first probe %d times: the output came before the program blocked, which this test does not test", try)
		}
		t.Logf("try %d: waiting at the first probe; starting again", try)
	}
}

// probeUntilWaiting starts a program that prints a lot and reads, probes
// it until it waits, checks that its output had all come through (or
// was still pending) by then, and ends it; it returns the probes taken.
func probeUntilWaiting(t *testing.T, b *Backend) int {
	t.Helper()
	s := start(t, b, 80, 24, "sh", "-c", "seq 1 5000; read x")
	sr := s.term.(agentpty.StateReader)
	deadline := time.Now().Add(30 * time.Second)
	probes := 0
	for {
		fg := sr.Foreground()
		probes++
		if fg.Waiting {
			out := s.String()
			if !strings.Contains(out, "\r\n5000\r\n") && !sr.OutputPending() {
				t.Fatalf("probe %d: waiting in %s with %d bytes of the output read, the last %q, and none pending", probes, fg.Name, len(out), out[max(0, len(out)-20):])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not waiting after %d probes", probes)
		}
	}
	endClean(t, s, "x\r")
	return probes
}

// One probe answers Foreground and the EchoOff that follows it, as the
// library asks them: the echo flag and the waiting are of one moment,
// and a state costs one exec. Input typed since is not answered from it.
func TestOneProbeAnswersBoth(t *testing.T) {
	srv, b := standin(t)
	s, sr := startWaiting(t, b, "stty -echo; echo ready; read x; stty echo; echo echoing; read y")
	execs := srv.WebSocket.Load()
	fg, off := sr.Foreground(), sr.EchoOff()
	if n := srv.WebSocket.Load() - execs; n != 1 {
		t.Errorf("Foreground and EchoOff took %d execs; want one", n)
	}
	if !fg.Waiting || !off {
		t.Errorf("at the silent read: waiting %v, echo off %v; want both", fg.Waiting, off)
	}
	if _, err := s.term.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	s.expect(t, "echoing")
	awaitWaiting(t, sr, "the second read")
	if sr.EchoOff() {
		t.Errorf("echo off at the second read, after stty echo")
	}
	endClean(t, s, "y\r")
}

// Input is on its way to the terminal after Write returns: the exec API
// acknowledges none. A probe begins once the input has had half as long
// as the last probe took, and looks later still: here the stand-in's
// node holds the input for less than that, and the program, blocked at
// its first read when the input was typed, must be seen past it (its
// answer read), not waiting from before.
func TestWaitingAfterItsInput(t *testing.T) {
	_, b := standin(t, kubetest.InputDelay(200*time.Millisecond))
	s, sr := startWaiting(t, b, "echo ready; read x; echo got-$x; read y")
	b.probeTook.Store(int64(600 * time.Millisecond)) // a slow link's probe
	if _, err := s.term.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	fg := sr.Foreground()
	out := s.String()
	if fg.Waiting && !strings.Contains(out, "got-x") && !sr.OutputPending() {
		t.Errorf("waiting right after the input was typed, without its answer: %q", out)
	}
	endClean(t, s, "y\r")
}

// awaitWaiting probes until the terminal's program waits for input, at
// what the test names.
func awaitWaiting(t *testing.T, sr agentpty.StateReader, at string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !sr.Foreground().Waiting {
		if time.Now().After(deadline) {
			t.Fatalf("never waiting at %s", at)
		}
	}
}

// A terminal whose output is stopped (Ctrl-S) holds back the probe's
// mark: the probe answers all the same, in remote.FenceWait, and without the
// program seen waiting, as what it wrote may be held too. Ctrl-Q lets
// the mark through, and it is taken out of the output like any other.
func TestStoppedOutput(t *testing.T) {
	_, b := standin(t)
	s, sr := startWaiting(t, b, "echo ready; read x; echo got-$x; read y")
	if _, err := s.term.Write([]byte("\x13")); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if fg := sr.Foreground(); fg.Waiting {
		t.Errorf("waiting while the terminal's output is stopped")
	}
	if took := time.Since(begin); took > remote.FenceWait+probeTimeout/2 {
		t.Errorf("a probe of a stopped terminal took %v", took)
	}
	if _, err := s.term.Write([]byte("\x11x\r")); err != nil {
		t.Fatal(err)
	}
	s.expect(t, "got-x")
	awaitWaiting(t, sr, "the second read")
	endClean(t, s, "y\r")
}

// endClean types the program's last input, waits for its end, and checks
// that none of the probes' marks reached the output.
func endClean(t *testing.T, s *screen, last string) {
	t.Helper()
	if _, err := s.term.Write([]byte(last)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if out := s.String(); strings.Contains(out, "\x1b]6973;") {
		t.Errorf("a mark is left in the output: %q", out)
	}
}

// startWaiting starts script, which prints "ready" and reads, and probes
// until it waits there.
func startWaiting(t *testing.T, b *Backend, script string) (*screen, agentpty.StateReader) {
	t.Helper()
	s := start(t, b, 80, 24, "sh", "-c", script)
	s.expect(t, "ready")
	sr := s.term.(agentpty.StateReader)
	awaitWaiting(t, sr, "the first read")
	return s, sr
}

// Each probe of a stopped terminal leaves its mark's writer blocked on it.
// The writers carry the session's nonce, so End ends them with the
// command: the stream then ends at once with the command's status,
// rather than after End's wait for it and without it.
func TestStoppedOutputEnd(t *testing.T) {
	_, b := standin(t)
	s, sr := startWaiting(t, b, "echo ready; read x")
	if _, err := s.term.Write([]byte("\x13")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if sr.Foreground().Waiting {
			t.Fatalf("probe %d: waiting while the terminal's output is stopped", i)
		}
	}
	begin := time.Now()
	err := s.term.End(context.Background(), time.Second)
	took := time.Since(begin)
	select {
	case <-s.term.(*terminal).exited:
	default:
		t.Fatalf("End returned (%v after %v) before the stream ended", err, took)
	}
	st, werr := s.term.Wait()
	if err != nil || werr != nil || st.Signal != "SIGTERM" || took >= remote.StatusWait {
		t.Errorf("End: %v after %v; the command ended %+v %v; want SIGTERM's status well within %v", err, took, st, werr, remote.StatusWait)
	}
}

// A probe waits for its own mark: another probe's, of a later number and
// written before it (kube's probes are execs of their own, and run in
// any order), says nothing of the output that came before this one's.
func TestMarksMatchTheirProbe(t *testing.T) {
	_, b := standin(t, kubetest.OutputDelay(300*time.Millisecond))
	s, sr := startWaiting(t, b, "echo ready; read x; echo got-$x; read y")
	tm := s.term.(*terminal)
	pid := tm.PID()
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/0", pid), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%s%d\a", remote.FencePrefix(tm.nonce), tm.probes.Load()+2) // the next probe is +1
	f.Close()
	before := schedstat(t, pid)
	if _, err := s.term.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	// The program has read the line and printed: it ran, and waits again.
	deadline := time.Now().Add(10 * time.Second)
	for schedstat(t, pid) == before || !strings.Contains(wchan(pid), "wait_woken") {
		if time.Now().After(deadline) {
			t.Fatalf("the program never read the line: %s", wchan(pid))
		}
		time.Sleep(time.Millisecond)
	}
	fg := sr.Foreground()
	out := s.String()
	if fg.Waiting && !sr.OutputPending() && !strings.Contains(out, "got-x") {
		t.Errorf("waiting, and nothing pending, before the output written before the wait: %q", out)
	}
	endClean(t, s, "y\r")
}

// schedstat is a local process's time on a CPU so far.
func schedstat(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}

// wchan is where a local process sleeps in the kernel.
func wchan(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	return string(b)
}
