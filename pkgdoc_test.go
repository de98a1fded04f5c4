package phaseflow

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocComments fails when a package has no package doc comment or an exported name has
// no doc comment: the docs say why code is the way it is, and a missing one is a gap a
// newcomer falls into.
func TestDocComments(t *testing.T) {
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range dirs {
		checkPackageDocs(t, dir)
	}
}

func checkPackageDocs(t *testing.T, dir string) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	byPkg := map[string][]*ast.File{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		byPkg[f.Name.Name] = append(byPkg[f.Name.Name], f)
	}
	for name, files := range byPkg {
		p, err := doc.NewFromFiles(fset, files, "github.com/phaseflow/phaseflow/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s: package %s has no package doc comment", dir, name)
		}
		if name == "main" {
			continue
		}
		for _, n := range undocumented(p) {
			t.Errorf("%s: exported %s has no doc comment", dir, n)
		}
	}
}

func undocumented(p *doc.Package) []string {
	var out []string
	for _, f := range p.Funcs {
		if f.Doc == "" {
			out = append(out, f.Name)
		}
	}
	for _, ty := range p.Types {
		if ty.Doc == "" {
			out = append(out, ty.Name)
		}
		for _, f := range append(ty.Funcs, ty.Methods...) {
			if f.Doc == "" && ast.IsExported(f.Name) && !implementsStd(f.Name) {
				out = append(out, ty.Name+"."+f.Name)
			}
		}
	}
	return out
}

// implementsStd lists methods whose meaning the standard interface they implement documents.
func implementsStd(name string) bool {
	switch name {
	case "Error", "String", "Unwrap", "Is", "Scan", "Value", "MarshalJSON", "UnmarshalJSON", "ServeHTTP", "LogValue", "GoString", "MarshalText":
		return true
	}
	return false
}
