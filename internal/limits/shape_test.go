package limits

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Session coordinates parts that keep their own state: it holds at most
// 30 fields and 2 mutexes of its own.
func TestSessionShape(t *testing.T) {
	sh, err := StructShape(root(t), "Session")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Session: %d fields (+%d embedded), %d mutexes, %d atomics, %d channels, %d methods over %d files",
		sh.Fields, sh.Embedded, sh.Mutexes, sh.Atomics, sh.Channels, sh.Methods, sh.Files)
	if sh.Fields > 30 || sh.Mutexes > 2 {
		t.Errorf("Session holds %d fields and %d mutexes; at most 30 and 2: give a capability a part of its own", sh.Fields, sh.Mutexes)
	}
}

// The counter itself: fields named together count one each, an embedded
// struct's fields count apart, and its locks, atomics and channels with
// the type's own; a method defined for two systems counts once, test
// files not at all.
func TestStructShape(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"a.go":        "package a\n\nimport (\n\t\"sync\"\n\t\"sync/atomic\"\n)\n\ntype T struct {\n\tmu, other sync.Mutex\n\tn atomic.Int64\n\tp atomic.Pointer[int]\n\tc chan int\n\tinner\n}\n\ntype inner struct {\n\tmu sync.RWMutex\n\tdone chan struct{}\n}\n\nfunc (t *T) A() {}\n",
		"b_linux.go":  "package a\n\nfunc (t *T) b() {}\n",
		"b_darwin.go": "package a\n\nfunc (*T) b() {}\n",
		"a_test.go":   "package a\n\nfunc (t *T) c() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := StructShape(dir, "T")
	if err != nil {
		t.Fatal(err)
	}
	want := Shape{Fields: 6, Embedded: 2, Mutexes: 3, Atomics: 2, Channels: 2, Methods: 2, Files: 3}
	if sh != want {
		t.Errorf("StructShape = %+v, want %+v", sh, want)
	}
	if _, err := StructShape(dir, "Missing"); err == nil {
		t.Error("StructShape of a type that is not there: no error")
	}
}

// Bounds on where the root package's behaviour lives (see Behaviour).
const (
	maxSessionMethods = 40 // Session: 15 exported methods, and the coordination of its parts
	maxTypeMethods    = 40 // any other type
	// The settler is a pure renderer of text (no lock, no I/O), spread
	// over the settle_*.go files by concern: its methods are one
	// terminal's handling of sequences, one small handler each, as a
	// parser's dispatch reads best. It is bounded apart, at what it holds
	// now, so that it does not grow unnoticed.
	maxSettlerMethods = 110
)

// Session coordinates parts that own their state and their behaviour: it
// keeps at most maxSessionMethods methods, no code outside a part's own
// file reaches into the part's fields, and no other type grows past
// maxTypeMethods methods (but the settler, bounded apart).
func TestBehaviourShape(t *testing.T) {
	b, err := MeasureBehaviour(root(t), "Session")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range b.Parts {
		t.Logf("part %s (%s, %s): %d methods, %d leaf fields, reached %d times from %d other files",
			p.Field, p.Type, p.File, p.Methods, p.Leaves, p.Reached, p.ReachFiles)
	}
	var files []string
	for f, n := range b.FileMethods {
		files = append(files, fmt.Sprintf("%s %d", f, n))
	}
	sort.Strings(files)
	t.Logf("methods per file: %s", strings.Join(files, ", "))
	t.Logf("Session: %d methods over %d files, %d leaf fields; part fields reached from other files %d times",
		b.Methods["Session"], b.TypeFiles["Session"], b.Leaves, b.Reached)
	if n := b.Methods["Session"]; n > maxSessionMethods {
		t.Errorf("Session has %d methods; at most %d: move what is a part's behaviour onto the part", n, maxSessionMethods)
	}
	if b.Reached > 0 {
		t.Errorf("part fields are reached from other files %d times; none may be: give the part a method that says what it is for", b.Reached)
	}
	for typ, n := range b.Methods {
		limit := maxTypeMethods
		if typ == "settler" {
			limit = maxSettlerMethods
		}
		if typ != "Session" && n > limit {
			t.Errorf("%s has %d methods over %d files; at most %d", typ, n, b.TypeFiles[typ], limit)
		}
	}
}

// The measure itself: methods count once per name and type (test files
// not at all), per type and per file; a part is an unexported struct type
// held by the coordinator; a reach is x.part.field outside the part's
// file, and the part's own file and other selectors do not count; leaf
// fields are counted through the parts.
func TestMeasureBehaviour(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"c.go":        "package a\n\nimport \"sync\"\n\ntype C struct {\n\tmu sync.Mutex\n\tp  part\n\tq  *part\n\tr  Result\n\tn, m int\n}\n\ntype Result struct{ A, B int }\n\nfunc (c *C) A() { c.p.x = 1; c.q.y = 2; c.p.f(); c.r.A = 1 }\n",
		"part.go":     "package a\n\ntype part struct {\n\tx, y int\n\tin inner\n}\n\ntype inner struct{ z int }\n\nfunc (p *part) f() { p.x = 0 }\nfunc (c *C) b()    { c.p.y = 3 }\n",
		"b_linux.go":  "package a\n\nfunc (c *C) d() { c.p.x++ }\n",
		"b_darwin.go": "package a\n\nfunc (c *C) d() { c.p.x++ }\n",
		"a_test.go":   "package a\n\nfunc (c *C) e() { c.p.x++ }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := MeasureBehaviour(dir, "C")
	if err != nil {
		t.Fatal(err)
	}
	if b.Methods["C"] != 3 || b.TypeFiles["C"] != 4 || b.Methods["part"] != 1 {
		t.Errorf("methods: C %d over %d files, part %d; want 3 over 4, and 1", b.Methods["C"], b.TypeFiles["C"], b.Methods["part"])
	}
	if b.FileMethods["c.go"] != 1 || b.FileMethods["part.go"] != 2 || b.FileMethods["b_linux.go"] != 1 {
		t.Errorf("methods per file: %v", b.FileMethods)
	}
	want := []Part{
		{Field: "p", Type: "part", File: "part.go", Methods: 1, Reached: 3, ReachFiles: 3, Leaves: 3},
		{Field: "q", Type: "part", File: "part.go", Methods: 1, Reached: 1, ReachFiles: 1, Leaves: 3},
	}
	if !reflect.DeepEqual(b.Parts, want) {
		t.Errorf("parts = %+v, want %+v", b.Parts, want)
	}
	// mu, r (an exported type: one leaf per field, A and B), n and m, and the parts' 3 each.
	if b.Reached != 4 || b.Leaves != 1+2+2+6 {
		t.Errorf("reached %d, leaves %d; want 4 and 11", b.Reached, b.Leaves)
	}
	if _, err := MeasureBehaviour(dir, "Missing"); err == nil {
		t.Error("MeasureBehaviour of a type that is not there: no error")
	}
}
