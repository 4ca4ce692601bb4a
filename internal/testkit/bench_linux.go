package testkit

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchPart is one operation BenchParts times.
type BenchPart struct {
	Name string
	F    func()
}

// BenchParts times each part as a sub-benchmark on a locked thread,
// reporting the thread's CPU time per operation beside the wall time.
func BenchParts(b *testing.B, parts []BenchPart) {
	for _, p := range parts {
		b.Run(p.Name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := ThreadCPU()
			for i := 0; i < b.N; i++ {
				p.F()
			}
			b.ReportMetric(float64(ThreadCPU()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// ThreadCPU is the CPU time this thread has used: on a loaded machine it
// counts what an operation costs, not how long it waited to run.
func ThreadCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
