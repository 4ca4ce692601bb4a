package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// eventLog records events as a hook receives them.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	news   chan struct{} // 1-buffered: something was added
}

func newEventLog() *eventLog { return &eventLog{news: make(chan struct{}, 1)} }

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	select {
	case l.news <- struct{}{}:
	default:
	}
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// await waits until some event satisfies ok and returns it.
func (l *eventLog) await(t *testing.T, what string, ok func(Event) bool) Event {
	t.Helper()
	ctx := waitCtx(t)
	for {
		for _, e := range l.snapshot() {
			if ok(e) {
				return e
			}
		}
		select {
		case <-l.news:
		case <-ctx.Done():
			t.Fatalf("no event %s came; events: %v", what, l.snapshot())
		}
	}
}

func outputWith(id, text string) func(Event) bool {
	return func(e Event) bool {
		return e.Kind == EventOutput && e.ID == id && slices.ContainsFunc(e.Lines, func(l string) bool { return strings.Contains(l, text) })
	}
}

// Output events carry the newest lines, come at most every outputEvery,
// between "created" and "killed", and the last output is always reported.
func TestOutputEvents(t *testing.T) {
	log := newEventLog()
	m := newManager(t, Options{OnEvent: log.add})
	res := mustStart(t, m, StartRequest{Command: "echo ready; for i in $(seq 1 40); do echo line$i; sleep 0.05; done; echo done; exec cat", WaitFor: "ready"})
	log.await(t, "with done", outputWith(res.ID, "done"))
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	log.await(t, "killed", func(e Event) bool { return e.Kind == EventKilled })

	var outs []Event
	var kinds []EventKind
	for _, e := range log.snapshot() {
		kinds = append(kinds, e.Kind)
		if e.Kind == EventOutput {
			outs = append(outs, e)
		}
	}
	if kinds[0] != EventCreated || kinds[len(kinds)-1] != EventKilled {
		t.Errorf("events %v do not run from created to killed", kinds)
	}
	// Two seconds of output: several events, none closer than the interval.
	if len(outs) < 3 {
		t.Errorf("%d output events over two seconds of output, want several", len(outs))
	}
	for i := 1; i < len(outs); i++ {
		if gap := outs[i].Time.Sub(outs[i-1].Time); gap < outputEvery-10*time.Millisecond {
			t.Errorf("output events %d and %d came %v apart, want at least %v", i-1, i, gap, outputEvery)
		}
	}
	last := outs[len(outs)-1]
	if len(last.Lines) == 0 || len(last.Lines) > outputLines || last.PID <= 0 || last.Command == "" {
		t.Errorf("last output event %+v", last)
	}
}

// A hook that blocks stalls neither the program nor the caller, and output
// events waiting for it are merged into the newest.
func TestSlowEventHookStallsNothing(t *testing.T) {
	release := make(chan struct{})
	log := newEventLog()
	m := newManager(t, Options{OnEvent: func(e Event) {
		<-release
		log.add(e)
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	for i := range 8 {
		// Each round trip waits for its echo while the hook is stuck on the
		// first event; more than outputEvery apart, so each arms an event.
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "round" + strconv.Itoa(i), Submit: true, WaitFor: "round" + strconv.Itoa(i), WaitMS: ms(5000)})
		if w.Exited {
			t.Fatalf("cat exited: %+v", w)
		}
		time.Sleep(outputEvery) // spreads the output over several events' worth
	}
	close(release)
	log.await(t, "with round7", outputWith(res.ID, "round7"))
	outs := 0
	for _, e := range log.snapshot() {
		if e.Kind == EventOutput {
			outs++
		}
	}
	if outs > 2 {
		t.Errorf("%d output events queued behind a stuck hook, want them merged into at most 2", outs)
	}
}

// A hook that panics crashes nothing: calls work and later events come.
func TestPanickingEventHook(t *testing.T) {
	testkit.Parallel(t)
	var mu sync.Mutex
	calls := 0
	m := newManager(t, Options{OnEvent: func(e Event) {
		mu.Lock()
		calls++
		mu.Unlock()
		panic("hook fails")
	}})
	ctx := WithEvents(context.Background(), func(Event) { panic("watcher fails") })
	res, err := m.Start(ctx, StartRequest{Command: readyCat, WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("start with panicking hooks: %+v %v", res, err)
	}
	w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "still here", Submit: true, WaitFor: "still here"})
	if err != nil || !w.Matched {
		t.Fatalf("write with panicking hooks: %+v %v", w, err)
	}
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // waits for the deliveries
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 3 { // created, output..., killed
		t.Errorf("the hook was called %d times; events stopped after a panic", calls)
	}
}

// WithEvents reports the output of the session a call waits on, during
// that call only, with no OnEvent set.
func TestWithEventsDuringACall(t *testing.T) {
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	log := newEventLog()
	ctx := WithEvents(context.Background(), log.add)
	// The wait outlasts several events' worth of time.
	done := make(chan error, 1)
	go func() {
		_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "first", Submit: true, WaitFor: "never printed", WaitMS: ms(3000)})
		done <- err
	}()
	e := log.await(t, "with first", outputWith(res.ID, "first"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e.ID != res.ID {
		t.Errorf("event for %s, want %s", e.ID, res.ID)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "after", Submit: true, WaitFor: "after"})
	// Another wait with its own watcher sees "after"; the first never does.
	log2 := newEventLog()
	if _, err := m.Write(WithEvents(context.Background(), log2.add), WriteRequest{ID: res.ID, Input: "again", Submit: true, WaitFor: "never printed", WaitMS: ms(1000)}); err != nil {
		t.Fatal(err)
	}
	log2.await(t, "with again", outputWith(res.ID, "again"))
	for _, e := range log.snapshot() {
		if outputWith(res.ID, "after")(e) {
			t.Errorf("the first call's watcher got %+v after the call returned", e)
		}
	}
	// A pty-run waits its own way (for the prompt's mark), and its
	// function hears the output all the same.
	sh := mustStart(t, m, StartRequest{Shell: true})
	log3 := newEventLog()
	if _, err := m.Run(WithEvents(context.Background(), log3.add), RunRequest{ID: sh.ID, Command: "echo ran-with-events; sleep 0.6"}); err != nil {
		t.Fatal(err)
	}
	log3.await(t, "during a run", outputWith(sh.ID, "ran-with-events"))
}

// A start's WithEvents function hears what the program printed before the
// start's wait began, though it prints nothing after: the child runs, and
// may print, before the start's wait adds the function. Here the wait
// begins after "ready" was rendered, as it does when the start's goroutine
// is late.
func TestStartHearsOutputBeforeItsWait(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; exec sleep 300", WaitFor: "ready"})
	log, _ := watchAs(t, m, res.ID, ToolStart)
	log.await(t, "with ready", outputWith(res.ID, "ready"))
}

// watchAs begins a call of tool on session id with a WithEvents function,
// as the tool's call does before its wait, and returns what the function
// hears and the session. The call ends when the test does.
func watchAs(t *testing.T, m *Manager, id, tool string) (*eventLog, *Session) {
	t.Helper()
	s, err := m.lookup(tool, id)
	if err != nil {
		t.Fatal(err)
	}
	log := newEventLog()
	leave, err := s.turn(WithEvents(context.Background(), log.add), tool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leave)
	return log, s
}

// A write's WithEvents function hears only output printed during the
// write, not the lines an output event still due from before carries: a
// silent wait's progress says only how long it has waited.
func TestWriteHearsOnlyOutputDuringIt(t *testing.T) {
	testkit.Parallel(t)
	log := newEventLog()
	m := newManager(t, Options{OnEvent: log.add})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	seen, s := watchAs(t, m, res.ID, ToolWrite)
	began := time.Now()
	// An output event sent now, as one the start's output left due is,
	// carries only "ready".
	if s.ev.due(true) {
		s.ev.schedule(s.emitOutput)
	}
	log.await(t, "sent during the write", func(e Event) bool { return e.Kind == EventOutput && !e.Time.Before(began) })
	// The control: output printed during the write reaches its function.
	// Events come in order: once it has come, so has anything queued for
	// the function with the event above.
	if _, err := s.typeInput(context.Background(), []byte("during\n"), time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	seen.await(t, "with during", outputWith(res.ID, "during"))
	for _, e := range seen.snapshot() {
		if !outputWith(res.ID, "during")(e) {
			t.Errorf("the write's function heard output printed before the write: %+v", e)
		}
	}
}

// A start whose context ends before it returns kills what it started and
// frees its slot: no one else could learn its id.
func TestCancelledStartKillsItsSession(t *testing.T) {
	testkit.Parallel(t)
	log := newEventLog()
	m := newManager(t, Options{MaxSessions: 1, OnEvent: log.add})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := newEventLog()
	ctx = WithEvents(ctx, seen.add)
	done := make(chan error, 1)
	go func() {
		_, err := m.Start(ctx, StartRequest{Command: "echo ready $$; exec sleep 300", WaitFor: "never printed", WaitMS: ms(30000)})
		done <- err
	}()
	e := seen.await(t, "with ready", func(e Event) bool {
		return e.Kind == EventOutput && strings.Contains(strings.Join(e.Lines, "\n"), "ready ")
	})
	_, after, _ := strings.Cut(strings.Join(e.Lines, "\n"), "ready ")
	pid, err := strconv.Atoi(strings.Fields(after)[0])
	if err != nil {
		t.Fatalf("no pid in %q", e.Lines)
	}
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), e.ID) {
		t.Fatalf("cancelled start returned %v, want context.Canceled naming %s", err, e.ID)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("sleep (pid %d) outlived its cancelled start", pid)
	}
	if l := m.List(); len(l) != 0 {
		t.Fatalf("the cancelled session still holds a slot: %v", l)
	}
	log.await(t, "killed", func(e Event) bool { return e.Kind == EventKilled })
	// The one slot is free again.
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	if res.ID == e.ID {
		t.Errorf("id %s reused", res.ID)
	}
}

// Call's JSON reads as the text does: no HTML escaping of < > &.
func TestCallDoesNotEscapeHTML(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	out, err := m.Call(context.Background(), ToolStart, []byte(`{"command":"echo ready; printf '>>> a<b & c\\n'; exec cat","wait_for":"c\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), ">>> a<b & c") || strings.Contains(string(out), `\u003e`) {
		t.Errorf("result %s escapes what the model should read as >>> a<b & c", out)
	}
}

// Every tool has a title and annotations, and its results validate
// against its OutputSchema.
func TestToolMetadataAndOutputSchemas(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	tools := map[string]Tool{}
	for _, tool := range m.Tools() {
		tools[tool.Name] = tool
		if tool.Title == "" || len(tool.OutputSchema) == 0 {
			t.Errorf("%s: title %q, output schema %s", tool.Name, tool.Title, tool.OutputSchema)
		}
		if tool.Annotations.ReadOnlyHint && tool.Annotations.DestructiveHint {
			t.Errorf("%s: read-only and destructive at once", tool.Name)
		}
	}
	if !tools[ToolStart].Annotations.DestructiveHint || !tools[ToolStart].Annotations.OpenWorldHint || !tools[ToolKill].Annotations.IdempotentHint {
		t.Errorf("annotations %+v", tools)
	}
	ctx := context.Background()
	call := func(tool, args string) []byte {
		t.Helper()
		out, err := m.Call(ctx, tool, []byte(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		if err := validate(tools[tool].OutputSchema, out); err != nil {
			t.Errorf("%s result %s does not validate against its output schema: %v", tool, out, err)
		}
		return out
	}
	out := call(ToolStart, `{"command":"echo ready; exec cat","wait_for":"ready"}`)
	id := `"` + jsonField(t, out, "id") + `"`
	call(ToolWrite, `{"id":`+id+`,"input":"hi","submit":true,"wait_for":"hi"}`)
	call(ToolWrite, `{"id":`+id+`,"input":"\\x04","wait_ms":2000}`)
	call(ToolKill, `{"id":`+id+`}`)
	// The validator fails where it should.
	if err := validate(tools[ToolKill].OutputSchema, []byte(`{"id":5,"output":""}`)); err == nil {
		t.Error("validate accepts an id that is a number")
	}
	if err := validate(tools[ToolWrite].OutputSchema, []byte(`{"id":"pty-1"}`)); err == nil {
		t.Error("validate accepts a result without output")
	}
}

func jsonField(t *testing.T, raw []byte, name string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	s, _ := v[name].(string)
	return s
}

// validate checks v against the structural part of a JSON Schema: type,
// properties, required and items.
func validate(schema, v []byte) error {
	var s map[string]any
	var x any
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("schema: %v", err)
	}
	if err := json.Unmarshal(v, &x); err != nil {
		return err
	}
	return validateValue(s, x, "$")
}

func validateValue(s map[string]any, x any, at string) error {
	var types []any
	switch t := s["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t any) bool { return jsonType(x, t.(string)) }) {
		return fmt.Errorf("%s: %v is not of type %v", at, x, types)
	}
	switch x := x.(type) {
	case map[string]any:
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := x[r.(string)]; !ok {
				return fmt.Errorf("%s: %s is required", at, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, pv := range x {
			if ps, ok := props[k].(map[string]any); ok {
				if err := validateValue(ps, pv, at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validateValue(is, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func jsonType(x any, t string) bool {
	switch x := x.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || t == "integer" && x == float64(int64(x))
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// Options.Cols and Rows size a start that names no size, and the schemas
// say so.
func TestOptionsDefaultSize(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{Cols: 80, Rows: 24})
	res := mustStart(t, m, StartRequest{Command: "echo size $(stty size)", WaitFor: "size 2"})
	if !strings.Contains(res.Output, "size 24 80") {
		t.Errorf("stty size says %q, want 24 80", res.Output)
	}
	for _, tool := range m.Tools() {
		if tool.Name == ToolStart && (!strings.Contains(string(tool.InputSchema), "columns (default 80)") || !strings.Contains(string(tool.InputSchema), "rows (default 24)")) {
			t.Errorf("pty-start's schema does not say the default size: %s", tool.InputSchema)
		}
	}
}

func TestMillis(t *testing.T) {
	testkit.Parallel(t)
	a, b := Millis(700), Millis(700)
	if *a != 700 || a == b {
		t.Errorf("Millis(700) = %v, %v", a, b)
	}
}
