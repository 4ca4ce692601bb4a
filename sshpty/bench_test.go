//go:build linux

package sshpty

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/remote"
)

// seqCount numbers make about 20 MB on a terminal (ONLCR included).
const seqCount = 2_400_000

// drainCommand waits for a line, then prints the numbers: the drain is
// timed from the line typed to the last byte read, so neither side's
// figure holds the server's login shell starting.
var drainCommand = "echo ready; read x; seq 1 " + strconv.Itoa(seqCount)

// TestBenchReport measures agentpty over SSH beside a bare x/crypto/ssh
// session with a pseudo-terminal, against the same server in the same
// run (make bench).
func TestBenchReport(t *testing.T) {
	if os.Getenv("AGENTPTY_BENCH") == "" {
		t.Skip("set AGENTPTY_BENCH=1 (make bench) to measure")
	}
	runs := envInt("AGENTPTY_BENCH_RUNS", 11)
	srv := sshdtest.Start(t)
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := New(c)
	m := agentpty.NewManager(agentpty.Options{Backend: b, Shell: noProfile, MaxSessions: 400})
	defer m.Close()

	var out strings.Builder
	fmt.Fprintf(&out, "\n%-30s %-12s %-12s %-8s %-9s %s\n", "figure (ssh 127.0.0.1)", "bare ssh", "agentpty", "ratio", "goal", "")
	row := func(name string, p testkit.Paired, unit, goal string, most float64) {
		fmt.Fprintf(&out, "%-30s %-12s %-12s %-8s %-9s %s\n", name, fmt.Sprintf("%.3g %s", p.Floor, unit), fmt.Sprintf("%.3g %s", p.Lib, unit),
			fmt.Sprintf("%.2f×", p.Ratio), goal, judged(p.Ratio <= most, goal))
	}

	p := pairs(runs, func() float64 { return drainBare(t, c) }, func() float64 { return drainLibrary(t, m) })
	row("drain seq, 20 MB (s)", p, "s", "≤ 1.2×", 1.2)

	bt, st, wt := newBareTrip(t, c), newSendTrip(t, m), newWriteTrip(t, m)
	startRows(t, c, b, m, 8*runs, row) // a start is a few ms: more pairs, a steadier median
	loneStartRow(t, srv, 2*runs, row)
	trips := 100 * runs
	p = pairs(trips, func() float64 { return timeIt(func() { mustTrip(t, bt) }) * 1e6 }, func() float64 { return timeIt(func() { mustTrip(t, st) }) * 1e6 })
	row("round trip, Send+Expect (µs)", p, "µs", "≤ 1.5×", 1.5)
	p = pairs(trips/4, func() float64 { return timeIt(func() { mustTrip(t, bt) }) * 1e6 }, func() float64 { return timeIt(func() { mustTrip(t, wt) }) * 1e6 })
	row("round trip, pty-write (µs)", p, "µs", "", 0)
	// A pty-write's result also carries the terminal's echo flag, which
	// only a process on the host can read: the floor for the same
	// information is the bare round trip and then stty there.
	bs := newBareStateTrip(t, c)
	p = pairs(trips/4, func() float64 { return timeIt(func() { mustTrip(t, bs) }) * 1e6 }, func() float64 { return timeIt(func() { mustTrip(t, wt) }) * 1e6 })
	bs.close()
	row("  vs bare round trip + stty", p, "µs", "≤ 1.5×", 1.5)
	probe := probeCost(t, m, wt.id, 20*runs)
	bt.close()
	fmt.Fprintf(&out, "%-30s %-34s\n", "probe (state, one call)", fmt.Sprintf("%.3g ms median", probe*1e3))

	bare := startBareMany(t, c, 100)
	began := time.Now()
	cpu, server := idleCPU(t, m, 100, 3*time.Second, srv)
	lib := time.Since(began).Seconds() - 3
	fmt.Fprintf(&out, "%-30s %-12s %-12s %-8s\n", "100 sessions, 8 at a time (s)", fmt.Sprintf("%.3g s", bare), fmt.Sprintf("%.3g s", lib), fmt.Sprintf("%.2f×", lib/bare))
	fmt.Fprintf(&out, "%-30s %-34s %-9s %s\n", "  idle, here", fmt.Sprintf("%.2f ms CPU per second", float64(cpu)/1e6), "< 20 ms", verdict(cpu < 20*time.Millisecond))
	fmt.Fprintf(&out, "%-30s %-34s\n", "  idle, the server's side", fmt.Sprintf("%.2f ms CPU per second (sshd and all below it)", float64(server)/1e6))
	began = time.Now()
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	fmt.Fprintf(&out, "%-30s %-34s\n", "  Close (all of them)", fmt.Sprintf("%.3g s", time.Since(began).Seconds()))
	t.Log(out.String())
}

// drainBare is the floor: a session with a pty, read to its end.
func drainBare(t *testing.T, c *ssh.Client) float64 {
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RequestPty("xterm", agentpty.DefaultRows, agentpty.DefaultCols, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, _ := s.StdinPipe()
	out, _ := s.StdoutPipe()
	if err := s.Start("exec bash -c " + quote(drainCommand)); err != nil {
		t.Fatal(err)
	}
	var seen []byte
	buf := make([]byte, 32<<10)
	if err := bareUntil(out, []byte("ready"), buf, &seen); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	io.WriteString(in, "\r")
	n, _ := io.CopyBuffer(io.Discard, out, buf)
	took := time.Since(start).Seconds()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if n < seqCount*8 {
		t.Fatalf("bare drain read %d bytes", n)
	}
	return took
}

// drainLibrary is the same through a session, until every byte is in
// the settled text and the screen.
func drainLibrary(t *testing.T, m *agentpty.Manager) float64 {
	ctx := context.Background()
	res, err := m.Start(ctx, agentpty.StartRequest{Command: drainCommand, WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("start: %+v %v", res, err)
	}
	s, _ := m.Session(res.ID)
	start := time.Now()
	if err := s.Send("\r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s.Screen()
	took := time.Since(start).Seconds()
	if tail := s.Tail(1); len(tail) == 0 || !strings.Contains(tail[len(tail)-1], strconv.Itoa(seqCount)) {
		t.Fatalf("the drain ended at %q", tail)
	}
	if _, err := m.Kill(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	return took
}

// startRows measures starts: the session's, Backend.Start's alone, and
// the session's beside a bare start followed by what a bare client does
// to learn the echo flag a session's result carries (its state).
func startRows(t *testing.T, c *ssh.Client, b *Backend, m *agentpty.Manager, n int, row func(string, testkit.Paired, string, string, float64)) {
	p := pairs(n, func() float64 { return startBare(t, c) * 1e3 }, func() float64 { return startLibrary(t, m) * 1e3 })
	row("start, until its first line (ms)", p, "ms", "≤ 1.5×", 1.5)
	p = pairs(n, func() float64 { return startBare(t, c) * 1e3 }, func() float64 { return startBackend(t, b) * 1e3 })
	row("  Backend.Start alone (ms)", p, "ms", "", 0)
	bs := newBareStateTrip(t, c)
	defer bs.close()
	p = pairs(n, func() float64 { return startBareState(t, c, bs) * 1e3 }, func() float64 { return startLibrary(t, m) * 1e3 })
	row("  vs bare start + stty (ms)", p, "ms", "", 0)
}

// loneStartRow measures a start with no other session live on its
// connection, where the probe shell (which ends with the last session)
// starts anew, beside a bare start on the same connection.
func loneStartRow(t *testing.T, srv *sshdtest.Server, n int, row func(string, testkit.Paired, string, string, float64)) {
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := agentpty.NewManager(agentpty.Options{Backend: New(c), Shell: noProfile})
	defer m.Close()
	startLibrary(t, m) // the host is learnt once a Backend
	p := pairs(n, func() float64 { return startBare(t, c) * 1e3 }, func() float64 { return startLibrary(t, m) * 1e3 })
	row("  with no other session (ms)", p, "ms", "", 0)
}

// startBackend is Backend.Start until the first line has been read; the
// command is ended after, outside the time.
func startBackend(t *testing.T, b *Backend) float64 {
	start := time.Now()
	term, out := startTerm(t, b, "echo ready; exec tr a-z A-Z")
	out.waitFor(t, "ready")
	took := time.Since(start).Seconds()
	if err := term.End(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	closeTerm(term, out)
	return took
}

// startBareState is startBare for a command that names its terminal, then
// stty for it in sh's shell on the host.
func startBareState(t *testing.T, c *ssh.Client, sh *bareStateTrip) float64 {
	start := time.Now()
	bt := startBareTrip(t, c, "exec bash -c 'echo \"$(tty) ready\"; exec tr a-z A-Z'")
	dev := regexp.MustCompile(`/dev/pts/\d+`).FindString(string(bt.before))
	if _, err := fmt.Fprintf(sh.shIn, "stty -a <%s; echo END\n", dev); err != nil {
		t.Fatal(err)
	}
	sh.shSeen = sh.shSeen[:0]
	if err := bareUntil(sh.shOut, []byte("END\n"), sh.shBuf, &sh.shSeen); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start).Seconds()
	bt.close()
	return took
}

// startBare is the floor of a start: a session with a pty whose command
// is run by the login shell, until its first line has been read.
func startBare(t *testing.T, c *ssh.Client) float64 {
	start := time.Now()
	bt := startBareTrip(t, c, "exec bash -c 'echo ready; exec tr a-z A-Z'")
	took := time.Since(start).Seconds()
	bt.close()
	return took
}

// startLibrary is a session's start until its first line is matched;
// the session is killed after, outside the time.
func startLibrary(t *testing.T, m *agentpty.Manager) float64 {
	start := time.Now()
	res, err := m.Start(context.Background(), agentpty.StartRequest{Command: "echo ready; exec tr a-z A-Z", WaitFor: "ready"})
	took := time.Since(start).Seconds()
	if err != nil || !res.Matched {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	return took
}

// bareUntil reads r until seen holds want.
func bareUntil(r io.Reader, want, buf []byte, seen *[]byte) error {
	for !bytes.Contains(*seen, want) {
		n, err := r.Read(buf)
		*seen = append(*seen, buf[:n]...)
		if err != nil {
			return fmt.Errorf("%q did not come: %w", want, err)
		}
	}
	i := bytes.Index(*seen, want)
	*seen = append((*seen)[:0], (*seen)[i+len(want):]...)
	return nil
}

type roundTrip interface{ trip(i int) error }

var tripCount int

func mustTrip(t *testing.T, rt roundTrip) {
	tripCount++
	if err := rt.trip(tripCount); err != nil {
		t.Fatal(err)
	}
}

// bareTrip types a line to tr over a bare session and reads the answer.
type bareTrip struct {
	before []byte // printed before "ready"
	s      *ssh.Session
	in     io.Writer
	out    io.Reader
	buf    []byte
	seen   []byte
}

func newBareTrip(t *testing.T, c *ssh.Client) *bareTrip {
	return startBareTrip(t, c, "exec bash -c 'echo ready; exec tr a-z A-Z'")
}

// startBareTrip starts command, which prints "ready" and then runs tr,
// over a bare session with a pseudo-terminal; before is what came before
// "ready".
func startBareTrip(t *testing.T, c *ssh.Client, command string) *bareTrip {
	bt, err := openBareTrip(c, command)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// openBareTrip is startBareTrip, for any goroutine.
func openBareTrip(c *ssh.Client, command string) (*bareTrip, error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	in, _ := s.StdinPipe()
	out, _ := s.StdoutPipe()
	if err = s.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err == nil {
		err = s.Start(command)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	bt := &bareTrip{s: s, in: in, out: out, buf: make([]byte, 32<<10)}
	for !bytes.Contains(bt.seen, []byte("ready")) {
		n, err := out.Read(bt.buf)
		bt.seen = append(bt.seen, bt.buf[:n]...)
		if err != nil {
			bt.close()
			return nil, fmt.Errorf("ready did not come: %v: %q", err, bt.seen)
		}
	}
	i := bytes.Index(bt.seen, []byte("ready"))
	bt.before = bytes.Clone(bt.seen[:i])
	bt.seen = append(bt.seen[:0], bt.seen[i+len("ready"):]...)
	return bt, nil
}

func (b *bareTrip) trip(i int) error {
	if _, err := fmt.Fprintf(b.in, "ping%d\r", i); err != nil {
		return err
	}
	return bareUntil(b.out, []byte("PING"+strconv.Itoa(i)), b.buf, &b.seen)
}

func (b *bareTrip) close() {
	b.s.Signal(ssh.SIGKILL)
	b.s.Close()
}

// bareStateTrip is bareTrip followed by what a bare client does to learn
// the terminal's echo flag: stty for the session's terminal, in a shell
// on the host that waits for commands (no shell start counted).
type bareStateTrip struct {
	*bareTrip
	sh     *ssh.Session
	shIn   io.Writer
	shOut  io.Reader
	dev    string
	shBuf  []byte
	shSeen []byte
}

func newBareStateTrip(t *testing.T, c *ssh.Client) *bareStateTrip {
	bt := startBareTrip(t, c, "exec bash -c 'echo \"$(tty) ready\"; exec tr a-z A-Z'")
	dev := regexp.MustCompile(`/dev/pts/\d+`).FindString(string(bt.before))
	if dev == "" {
		t.Fatalf("no terminal named before ready: %q", bt.before)
	}
	sh, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	in, _ := sh.StdinPipe()
	out, _ := sh.StdoutPipe()
	if err := sh.Start("exec bash --noprofile --norc"); err != nil {
		t.Fatal(err)
	}
	return &bareStateTrip{bareTrip: bt, sh: sh, shIn: in, shOut: out, dev: dev, shBuf: make([]byte, 4096)}
}

func (b *bareStateTrip) trip(i int) error {
	if err := b.bareTrip.trip(i); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(b.shIn, "stty -a <%s; echo END\n", b.dev); err != nil {
		return err
	}
	b.shSeen = b.shSeen[:0]
	if err := bareUntil(b.shOut, []byte("END\n"), b.shBuf, &b.shSeen); err != nil {
		return err
	}
	return nil
}

func (b *bareStateTrip) close() {
	b.sh.Close()
	b.bareTrip.close()
}

// sendTrip is the Go API's round trip: Send, then Expect the answer.
type sendTrip struct{ s *agentpty.Session }

func newSendTrip(t *testing.T, m *agentpty.Manager) *sendTrip {
	res, err := m.Start(context.Background(), agentpty.StartRequest{Command: "echo ready; exec tr a-z A-Z", WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("start: %+v %v", res, err)
	}
	s, _ := m.Session(res.ID)
	return &sendTrip{s: s}
}

func (st *sendTrip) trip(i int) error {
	n := strconv.Itoa(i)
	if err := st.s.Send("ping" + n + "\r"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := st.s.Expect(ctx, regexp.MustCompile("PING"+n+"\\b"))
	return err
}

// writeTrip is the tool's round trip: pty-write with wait_for.
type writeTrip struct {
	m  *agentpty.Manager
	id string
}

func newWriteTrip(t *testing.T, m *agentpty.Manager) *writeTrip {
	res, err := m.Start(context.Background(), agentpty.StartRequest{Command: "echo ready; exec tr a-z A-Z", WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("start: %+v %v", res, err)
	}
	return &writeTrip{m: m, id: res.ID}
}

func (w *writeTrip) trip(i int) error {
	n := strconv.Itoa(i)
	res, err := w.m.Write(context.Background(), agentpty.WriteRequest{ID: w.id, Input: "ping" + n, Submit: true, WaitFor: "PING" + n})
	if err == nil && !res.Matched {
		err = fmt.Errorf("no answer: %q", res.Output)
	}
	return err
}

// probeCost is the median time of one State of a session at rest, each
// after the last one's answer has gone stale (remote.StateFresh).
func probeCost(t *testing.T, m *agentpty.Manager, id string, n int) float64 {
	s, _ := m.Session(id)
	xs := make([]float64, n)
	for i := range xs {
		time.Sleep(remote.StateFresh + time.Millisecond) // spacing the calls, not synchronisation
		xs[i] = timeIt(func() { s.State() })
	}
	sort.Float64s(xs)
	return xs[n/2]
}

// idleCPU is this process's CPU time per second while n sessions sit
// idle on the host, and that of the server's processes (the server is
// local).
func idleCPU(t *testing.T, m *agentpty.Manager, n int, window time.Duration, srv *sshdtest.Server) (local, server time.Duration) {
	eightAtATime(t, n, func(int) error {
		_, err := m.Start(context.Background(), agentpty.StartRequest{Command: "echo idle; exec cat", WaitFor: "idle"})
		return err
	})
	sshd := serverPID(t, srv)
	sBefore := treeCPU(sshd) // outside this process's window: the walk through /proc costs
	before := cpuTime()
	time.Sleep(window) // a measurement window, not synchronisation
	local = (cpuTime() - before) * time.Second / window
	return local, (treeCPU(sshd) - sBefore) * time.Second / window
}

// eightAtATime runs start(i) for i below n, 8 at a time.
func eightAtATime(t *testing.T, n int, start func(i int) error) {
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := start(i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// startBareMany is how long n bare sessions (as startBare's) take to
// start, 8 at a time; they are closed after.
func startBareMany(t *testing.T, c *ssh.Client, n int) float64 {
	trips := make([]*bareTrip, n)
	start := time.Now()
	eightAtATime(t, n, func(i int) (err error) {
		trips[i], err = openBareTrip(c, "exec bash -c 'echo ready; exec tr a-z A-Z'")
		return err
	})
	took := time.Since(start).Seconds()
	for _, bt := range trips {
		if bt != nil {
			bt.close()
		}
	}
	return took
}

// serverPID is the server's listening process, from its pid file.
func serverPID(t *testing.T, srv *sshdtest.Server) int {
	b, err := os.ReadFile(filepath.Join(srv.Dir, "sshd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// treeCPU is the CPU time (user and system, in clock ticks of 10 ms) of
// root and every process below it.
func treeCPU(root int) time.Duration {
	parent, ticks := map[int]int{}, map[int]int64{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+2:]))
		if len(f) < 13 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks[pid] = u + s
	}
	var sum int64
	for pid, n := range ticks {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				sum += n
				break
			}
		}
	}
	return time.Duration(sum) * 10 * time.Millisecond
}

// The paired measurements are testkit's, shared with the library's bench.
var (
	verdict = testkit.Verdict
	// judged is the verdict of a row with a goal; a row without one only
	// reports.
	judged = func(ok bool, goal string) string {
		if goal == "" {
			return ""
		}
		return verdict(ok)
	}
	envInt  = testkit.EnvInt
	timeIt  = testkit.TimeIt
	pairs   = testkit.Pairs
	cpuTime = testkit.CPUTime
)
