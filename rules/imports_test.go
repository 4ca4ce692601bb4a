package rules

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOnlyRulesImportsTheParser: the README promises that of the
// library's packages only rules imports mvdan.cc/sh, and only its syntax
// package, so a host that brings its own Approver does not build the bash
// parser. go list names every package of the module and its imports.
func TestOnlyRulesImportsTheParser(t *testing.T) {
	// go test puts its own go first in PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = ".."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	const self = "github.com/agentpty/agentpty/rules"
	var importers []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, "mvdan.cc/sh/") {
				continue
			}
			importers = append(importers, pkg)
			if pkg != self || imp != "mvdan.cc/sh/v3/syntax" {
				t.Errorf("%s imports %s: only %s may, and only mvdan.cc/sh/v3/syntax", pkg, imp, self)
			}
		}
	}
	if !slices.Contains(importers, self) {
		t.Fatalf("go list shows no import of mvdan.cc/sh by %s, so this test checks nothing:\n%s", self, out)
	}
}

// TestRulesUsesOnlyTheApprovalTypes: docs/architecture.md says rules
// imports the root for the approval types only: the request it judges,
// the tool names in it, and the error that refuses. Its code (doc
// comments aside) names nothing else of the root.
func TestRulesUsesOnlyTheApprovalTypes(t *testing.T) {
	allowed := map[string]bool{"ApprovalRequest": true, "ErrDenied": true}
	fset := gotoken.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "agentpty" {
					used[sel.Sel.Name] = true
					if !allowed[sel.Sel.Name] && !strings.HasPrefix(sel.Sel.Name, "Tool") {
						t.Errorf("%s: rules uses agentpty.%s, not an approval type", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if !used["ApprovalRequest"] {
		t.Fatalf("no use of agentpty.ApprovalRequest found (%v): this test checks nothing", used)
	}
}
