package limits

import (
	"os"
	"path/filepath"
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
