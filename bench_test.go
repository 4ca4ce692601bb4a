package agentpty

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// The library is measured beside the floor: the same command line under a
// bare creack/pty read loop, in the same run, because these machines are
// noisy and only the ratio means anything.

// benchShell skips the login profile where the profile is not what is
// measured; both sides run the same command line either way.
var benchShell = []string{"bash", "-c"}

// benchFile writes a text file of about size bytes of log-like lines,
// with a colour on every line when coloured.
func benchFile(tb testing.TB, size int, coloured bool) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "out.txt")
	format := "%6d  the quick brown fox jumps over the lazy dog  ok  %x\n"
	if coloured {
		format = "%6d  the quick brown fox jumps over the lazy dog  \x1b[32mok\x1b[0m  %x\n"
	}
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, format, i, i*2654435761)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// bareStart starts argv under a bare creack/pty terminal.
func bareStart(tb testing.TB, argv ...string) (*os.File, *exec.Cmd) {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childEnv(nil)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: DefaultCols, Rows: DefaultRows})
	if err != nil {
		tb.Fatal(err)
	}
	return f, cmd
}

// bareDrain is the floor's read loop: read until the terminal reports EIO.
func bareDrain(f *os.File, cmd *exec.Cmd) int64 {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	closePidfd(cmd) // the library's startChild asks the fork for one
	f.Close()
	return n
}

// checkAllRead fails unless n bytes read cover all of file (the terminal
// adds a CR to each LF, so n may be more).
func checkAllRead(tb testing.TB, file string, n int64) {
	fi, err := os.Stat(file)
	if err != nil {
		tb.Fatal(err)
	}
	if n < fi.Size() {
		tb.Fatalf("%d bytes read of the %d-byte file", n, fi.Size())
	}
}

// bareUntil reads until lit has appeared in what was read since the call.
func bareUntil(f *os.File, lit []byte, buf []byte, seen *[]byte) error {
	*seen = (*seen)[:0]
	for !bytes.Contains(*seen, lit) {
		k, err := f.Read(buf)
		if err != nil {
			return err
		}
		*seen = append(*seen, buf[:k]...)
	}
	return nil
}

func throughputBare(tb testing.TB, file string) int64 {
	f, cmd := bareStart(tb, append(benchShell, "cat "+file)...)
	n := bareDrain(f, cmd)
	checkAllRead(tb, file, n)
	return n
}

// throughputLibrary runs until every byte is in the ring, the settled
// text and the screen.
func throughputLibrary(tb testing.TB, m *Manager, file string) int64 {
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: "cat " + file, WaitMS: ms(0)})
	if err != nil {
		tb.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	if _, err := s.Wait(ctx); err != nil {
		tb.Fatal(err)
	}
	s.Screen()
	n := ringEnd(s)
	if _, err := m.Kill(ctx, res.ID); err != nil {
		tb.Fatal(err)
	}
	checkAllRead(tb, file, n)
	return n
}

func BenchmarkThroughput(b *testing.B) {
	const size = 20 << 20
	for _, coloured := range []bool{false, true} {
		file := benchFile(b, size, coloured)
		name := map[bool]string{false: "text", true: "coloured"}[coloured]
		b.Run(name+"/bare", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				throughputBare(b, file)
			}
		})
		b.Run(name+"/library", func(b *testing.B) {
			m := NewManager(Options{Shell: benchShell})
			defer m.Close()
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				throughputLibrary(b, m, file)
			}
		})
	}
}

// roundTrip types a line into `tr a-z A-Z` and waits for its answer.
type roundTrip interface {
	trip(i int) error
	close()
}

// tripCount numbers trips, so every answer awaited is a new one.
var tripCount int

func mustTrip(tb testing.TB, rt roundTrip) {
	tripCount++
	if err := rt.trip(tripCount); err != nil {
		tb.Fatal(err)
	}
}

type bareTrip struct {
	f    *os.File
	cmd  *exec.Cmd
	buf  []byte
	seen []byte
}

func newBareTrip(tb testing.TB) *bareTrip {
	f, cmd := bareStart(tb, append(benchShell, "tr a-z A-Z")...)
	return &bareTrip{f: f, cmd: cmd, buf: make([]byte, 32<<10)}
}

func (t *bareTrip) trip(i int) error {
	if _, err := fmt.Fprintf(t.f, "ping%d\r", i); err != nil {
		return err
	}
	return bareUntil(t.f, []byte("PING"+strconv.Itoa(i)), t.buf, &t.seen)
}

func (t *bareTrip) close() {
	_ = t.cmd.Process.Kill()
	_ = t.cmd.Wait()
	t.f.Close()
}

type libTrip struct {
	m  *Manager
	id string
}

func newLibTrip(tb testing.TB) *libTrip {
	m := NewManager(Options{Shell: benchShell})
	res, err := m.Start(context.Background(), StartRequest{Command: "tr a-z A-Z", WaitMS: ms(0)})
	if err != nil {
		tb.Fatal(err)
	}
	return &libTrip{m: m, id: res.ID}
}

func (t *libTrip) trip(i int) error {
	n := strconv.Itoa(i)
	res, err := t.m.Write(context.Background(), WriteRequest{ID: t.id, Input: "ping" + n, Submit: true, WaitFor: "PING" + n})
	if err == nil && !res.Matched {
		err = fmt.Errorf("no answer: %q", res.Output)
	}
	return err
}

func (t *libTrip) close() { t.m.Close() }

// callTrip is libTrip through Manager.Call, as a host speaking JSON calls
// it: the arguments decoded and the result encoded on every trip.
type callTrip struct{ libTrip }

func newCallTrip(tb testing.TB) *callTrip { return &callTrip{*newLibTrip(tb)} }

func (t *callTrip) trip(i int) error {
	n := strconv.Itoa(i)
	args := `{"id":"` + t.id + `","input":"ping` + n + `","submit":true,"wait_for":"PING` + n + `"}`
	out, err := t.m.Call(context.Background(), ToolWrite, json.RawMessage(args))
	if err == nil && !bytes.Contains(out, []byte(`"matched":true`)) {
		err = fmt.Errorf("no answer: %s", out)
	}
	return err
}

func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(testing.TB) roundTrip
	}{
		{"bare", func(tb testing.TB) roundTrip { return newBareTrip(tb) }},
		{"library", func(tb testing.TB) roundTrip { return newLibTrip(tb) }},
		{"call", func(tb testing.TB) roundTrip { return newCallTrip(tb) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rt := c.open(b)
			defer rt.close()
			b.ResetTimer()
			before := cpuTime()
			for i := 0; i < b.N; i++ {
				if err := rt.trip(i); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU per trip: on a loaded machine, what a trip
			// costs rather than how long it waited for a core.
			b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// startCommand is an interactive bash whose prompt marks it ready.
const startCommand = "PS1='ready$ ' exec bash --norc -i"

func startBare(tb testing.TB) {
	f, cmd := bareStart(tb, "bash", "-lc", startCommand)
	var seen []byte
	if err := bareUntil(f, []byte("ready$ "), make([]byte, 4096), &seen); err != nil {
		tb.Fatal(err)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	bareDrain(f, cmd)
}

func startLibrary(tb testing.TB, m *Manager) {
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: startCommand, WaitFor: "ready$ "})
	if err != nil || !res.Matched {
		tb.Fatalf("start: %v %q", err, res.Output)
	}
	if _, err := m.Kill(ctx, res.ID); err != nil {
		tb.Fatal(err)
	}
}

// startEcho starts a command that prints and exits, under m's shell, and
// kills the session once the output has come.
func startEcho(tb testing.TB, m *Manager) {
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: "echo start-$((6*7))", WaitFor: "start-42"})
	if err != nil || !res.Matched {
		tb.Fatalf("start: %v %q", err, res.Output)
	}
	if _, err := m.Kill(ctx, res.ID); err != nil {
		tb.Fatal(err)
	}
}

// exitBare runs `true` under a bare terminal from start to exit.
func exitBare(tb testing.TB) {
	f, cmd := bareStart(tb, append(benchShell, "true")...)
	bareDrain(f, cmd)
}

// exitLibrary runs `true` from Start until Wait has its exit status, and
// kills the session, which removes what the start made (its cgroup).
func exitLibrary(tb testing.TB, m *Manager) {
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: "true", WaitMS: ms(0)})
	if err != nil {
		tb.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	if _, err := s.Wait(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := m.Kill(ctx, res.ID); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkStart(b *testing.B) {
	b.Run("true/bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			exitBare(b)
		}
	})
	b.Run("true/library", func(b *testing.B) {
		m := NewManager(Options{Shell: benchShell})
		defer m.Close()
		exitLibrary(b, m) // the manager's cgroup and watchdog, made once
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			exitLibrary(b, m)
		}
	})
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			startBare(b)
		}
	})
	b.Run("library", func(b *testing.B) {
		m := NewManager(Options{})
		defer m.Close()
		for i := 0; i < b.N; i++ {
			startLibrary(b, m)
		}
	})
	for _, c := range []struct {
		name string
		opts Options
	}{{"echo/no-profile", Options{Shell: benchShell}}, {"echo/snapshot", Options{ShellSnapshot: true}}, {"echo/login", Options{}}} {
		b.Run(c.name, func(b *testing.B) {
			m := NewManager(c.opts)
			defer m.Close()
			startEcho(b, m)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				startEcho(b, m)
			}
		})
	}
}

// idleSessions starts n sessions that print a line and then wait for input.
func idleSessions(tb testing.TB, m *Manager, n int) {
	for i := 0; i < n; i++ {
		if _, err := m.Start(context.Background(), StartRequest{Command: "echo idle; exec cat", WaitFor: "idle"}); err != nil {
			tb.Fatal(err)
		}
	}
}

// heapPerSession is the live heap an idle session holds.
func heapPerSession(tb testing.TB, n int) float64 {
	m := NewManager(Options{Shell: benchShell, MaxSessions: n})
	defer m.Close()
	before := liveHeap()
	idleSessions(tb, m, n)
	after := liveHeap()
	return float64(after-before) / float64(n)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// idleCPU is the CPU the process spends per second of wall time with n
// idle sessions open.
func idleCPU(tb testing.TB, n int, window time.Duration) time.Duration {
	m := NewManager(Options{Shell: benchShell, MaxSessions: n})
	defer m.Close()
	idleSessions(tb, m, n)
	before := cpuTime()
	time.Sleep(window) // a measurement window, not synchronisation
	return (cpuTime() - before) * time.Second / window
}

// closeCost is how long Close takes to end n idle sessions (exec cat).
func closeCost(tb testing.TB, n int) time.Duration {
	m := NewManager(Options{Shell: benchShell, MaxSessions: n})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, err := m.Start(context.Background(), StartRequest{Command: "echo idle; exec cat", WaitFor: "idle", Cols: 80, Rows: 24}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		m.Close()
		tb.Fatal(err)
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkClose1000 ends 1,000 idle sessions with one Close.
func BenchmarkClose1000(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(closeCost(b, 1000).Seconds()*1e3, "ms/close")
	}
}

func BenchmarkIdleSessionHeap(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(heapPerSession(b, 20)/1024, "KiB/session")
	}
}

// rssGrowth pushes total bytes through one session and returns how much
// the process's resident set grew.
func rssGrowth(tb testing.TB, total int64) int64 {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	before := rss()
	cmd := fmt.Sprintf("yes 'a line of output that goes on for a while, like logs do' | head -c %d", total)
	res, err := m.Start(context.Background(), StartRequest{Command: cmd, WaitMS: ms(0)})
	if err != nil {
		tb.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	if _, err := s.Wait(context.Background()); err != nil {
		tb.Fatal(err)
	}
	s.Screen()
	if _, err := m.Write(context.Background(), WriteRequest{ID: res.ID, WaitMS: ms(0)}); err != nil {
		tb.Fatal(err)
	}
	return rss() - before
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// floodResults reads a session all through a flood of total bytes, as a
// model polling it would, and returns the most output one result held.
func floodResults(tb testing.TB, total int64) int {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: fmt.Sprintf("seq 1 1000000000 | head -c %d", total), WaitMS: ms(0)})
	if err != nil {
		tb.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	largest := len(res.Output)
	for done := false; !done; {
		select {
		case <-s.done: // this read takes the rest
			done = true
		default:
		}
		w, err := m.Write(ctx, WriteRequest{ID: res.ID, WaitMS: ms(10)})
		if err != nil {
			tb.Fatal(err)
		}
		largest = max(largest, len(w.Output))
	}
	return largest
}

// readCost is how long one capped read takes out of backlog bytes nobody
// has read.
func readCost(backlog int) time.Duration {
	s := newSettler(2 * backlog)
	chunk := settleBenchText(1<<20, false)
	for n := 0; n < backlog; n += len(chunk) {
		s.write(chunk)
	}
	saved := *s // read only starts a new epoch: restoring the fields undoes it
	const reads = 50
	start := time.Now()
	for range reads {
		s.read(DefaultMaxOutputBytes)
		*s = saved
	}
	return time.Since(start) / reads
}

// TestBenchReport prints every figure of the performance goals beside the
// floor and the ratio (make bench). It measures, it does not assert: speed
// is for benchmarks, not timed tests.
func TestBenchReport(t *testing.T) {
	if os.Getenv("AGENTPTY_BENCH") == "" {
		t.Skip("set AGENTPTY_BENCH=1 (make bench) to measure")
	}
	runs := envInt("AGENTPTY_BENCH_RUNS", 11)
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()

	var rows [][]string
	row := func(name string, p testkit.Paired, unit, goal string, most float64) {
		rows = append(rows, []string{name, fmt.Sprintf("%.3g %s", p.Floor, unit), fmt.Sprintf("%.3g %s", p.Lib, unit),
			fmt.Sprintf("%.2f×", p.Ratio), goal, verdict(p.Ratio <= most)})
	}

	for _, coloured := range []bool{false, true} {
		name := map[bool]string{false: "cat 20 MB text (s)", true: "cat 20 MB coloured (s)"}[coloured]
		if !benchRow(name) {
			continue
		}
		file := benchFile(t, 20<<20, coloured)
		p := pairs(runs,
			func() float64 { return timeIt(func() { throughputBare(t, file) }) },
			func() float64 { return timeIt(func() { throughputLibrary(t, m, file) }) })
		row(name, p, "s", "≤ 1.10×", 1.10)
	}

	// The round trip pairs single trips, through the Go API and through
	// Call, each beside the floor.
	for _, c := range []struct {
		name, goal string
		most       float64
		open       func(testing.TB) roundTrip
	}{
		{"round trip (µs)", "≤ 1.5×", 1.5, func(tb testing.TB) roundTrip { return newLibTrip(tb) }},
		{"round trip, Call (µs)", "≤ 2.0×", 2.0, func(tb testing.TB) roundTrip { return newCallTrip(tb) }},
	} {
		if !benchRow(c.name) {
			continue
		}
		bt, lt := newBareTrip(t), c.open(t)
		p := pairs(500*runs,
			func() float64 { return timeIt(func() { mustTrip(t, bt) }) * 1e6 },
			func() float64 { return timeIt(func() { mustTrip(t, lt) }) * 1e6 })
		bt.close()
		lt.close()
		row(c.name, p, "µs", c.goal, c.most)
	}

	if benchRow("start bash -i (ms)") {
		sm := NewManager(Options{})
		p := pairs(runs,
			func() float64 { return timeIt(func() { startBare(t) }) * 1e3 },
			func() float64 { return timeIt(func() { startLibrary(t, sm) }) * 1e3 })
		sm.Close()
		row("start bash -i (ms)", p, "ms", "≤ 1.3×", 1.3)
	}

	// The library's own cost of a session, start to exit: the goal is
	// under a millisecond more than the floor, so the row's verdict is on
	// the difference.
	if benchRow("start→exit true (ms)") {
		em := NewManager(Options{Shell: benchShell})
		exitLibrary(t, em) // the manager's cgroup and watchdog, made once
		p := pairs(10*runs,
			func() float64 { return timeIt(func() { exitBare(t) }) * 1e3 },
			func() float64 { return timeIt(func() { exitLibrary(t, em) }) * 1e3 })
		em.Close()
		// The excess is the floor's median times the median ratio less
		// one: a difference of two medians would be the load's as much.
		excess := p.Floor * (p.Ratio - 1)
		rows = append(rows, []string{"start→exit true (ms)", fmt.Sprintf("%.3g ms", p.Floor), fmt.Sprintf("%.3g ms", p.Lib),
			fmt.Sprintf("%.2f×", p.Ratio), "< +1 ms", fmt.Sprintf("%s (%+.2f ms)", verdict(excess < 1), excess)})
	}

	// A start from the login shell's snapshot, beside one with no profile
	// at all; the login shell with this machine's real profile is printed
	// with them (its ratio is to the same floor).
	if benchRow("start, snapshot (ms)") || benchRow("start, login (ms)") {
		noProfile, snap, login := NewManager(Options{Shell: benchShell}), NewManager(Options{ShellSnapshot: true}), NewManager(Options{})
		startEcho(t, snap) // the snapshot is made once, before the runs
		p := pairs(runs,
			func() float64 { return timeIt(func() { startEcho(t, noProfile) }) * 1e3 },
			func() float64 { return timeIt(func() { startEcho(t, snap) }) * 1e3 })
		row("start, snapshot (ms)", p, "ms", "≤ 1.3×", 1.3)
		lp := pairs(runs,
			func() float64 { return timeIt(func() { startEcho(t, noProfile) }) * 1e3 },
			func() float64 { return timeIt(func() { startEcho(t, login) }) * 1e3 })
		rows = append(rows, []string{"start, login (ms)", fmt.Sprintf("%.3g ms", lp.Floor), fmt.Sprintf("%.3g ms", lp.Lib), fmt.Sprintf("%.2f×", lp.Ratio), "(bash -lc)", ""})
		noProfile.Close()
		snap.Close()
		login.Close()
	}

	// The figures without a floor, each as a line of its own.
	var lines []string
	line := func(name, value, goal string, ok bool) {
		lines = append(lines, fmt.Sprintf("%-22s %-34s %-9s %s\n", name, value, goal, verdict(ok)))
	}
	if benchRow("50 idle sessions") {
		cpu := idleCPU(t, 50, 2*time.Second)
		line("50 idle sessions", fmt.Sprintf("%.2f ms CPU per second", float64(cpu)/1e6), "< 20 ms", cpu < 20*time.Millisecond)
	}
	if benchRow("idle session heap") {
		heap := heapPerSession(t, 50)
		line("idle session heap", fmt.Sprintf("%.1f KiB", heap/1024), "< 200 KiB", heap < 200<<10)
	}
	if benchRow("Close 1000 idle") {
		closing := closeCost(t, 1000)
		line("Close 1000 idle", fmt.Sprintf("%v (%s)", closing.Round(time.Millisecond), containmentHere(t)), "< 1 s", closing < time.Second)
	}
	if name := fmt.Sprintf("RSS after %d MiB", envInt("AGENTPTY_BENCH_FLOOD_MB", 1024)); benchRow(name) {
		growth := rssGrowth(t, int64(envInt("AGENTPTY_BENCH_FLOOD_MB", 1024))<<20)
		line(name, fmt.Sprintf("%+.1f MiB", float64(growth)/(1<<20)), "< 32 MiB", growth < 32<<20)
	}
	if benchRow("largest result, flood") {
		largest := floodResults(t, 64<<20)
		line("largest result, flood", fmt.Sprintf("%d B of 64 MiB read as it came", largest), "≤ 32 KiB", largest <= DefaultMaxOutputBytes)
	}
	if benchRow("capped read of backlog") {
		small, big := readCost(1<<20), readCost(32<<20)
		line("capped read of backlog", fmt.Sprintf("%v of 1 MiB, %v of 32 MiB", small.Round(time.Microsecond), big.Round(time.Microsecond)), "O(output)", big < 2*small)
	}
	if benchRow("transcript") {
		figs := transcriptReport(t, envInt("AGENTPTY_BENCH_TRANSCRIPT_ROUNDS", 3))
		until, lit := waitLatency(t, 50*runs)
		lines = append(lines, formatTranscript(figs, until, lit))
	}

	if benchRow("scale") {
		lines = append(lines, scaleReport(t)) // 1,000 and 4,000 idle sessions (bench_scale_test.go)
	}

	var out strings.Builder
	fmt.Fprintf(&out, "\n%-22s %-12s %-12s %-8s %-9s %s\n", "figure", "bare pty", "agentpty", "ratio", "goal", "")
	for _, r := range rows {
		fmt.Fprintf(&out, "%-22s %-12s %-12s %-8s %-9s %s\n", r[0], r[1], r[2], r[3], r[4], r[5])
	}
	for _, l := range lines {
		out.WriteString(l)
	}
	t.Log(out.String())
}

// containmentHere is the containment this host gives a session.
func containmentHere(tb testing.TB) string {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	res, err := m.Start(context.Background(), StartRequest{Command: "echo ok", WaitFor: "ok"})
	if err != nil {
		tb.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	return s.Containment()
}

// benchRow reports whether the report measures the figure named: all of
// them, unless AGENTPTY_BENCH_ONLY lists some, as comma-separated parts
// of their names ("round trip,start→exit").
func benchRow(name string) bool {
	only := os.Getenv("AGENTPTY_BENCH_ONLY")
	if only == "" {
		return true
	}
	for _, part := range strings.Split(only, ",") {
		if part = strings.TrimSpace(part); part != "" && strings.Contains(strings.ToLower(name), strings.ToLower(part)) {
			return true
		}
	}
	return false
}

// The paired measurements are testkit's, shared with sshpty's bench.
var (
	verdict = testkit.Verdict
	envInt  = testkit.EnvInt
	timeIt  = testkit.TimeIt
	pairs   = testkit.Pairs
	cpuTime = testkit.CPUTime
)
