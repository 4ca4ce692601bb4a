// Package limits measures the repository's Go files against its size
// limits: no function over MaxFuncLines, no file over MaxFileLines. Test
// files and generated files are measured for their size only; test
// functions, fixtures and generated tables are left alone. Its test walks
// every module of the repository, so `make test` keeps the limits true.
package limits

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// The limits: a longer function usually hides a second one, and a longer
// file more than one concern.
const (
	MaxFuncLines = 60
	MaxFileLines = 800
)

// Func is a function (or a function literal outside any function) with its
// length in lines, from `func` to the closing brace.
type Func struct {
	Key   string // "path:Name" or "path:Recv.Name", path from the root, slash-separated
	Lines int
}

// File is a Go file with its length in lines.
type File struct {
	Path  string // from the root, slash-separated
	Lines int
	Test  bool // a _test.go file
}

// Report is what Measure found, longest first.
type Report struct {
	Funcs []Func // every non-test, non-generated function
	Files []File // every non-generated file
}

// Measure parses every .go file under root, skipping what the go tool
// skips (directories starting with "." or "_", testdata) and vendor and
// node_modules trees, and generated files.
func Measure(root string) (Report, error) {
	var r Report
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && skipDir(name) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return r.add(fset, path, filepath.ToSlash(rel))
	})
	if err != nil {
		return Report{}, err
	}
	sort.SliceStable(r.Funcs, func(i, j int) bool { return r.Funcs[i].Lines > r.Funcs[j].Lines })
	sort.SliceStable(r.Files, func(i, j int) bool { return r.Files[i].Lines > r.Files[j].Lines })
	return r, nil
}

func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor" || name == "node_modules"
}

// add measures one file.
func (r *Report) add(fset *token.FileSet, path, rel string) error {
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if ast.IsGenerated(f) {
		return nil
	}
	test := strings.HasSuffix(rel, "_test.go")
	r.Files = append(r.Files, File{Path: rel, Lines: fset.File(f.Pos()).LineCount(), Test: test})
	if test {
		return nil
	}
	lines := func(n ast.Node) int {
		return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			r.Funcs = append(r.Funcs, Func{Key: rel + ":" + funcName(n), Lines: lines(n)})
			return false // its literals are inside its length
		case *ast.FuncLit:
			pos := fset.Position(n.Pos())
			r.Funcs = append(r.Funcs, Func{Key: fmt.Sprintf("%s:func@%d", rel, pos.Line), Lines: lines(n)})
			return false
		}
		return true
	})
	return nil
}

// funcName is Name for a function and Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}
