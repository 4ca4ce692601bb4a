package limits

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// Behaviour is where a package's behaviour lives: the methods of each type
// and of each file, and how a coordinating type (Session) holds its parts.
// A part is a field of the coordinator whose type is an unexported struct
// type of the package; a part's field is reached from another file when a
// selector x.part.field, field one of the part type's own, stands outside
// the file that declares the part's type. Counting reaches, not fields,
// keeps a regrouping that moves fields into parts but leaves the code that
// touches them where it was from passing.
type Behaviour struct {
	Methods     map[string]int // methods per type, one per name (a method of each OS counts once)
	TypeFiles   map[string]int // non-test files holding a method of each type
	FileMethods map[string]int // methods declared in each non-test file, one per type and name
	Parts       []Part         // the coordinator's parts, by field name
	Reached     int            // part fields reached from other files, all parts together
	Leaves      int            // leaf fields the coordinator holds, its own and through its parts
}

// Part is one part of the coordinator.
type Part struct {
	Field, Type, File string // the coordinator's field, its type, and the file declaring the type
	Methods           int    // methods of the type
	Reached           int    // selectors reaching the type's fields from other files
	ReachFiles        int    // ... in this many files
	Leaves            int    // leaf fields held through the part
}

// pkgSyntax is a package's non-test files, parsed.
type pkgSyntax struct {
	files   map[string]*ast.File // by base name
	structs map[string]*ast.StructType
	declIn  map[string]string // type name -> file declaring it
}

// MeasureBehaviour measures the package in dir whose coordinator is the
// struct type coord.
func MeasureBehaviour(dir, coord string) (Behaviour, error) {
	p, err := parsePackage(dir)
	if err != nil {
		return Behaviour{}, err
	}
	b := Behaviour{Methods: map[string]int{}, TypeFiles: map[string]int{}, FileMethods: map[string]int{}}
	p.countMethods(&b)
	st := p.structs[coord]
	if st == nil {
		return b, &missingType{coord, dir}
	}
	for _, f := range st.Fields.List {
		t := baseType(f.Type)
		names := fieldNames(f, t)
		if !p.isPart(t, coord) {
			b.Leaves += len(names) * p.leaves(f.Type, map[string]bool{coord: true})
			continue
		}
		for _, n := range names {
			part := Part{Field: n, Type: t, File: p.declIn[t], Methods: b.Methods[t]}
			part.Leaves = p.leaves(f.Type, map[string]bool{coord: true})
			part.Reached, part.ReachFiles = p.reaches(n, t)
			b.Leaves += part.Leaves
			b.Reached += part.Reached
			b.Parts = append(b.Parts, part)
		}
	}
	sort.Slice(b.Parts, func(i, j int) bool { return b.Parts[i].Field < b.Parts[j].Field })
	return b, nil
}

type missingType struct{ name, dir string }

func (e *missingType) Error() string { return "no struct type " + e.name + " in " + e.dir }

// parsePackage parses the non-test Go files of dir.
func parsePackage(dir string) (*pkgSyntax, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &pkgSyntax{files: map[string]*ast.File{}, structs: map[string]*ast.StructType{}, declIn: map[string]string{}}
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(path)
		p.files[name] = f
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						p.structs[ts.Name.Name] = st
						p.declIn[ts.Name.Name] = name
					}
				}
			}
		}
	}
	return p, nil
}

// countMethods counts each type's methods once per name, and the files
// holding them.
func (p *pkgSyntax) countMethods(b *Behaviour) {
	seen := map[string]bool{}
	files := map[string]map[string]bool{}
	perFile := map[string]map[string]bool{}
	for name, f := range p.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			t := baseType(fd.Recv.List[0].Type)
			key := t + "." + fd.Name.Name
			if !seen[key] {
				seen[key] = true
				b.Methods[t]++
			}
			if files[t] == nil {
				files[t] = map[string]bool{}
			}
			files[t][name] = true
			if perFile[name] == nil {
				perFile[name] = map[string]bool{}
			}
			perFile[name][key] = true
		}
	}
	for t, fs := range files {
		b.TypeFiles[t] = len(fs)
	}
	for name, ms := range perFile {
		b.FileMethods[name] = len(ms)
	}
}

// isPart reports whether a field of type t is a part of coord: an
// unexported struct type of the package (exported ones, such as results
// and the Manager, are what the package offers, not parts).
func (p *pkgSyntax) isPart(t, coord string) bool {
	return t != coord && p.structs[t] != nil && !ast.IsExported(t)
}

// leaves counts the leaf fields a field of type e holds: one, unless e is
// (a pointer to) a struct type of the package, whose fields count instead.
func (p *pkgSyntax) leaves(e ast.Expr, open map[string]bool) int {
	t := baseType(e)
	st := p.structs[t]
	if st == nil || open[t] {
		return 1
	}
	if _, ptr := e.(*ast.StarExpr); ptr && ast.IsExported(t) {
		return 1 // a reference to what the package offers (the Manager), not held
	}
	open[t] = true
	defer delete(open, t)
	n := 0
	for _, f := range st.Fields.List {
		n += len(fieldNames(f, baseType(f.Type))) * p.leaves(f.Type, open)
	}
	return n
}

// reaches counts the selectors x.field.f, f a field of type t, outside
// the file declaring t, and the files they stand in.
func (p *pkgSyntax) reaches(field, t string) (n, files int) {
	own := map[string]bool{}
	for _, f := range p.structs[t].Fields.List {
		for _, name := range fieldNames(f, baseType(f.Type)) {
			own[name] = true
		}
	}
	for name, f := range p.files {
		if name == p.declIn[t] {
			continue
		}
		k := 0
		ast.Inspect(f, func(nd ast.Node) bool {
			sel, ok := nd.(*ast.SelectorExpr)
			if !ok || !own[sel.Sel.Name] {
				return true
			}
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == field {
				if _, ok := inner.X.(*ast.Ident); ok {
					k++
				}
			}
			return true
		})
		n += k
		if k > 0 {
			files++
		}
	}
	return n, files
}

// fieldNames is a field's names, or its type's for an embedded field.
func fieldNames(f *ast.Field, t string) []string {
	if len(f.Names) == 0 {
		return []string{t}
	}
	names := make([]string, len(f.Names))
	for i, n := range f.Names {
		names[i] = n.Name
	}
	return names
}

// baseType names the type of e without its pointer or type arguments;
// another package's type is named with its package.
func baseType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return baseType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr: // another package's: never one of this package's types
		if x, ok := t.X.(*ast.Ident); ok {
			return x.Name + "." + t.Sel.Name
		}
	case *ast.IndexExpr:
		return baseType(t.X)
	case *ast.IndexListExpr:
		return baseType(t.X)
	}
	return ""
}
