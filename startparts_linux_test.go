package agentpty

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTerminal starts argv under the library's own terminal, with no
// cgroup, and waits for its exit.
func startTerminal(tb testing.TB, argv, env []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	f, err := startChild(cmd, DefaultCols, DefaultRows)
	if err != nil {
		tb.Fatal(err)
	}
	bareDrain(f, cmd)
}

// startContained is startTerminal in a cgroup of its own, which it
// removes after.
func startContained(tb testing.TB, m *Manager, argv, env []string) {
	cmd, f, group, err := launch(m, "bench", argv, env, "", DefaultCols, DefaultRows)
	if err != nil {
		tb.Fatal(err)
	}
	bareDrain(f, cmd)
	removeGroup(group)
}

// TestStartCosts prints what each part of a session's start to exit
// costs beyond the one before it, each pair measured side by side
// (make bench).
func TestStartCosts(t *testing.T) {
	if os.Getenv("AGENTPTY_BENCH") == "" {
		t.Skip("set AGENTPTY_BENCH=1 (make bench) to measure")
	}
	runs := 10 * envInt("AGENTPTY_BENCH_RUNS", 11)
	argv, env := append(append([]string(nil), benchShell...), "true"), childEnv(nil)
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	exitLibrary(t, m) // the manager's cgroup and watchdog, made once
	// Each part twice: by the clock, and by the CPU this process spent on
	// it, which the load of a shared machine disturbs far less.
	type part struct{ wall, cpu func() float64 }
	of := func(f func()) part {
		return part{
			func() float64 { return timeIt(f) * 1e3 },
			func() float64 { c := cpuTime(); f(); return float64(cpuTime()-c) / 1e6 },
		}
	}
	bare := of(func() { exitBare(t) })
	term := of(func() { startTerminal(t, argv, env) })
	contained := of(func() { startContained(t, m, argv, env) })
	session := of(func() { exitLibrary(t, m) })
	var out strings.Builder
	fmt.Fprintf(&out, "%-34s %-30s %s\n", "part", "wall (median of pairs)", "CPU of this process")
	for _, c := range []struct {
		name     string
		from, to part
	}{
		{"the library's terminal", bare, term},
		{"+ a cgroup", term, contained},
		{"+ the session (Start, Wait, Kill)", contained, session},
		{"all, against the floor", bare, session},
	} {
		w, u := pairs(runs, c.from.wall, c.to.wall), pairs(runs, c.from.cpu, c.to.cpu)
		fmt.Fprintf(&out, "%-34s %-30s %.3g → %.3g ms (%+.3g)\n", c.name,
			fmt.Sprintf("%.3g → %.3g ms (%.2f×)", w.Floor, w.Lib, w.Ratio), u.Floor, u.Lib, u.Lib-u.Floor)
	}
	t.Log("\n" + out.String())
}

// BenchmarkStartParts times the parts of a session's start to exit that
// the floor does not have, one by one: the session's cgroup (made,
// entered and removed), and Start, Wait and Kill of `true`.
func BenchmarkStartParts(b *testing.B) {
	b.Run("cgroup", func(b *testing.B) {
		m := NewManager(Options{Shell: benchShell})
		defer m.Close()
		h := m.containHost() // made once per manager, with its watchdog
		if h == nil {
			b.Skip("no cgroup on this host")
		}
		b.ResetTimer()
		before := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op") }()
		for i := 0; i < b.N; i++ {
			g, err := h.NewGroup("bench-" + strconv.Itoa(i))
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Started(); err != nil {
				b.Fatal(err)
			}
			removeGroup(g)
		}
	})
	b.Run("session", func(b *testing.B) {
		m := NewManager(Options{Shell: benchShell})
		defer m.Close()
		exitLibrary(b, m)
		ctx := context.Background()
		var start, wait, kill time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			res, err := m.Start(ctx, StartRequest{Command: "true", WaitMS: ms(0)})
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			s, _ := m.Session(res.ID)
			if _, err := s.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if _, err := m.Kill(ctx, res.ID); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			start, wait, kill = start+t1.Sub(t0), wait+t2.Sub(t1), kill+t3.Sub(t2)
		}
		for name, d := range map[string]time.Duration{"start": start, "wait": wait, "kill": kill} {
			b.ReportMetric(float64(d.Microseconds())/float64(b.N), name+"-µs/op")
		}
	})
	// The library's own terminal start of the same child, with no cgroup
	// and then with one: the child exits, is reaped, the terminal closed.
	argv, env := append(append([]string(nil), benchShell...), "true"), childEnv(nil)
	b.Run("terminal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			startTerminal(b, argv, env)
		}
	})
	b.Run("terminal+cgroup", func(b *testing.B) {
		m := NewManager(Options{Shell: benchShell})
		defer m.Close()
		var empty, remove time.Duration
		for i := 0; i < b.N; i++ {
			cmd, f, group, err := launch(m, "bench-"+strconv.Itoa(i), argv, env, "", DefaultCols, DefaultRows)
			if err != nil {
				b.Fatal(err)
			}
			bareDrain(f, cmd)
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = group.WaitEmpty(ctx)
			cancel()
			t1 := time.Now()
			_ = group.Remove()
			empty, remove = empty+t1.Sub(t0), remove+time.Since(t1)
		}
		b.ReportMetric(float64(empty.Microseconds())/float64(b.N), "empty-µs/op")
		b.ReportMetric(float64(remove.Microseconds())/float64(b.N), "remove-µs/op")
	})
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			exitBare(b)
		}
	})
}
