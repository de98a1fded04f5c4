// Package skills holds every text the model sees, as Markdown files embedded in the binary,
// one tree per locale (en, zh). Keeping prompts out of Go code lets them be reviewed,
// translated and diffed as text, and lets an admin override one by storing a new version.
package skills

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed en zh json
var files embed.FS

// ErrUnknown is returned for a skill name or locale that has no embedded text.
var ErrUnknown = errors.New("skills: unknown skill")

// Locales are the locales every skill exists in; the first is the fallback.
var Locales = []string{"en", "zh"}

// Library reads skill texts. It is a value type over texts read once from the embedded
// files: a turn asks for several, and reading an embedded file copies it each time, so every
// generation would otherwise hold its own copies of the same texts. The map is never
// written after New, so copies of a Library share it safely.
type Library struct {
	fsys  fs.FS
	texts map[string]string // "en/contract" → text
}

// New returns the library of embedded skills.
func New() Library {
	texts := make(map[string]string)
	// The embedded tree is fixed at build time and readable: a walk error is a broken build.
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p == "json" {
			return fs.SkipDir // the JSON skills are read by package jsonskill (see JSON)
		}
		if err != nil || d.IsDir() || path.Ext(p) != ".md" {
			return err
		}
		b, err := fs.ReadFile(files, p)
		texts[strings.TrimSuffix(p, ".md")] = string(b)
		return err
	})
	if err != nil {
		panic(fmt.Sprintf("skills: reading the embedded texts: %v", err))
	}
	return Library{fsys: files, texts: texts}
}

// Text returns the skill called name (a slash path without extension, such as "contract" or
// "strategy/stages/draft") in locale, falling back to English for an unknown locale.
func (l Library) Text(name, locale string) (string, error) {
	if locale != "zh" {
		locale = "en"
	}
	text, ok := l.texts[locale+"/"+name]
	if !ok {
		return "", fmt.Errorf("%w: %s (%s)", ErrUnknown, name, locale)
	}
	return text, nil
}

// Names lists the skills embedded for locale, as the names [Library.Text] takes, sorted. It
// exists so tests and tools can walk every text (the parity and golden tests do) without
// keeping a second list that could drift from the files.
func (l Library) Names(locale string) ([]string, error) {
	if !slices.Contains(Locales, locale) {
		return nil, fmt.Errorf("%w: locale %q", ErrUnknown, locale)
	}
	var names []string
	err := fs.WalkDir(l.fsys, locale, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && path.Ext(p) == ".md" {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(p, locale+"/"), ".md"))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("skills: listing %s: %w", locale, err)
	}
	slices.Sort(names)
	return names, nil
}

// JSON returns the JSON skills' folder (skills/json): one folder a skill holding its
// skill.json, schemas and texts per locale, and problems/ with the texts that tell a model
// what was wrong with its answer. Package jsonskill reads it.
func (l Library) JSON() fs.FS {
	sub, err := fs.Sub(l.fsys, "json")
	if err != nil { // "json" is a valid path: fs.Sub cannot fail on it
		panic(fmt.Sprintf("skills: the JSON skills' folder: %v", err))
	}
	return sub
}
