package agentpty

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated returns the bytes f allocates, and how long it took.
func allocated(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// TestWriteKeysBounded: two million keys (17 MB of JSON) were decoded,
// converted and typed out into a buffer before the approver refused the
// write: hundreds of megabytes. The control converts far fewer keys the
// old way and shows the cost the measure sees; a write to a real bash
// under an Approver and ApproveWrites is refused with ErrInvalid before
// the keys are read, through Call and Write, and so is too much input or
// a key name too long to be one.
func TestWriteKeysBounded(t *testing.T) {
	ctx := waitCtx(t)
	m := newManager(t, Options{Shell: []string{"bash", "-c"}, Approver: typedIntoBash, ApproveWrites: true})
	res := mustStart(t, m, StartRequest{Command: "exec bash --norc --noprofile -i", WaitUntil: WaitUntilInput})
	names := make([]string, 2_000_000)
	for i := range names {
		names[i] = "Up"
	}
	args, err := json.Marshal(map[string]any{"id": res.ID, "keys": names})
	if err != nil {
		t.Fatal(err)
	}
	const budget = 16 << 20
	// Control: a quarter of the keys, converted as a write did.
	cost, _ := allocated(func() {
		keys, err := parseKeys("control", names[:500_000])
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, k := range keys {
			out = appendKey(out, k, keyModes{})
		}
	})
	if cost < budget {
		t.Fatalf("control: converting 500000 keys allocated only %d bytes: the measure would not show the fault", cost)
	}
	var callErr error
	n, took := allocated(func() { _, callErr = m.Call(ctx, ToolWrite, args) })
	if !isErr(callErr, ErrInvalid) || !strings.Contains(callErr.Error(), "bytes of JSON, more than") {
		t.Errorf("Call with %d bytes of keys: %v; want ErrInvalid", len(args), callErr)
	}
	t.Logf("Call with %d bytes of JSON, 2000000 keys: %d bytes allocated in %v (control: 500000 keys converted: %d bytes)", len(args), n, took, cost)
	if n > budget {
		t.Errorf("Call with %d bytes of keys allocated %d bytes in %v; want under %d", len(args), n, took, budget)
	}
	var writeErr error
	n, took = allocated(func() { _, writeErr = m.Write(ctx, WriteRequest{ID: res.ID, Keys: names}) })
	if !isErr(writeErr, ErrInvalid) || !strings.Contains(writeErr.Error(), "2000000 keys, more than the 4096") {
		t.Errorf("Write of 2000000 keys: %v; want ErrInvalid", writeErr)
	}
	t.Logf("Write of 2000000 keys: %d bytes allocated in %v", n, took)
	if n > budget {
		t.Errorf("Write of 2000000 keys allocated %d bytes in %v; want under %d", n, took, budget)
	}
	for _, req := range []WriteRequest{
		{ID: res.ID, Keys: names[:maxWriteKeys+1]},
		{ID: res.ID, Input: strings.Repeat("a", maxWriteBytes+1)},
		{ID: res.ID, Keys: []string{"C-" + strings.Repeat("x", 1<<20)}},
	} {
		if _, err := m.Write(ctx, req); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), res.ID) {
			t.Errorf("Write of %d keys, %d bytes of input: %v; want ErrInvalid naming %s", len(req.Keys), len(req.Input), err, res.ID)
		}
	}
	// The session is untouched: a line still runs.
	if _, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "ls -d /", Submit: true, WaitUntil: WaitUntilInput, WaitMS: ms(10000)}); err != nil {
		t.Errorf("a line after the refusals: %v", err)
	}
}
