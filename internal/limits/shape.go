package limits

import (
	"fmt"
	"go/ast"
	"strings"
)

// Shape is what a struct type holds and how far its methods spread.
type Shape struct {
	Fields   int // named fields and embedded types
	Embedded int // fields of the embedded structs of the same package
	Mutexes  int // sync.Mutex and sync.RWMutex fields, the embedded structs' too
	Atomics  int // sync/atomic fields, the embedded structs' too
	Channels int // channel fields, the embedded structs' too
	Methods  int // methods on the type in non-test files, one per name (a method of each OS counts once)
	Files    int // non-test files holding a method on it, of every OS
}

// pkgDecls is what StructShape reads of a package: its struct types, and
// the files of each method on the type it measures.
type pkgDecls struct {
	structs map[string]*ast.StructType
	methods map[string]bool // "Type.Name"
	files   map[string]bool
}

// StructShape measures the struct type name of the package in dir.
func StructShape(dir, name string) (Shape, error) {
	d, err := readDecls(dir, name)
	if err != nil {
		return Shape{}, err
	}
	st, ok := d.structs[name]
	if !ok {
		return Shape{}, fmt.Errorf("no struct type %s in %s", name, dir)
	}
	sh := Shape{Methods: len(d.methods), Files: len(d.files)}
	sh.count(st, true)
	for _, f := range st.Fields.List {
		if id, ok := f.Type.(*ast.Ident); ok && len(f.Names) == 0 && d.structs[id.Name] != nil {
			sh.count(d.structs[id.Name], false)
		}
	}
	return sh, nil
}

// readDecls reads the struct types of the package in dir, and the
// methods of name with their files.
func readDecls(dir, name string) (pkgDecls, error) {
	d := pkgDecls{methods: map[string]bool{}, files: map[string]bool{}}
	p, err := parsePackage(dir)
	if err != nil {
		return d, err
	}
	d.structs = p.structs
	for file, f := range p.files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && strings.HasPrefix(funcName(fd), name+".") {
				d.methods[funcName(fd)] = true
				d.files[file] = true
			}
		}
	}
	return d, nil
}

// count adds the fields of st: its own, or an embedded struct's.
func (sh *Shape) count(st *ast.StructType, own bool) {
	for _, f := range st.Fields.List {
		n := max(len(f.Names), 1)
		if own {
			sh.Fields += n
		} else {
			sh.Embedded += n
		}
		t := f.Type
		if x, ok := t.(*ast.IndexExpr); ok { // atomic.Pointer[T]
			t = x.X
		}
		switch t := t.(type) {
		case *ast.ChanType:
			sh.Channels += n
		case *ast.SelectorExpr:
			pkg, _ := t.X.(*ast.Ident)
			switch {
			case pkg != nil && pkg.Name == "sync" && (t.Sel.Name == "Mutex" || t.Sel.Name == "RWMutex"):
				sh.Mutexes += n
			case pkg != nil && pkg.Name == "atomic":
				sh.Atomics += n
			}
		}
	}
}
