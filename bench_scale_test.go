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
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The scale row: many idle sessions on one Manager, as a farm of agents
// holds them, each `exec cat` started through Call.

// scaleCommand prints a line, so a start can wait for the program itself,
// and then waits for input as an idle agent's program does.
const scaleCommand = "echo ready; exec cat"

// scaleFigures is what one scale run measured.
type scaleFigures struct {
	n                  int
	startAll           time.Duration
	start              pairedMs // one start, the library's beside a bare creack/pty one
	idleCPU            float64  // of one core, with n sessions idle
	rss                int64
	tripAlone, tripAll float64 // median round trip, µs
	closing            time.Duration
}

type pairedMs struct{ bare, lib, ratio float64 }

// scaleSkip says why this machine cannot hold n sessions, or "" when it
// can; it first raises the soft descriptor limit to the hard one.
func scaleSkip(n int) string {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Sprintf("RLIMIT_NOFILE: %v", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	// A session holds its master, and the slave and the leader's /proc
	// files while its state is read; the bare starts and pidfds need a few.
	if need := uint64(4*n + 256); uint64(lim.Cur) < need { // fdsPerSession, which only Linux and macOS define
		return fmt.Sprintf("RLIMIT_NOFILE is %d, %d sessions need about %d", lim.Cur, n, need)
	}
	max, errMax := readInt("/proc/sys/kernel/pty/max")
	nr, errNr := readInt("/proc/sys/kernel/pty/nr")
	if errMax != nil || errNr != nil {
		return "cannot read /proc/sys/kernel/pty/max and nr"
	}
	if max-nr < n+8 {
		return fmt.Sprintf("/proc/sys/kernel/pty/max is %d with %d in use: no room for %d sessions", max, nr, n)
	}
	return ""
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(bytes.TrimSpace(b)))
}

// scaleCall starts command through Call and returns its id.
func scaleCall(tb testing.TB, m *Manager, command string) string {
	args, _ := json.Marshal(map[string]any{"command": command, "wait_for": "ready"})
	out, err := m.Call(context.Background(), ToolStart, args)
	if err != nil {
		tb.Fatalf("start %d: %v", len(m.List())+1, err)
	}
	var res StartResult
	if err := json.Unmarshal(out, &res); err != nil || !res.Matched {
		tb.Fatalf("start: %v %s", err, out)
	}
	return res.ID
}

// bareReady is the floor of one start: scaleCommand under a bare
// creack/pty terminal until it printed; then it is ended, untimed.
func bareReady(tb testing.TB) float64 {
	var f *os.File
	var cmd *exec.Cmd
	d := timeIt(func() {
		var seen []byte
		f, cmd = bareStart(tb, append(benchShell, scaleCommand)...)
		if err := bareUntil(f, []byte("ready"), make([]byte, 512), &seen); err != nil {
			tb.Fatal(err)
		}
	})
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	bareDrain(f, cmd)
	return d
}

// callTrips is the median of k round trips through Call to the cat id.
func callTrips(tb testing.TB, m *Manager, id string, k int) float64 {
	ds := make([]float64, k)
	for i := range ds {
		tripCount++
		n := strconv.Itoa(tripCount)
		args := `{"id":"` + id + `","input":"ping` + n + `","submit":true,"wait_for":"ping` + n + `"}`
		ds[i] = timeIt(func() {
			out, err := m.Call(context.Background(), ToolWrite, json.RawMessage(args))
			if err != nil || !bytes.Contains(out, []byte(`"matched":true`)) {
				tb.Fatalf("round trip: %v %s", err, out)
			}
		}) * 1e6
	}
	sort.Float64s(ds)
	return ds[k/2]
}

// selfCPU is this process's user and system time: the utime and stime
// of /proc/self/stat, read through getrusage, which counts them in
// microseconds rather than clock ticks.
var selfCPU = cpuTime

// scaleRun measures n idle sessions on one Manager; every 1 in 20 starts
// is paired with a bare start of the same command.
func scaleRun(tb testing.TB, n int) scaleFigures {
	fig := scaleFigures{n: n}
	m := NewManager(Options{Shell: benchShell, MaxSessions: n + 1, MaxCells: (n + 1) * DefaultCols * DefaultRows})
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	one := scaleCall(tb, m, scaleCommand)
	fig.tripAlone = callTrips(tb, m, one, 21)
	var bare, lib, ratio []float64
	for i := 1; i < n; i++ {
		d := timeIt(func() { scaleCall(tb, m, scaleCommand) })
		fig.startAll += time.Duration(d * float64(time.Second))
		if i%20 == 0 {
			b := bareReady(tb)
			bare, lib, ratio = append(bare, b*1e3), append(lib, d*1e3), append(ratio, d/b)
		}
	}
	fig.start = pairedMs{median(bare), median(lib), median(ratio)}
	cpu0, wall0 := selfCPU(), time.Now()
	time.Sleep(3 * time.Second) // a measurement window, not synchronisation
	fig.idleCPU = float64(selfCPU()-cpu0) / float64(time.Since(wall0))
	fig.rss = rss()
	scaleProfiles(tb, n)
	fig.tripAll = callTrips(tb, m, one, 21)
	stop := closeProfile(tb, n)
	t0 := time.Now()
	closed = true
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}
	fig.closing = time.Since(t0)
	stop()
	return fig
}

// scaleProfiles writes, where AGENTPTY_BENCH_PROFILE names a directory,
// the heap and goroutine profiles and /proc/self/status of n idle
// sessions: where the memory and the threads go.
func scaleProfiles(tb testing.TB, n int) {
	dir := os.Getenv("AGENTPTY_BENCH_PROFILE")
	if dir == "" {
		return
	}
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n)))
		if err != nil {
			tb.Fatal(err)
		}
		_ = pprof.Lookup(name).WriteTo(f, 0)
		f.Close()
	}
	status, _ := os.ReadFile("/proc/self/status")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status = fmt.Appendf(status, "HeapInuse %d\nStackInuse %d\nStackSys %d\nMSpanInuse %d\nSys %d\nNumGoroutine %d\n",
		ms.HeapInuse, ms.StackInuse, ms.StackSys, ms.MSpanInuse, ms.Sys, runtime.NumGoroutine())
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("status-%d.txt", n)), status, 0o644)
}

// closeProfile starts a CPU profile of Close where AGENTPTY_BENCH_PROFILE
// names a directory (go test's -cpuprofile would hold the starts too); it
// returns what stops it.
func closeProfile(tb testing.TB, n int) func() {
	dir := os.Getenv("AGENTPTY_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-close-%d.pprof", n)))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		tb.Log(err) // a profile of the whole run is under way
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// scaleLine formats one run with the goals' verdicts.
func scaleLine(f scaleFigures) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scale %d sessions (load %s)\n", f.n, loadAvg())
	fmt.Fprintf(&b, "  start, all            %v (%.2f ms each)\n", f.startAll.Round(time.Millisecond), float64(f.startAll)/float64(f.n-1)/1e6)
	fmt.Fprintf(&b, "  start to output       bare %.3g ms, agentpty %.3g ms, %.2f×  ≤ 1.5×  %s\n", f.start.bare, f.start.lib, f.start.ratio, verdict(f.start.ratio <= 1.5))
	fmt.Fprintf(&b, "  idle CPU              %.3f%% of a core  < 1%%  %s\n", f.idleCPU*100, verdict(f.idleCPU < 0.01))
	fmt.Fprintf(&b, "  host RSS              %.0f MiB  %s\n", float64(f.rss)/(1<<20), rssGoal(f))
	fmt.Fprintf(&b, "  round trip            alone %.0f µs, among them %.0f µs, %.2f×  ≤ 1.5×  %s\n", f.tripAlone, f.tripAll, f.tripAll/f.tripAlone, verdict(f.tripAll <= 1.5*f.tripAlone))
	fmt.Fprintf(&b, "  Close                 %v  %s\n", f.closing.Round(time.Millisecond), closeGoal(f))
	return b.String()
}

func rssGoal(f scaleFigures) string {
	if f.n < 4000 {
		return ""
	}
	return "< 200 MB  " + verdict(f.rss < 200e6)
}

func closeGoal(f scaleFigures) string {
	if f.n < 4000 {
		return ""
	}
	return "< 2 s  " + verdict(f.closing < 2*time.Second)
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// scaleReport is the scale row of TestBenchReport, at each of the sizes
// AGENTPTY_BENCH_SCALE lists (default 1000,4000).
func scaleReport(tb testing.TB) string {
	sizes := os.Getenv("AGENTPTY_BENCH_SCALE")
	if sizes == "" {
		sizes = "1000,4000"
	}
	var out strings.Builder
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 21 {
			continue
		}
		if why := scaleSkip(n); why != "" {
			fmt.Fprintf(&out, "scale %d sessions      skipped: %s\n", n, why)
			continue
		}
		line := scaleLine(scaleRun(tb, n))
		tb.Log("\n" + line) // as each size ends: a 4,000 run takes minutes
		out.WriteString(line)
	}
	return out.String()
}

// TestBenchScale prints the scale row alone (AGENTPTY_BENCH=1).
func TestBenchScale(t *testing.T) {
	if os.Getenv("AGENTPTY_BENCH") == "" {
		t.Skip("set AGENTPTY_BENCH=1 (make bench) to measure")
	}
	scaleReport(t)
}
