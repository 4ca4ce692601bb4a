package testkit

import "testing"

// Managed keeps its whole-process checks exactly while no counted test
// runs: a serial test runs alone, a parallel one is counted from its
// start to the end of its cleanups, and the count falls back after.
func TestAloneCountsParallelTests(t *testing.T) {
	if !Alone() {
		t.Fatal("a serial test is not alone")
	}
	t.Cleanup(func() {
		if !Alone() {
			t.Error("the parallel tests ended, yet Alone says others run")
		}
	})
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			Parallel(t)
			t.Cleanup(func() {
				if Alone() {
					t.Error("in its own cleanup a parallel test is not counted")
				}
			})
			if Alone() {
				t.Error("a parallel test is not counted")
			}
		})
	}
}
