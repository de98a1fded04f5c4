package jsonskill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrUnknownSkill is returned for a skill name the catalog does not hold.
var ErrUnknownSkill = errors.New("jsonskill: unknown skill")

// Skill is one JSON skill as loaded from its folder: what GET /api/v1/skills lists, the
// compiled schemas, its rules and its texts per locale.
type Skill struct {
	Name        string
	Version     string
	Description string
	// Locales are the locales the skill has texts in, sorted.
	Locales []string
	// InputSchema and OutputSchema are the schemas as written, for clients.
	InputSchema, OutputSchema json.RawMessage

	input, output *jsonschema.Schema
	// inputTypes names the input schema's properties with their JSON type, for the user
	// template's placeholders.
	inputTypes map[string]string
	// strict is the output schema as structured mode sends it (see strictSchema).
	strict          json.RawMessage
	callTimeout     time.Duration
	maxOutputTokens int
	rules           rules
	texts           map[string]map[string]string // locale → text name → text
}

// manifest is skill.json. The schemas are file names in the skill's folder or inline
// objects.
type manifest struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	CallTimeout  string          `json:"call_timeout"`
	// MaxOutputTokens is the output limit sent with each call, sized for the skill's
	// largest valid answer (required: without it a call runs to the provider's default).
	MaxOutputTokens int   `json:"max_output_tokens"`
	Rules           rules `json:"rules"`
}

// rules are the skill-specific steps skill.json switches on; each is implemented here, not
// described in the file, so a skill can only use steps the runner knows.
type rules struct {
	// Snapshot prepares a terminal snapshot (terminal_state, docs/json-skills.md).
	Snapshot *snapshotRule `json:"snapshot"`
	// RulesFirst answers a busy agent without calling the model (docs/json-skills.md).
	RulesFirst bool `json:"rules_first"`
	// Widen lists the window sizes, in lines, sent while the answer reads incomplete.
	Widen []int `json:"widen"`
	// Dedup marks a question seen before from the same source as a duplicate.
	Dedup bool `json:"dedup"`
	// ReasoningLanguage is the language the top-level reasoning must be written in
	// ("zh": docs/json-skills.md).
	ReasoningLanguage string `json:"reasoning_language"`
}

// texts are the texts a skill with these rules needs in each of its locales: every skill's
// four, and those of its rules.
func (r rules) texts() []string {
	need := []string{"system", "user", "text_json_rules", "correction"}
	if r.Snapshot != nil {
		need = append(need, "typing", "reply_choice", "reply_confirmation", "reply_open")
	}
	if r.ReasoningLanguage != "" {
		need = append(need, "rules/reasoning_language")
	}
	return need
}

// snapshotRule says which input field holds the snapshot and its limits.
type snapshotRule struct {
	Field    string `json:"field"`
	MaxLines int    `json:"max_lines"`
	MaxBytes int    `json:"max_bytes"`
}

// Catalog is the JSON skills the runner knows, loaded once. It is safe for concurrent use.
type Catalog struct {
	skills   map[string]*Skill
	names    []string
	problems map[string]map[string]string // locale → problem → text
}

// Load reads every skill of fsys (skills.Library.JSON: a folder a skill, each holding
// skill.json) and the shared problem texts, compiling the schemas. A broken skill is an
// error naming it: the files are embedded, so this fails a build's tests, not a request.
func Load(fsys fs.FS) (*Catalog, error) {
	c := &Catalog{skills: map[string]*Skill{}}
	dirs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("jsonskill: list skills: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "problems" {
			continue
		}
		sk, err := loadSkill(fsys, d.Name())
		if err != nil {
			return nil, fmt.Errorf("jsonskill: skill %s: %w", d.Name(), err)
		}
		c.skills[sk.Name] = sk
		c.names = append(c.names, sk.Name)
	}
	slices.Sort(c.names)
	if c.problems, err = readTexts(fsys, "problems"); err != nil {
		return nil, fmt.Errorf("jsonskill: problem texts: %w", err)
	}
	return c, nil
}

// Get returns the skill called name, or ErrUnknownSkill.
func (c *Catalog) Get(name string) (*Skill, error) {
	sk, ok := c.skills[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownSkill, name)
	}
	return sk, nil
}

// MaxInputBytes is the largest snapshot any skill accepts, in bytes (0: none takes one).
func (c *Catalog) MaxInputBytes() int {
	n := 0
	for _, sk := range c.skills {
		if snap := sk.rules.Snapshot; snap != nil {
			n = max(n, snap.MaxBytes)
		}
	}
	return n
}

// List returns the skills sorted by name.
func (c *Catalog) List() []*Skill {
	out := make([]*Skill, len(c.names))
	for i, n := range c.names {
		out[i] = c.skills[n]
	}
	return out
}

// problem returns the text of a problem in locale (English when the locale has none).
func (c *Catalog) problem(name, locale string) string {
	if t, ok := c.problems[locale][name]; ok {
		return t
	}
	return c.problems["en"][name]
}

// loadSkill reads one skill's folder.
func loadSkill(fsys fs.FS, dir string) (*Skill, error) {
	raw, err := fs.ReadFile(fsys, path.Join(dir, "skill.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("skill.json: %w", err)
	}
	if m.Name != dir || m.Version == "" {
		return nil, fmt.Errorf("skill.json: name must be the folder's (%q) and version set", dir)
	}
	sk := &Skill{Name: m.Name, Version: m.Version, Description: m.Description, rules: m.Rules, maxOutputTokens: m.MaxOutputTokens}
	if sk.callTimeout, err = time.ParseDuration(m.CallTimeout); err != nil || sk.callTimeout <= 0 {
		return nil, fmt.Errorf("skill.json: call_timeout %q is not a positive duration", m.CallTimeout)
	}
	if m.MaxOutputTokens <= 0 {
		return nil, fmt.Errorf("skill.json: max_output_tokens must be a positive number of tokens, got %d", m.MaxOutputTokens)
	}
	if sk.InputSchema, sk.input, err = schemaOf(fsys, dir, m.InputSchema); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if sk.inputTypes, err = propertyTypes(sk.InputSchema); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if sk.OutputSchema, sk.output, err = schemaOf(fsys, dir, m.OutputSchema); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	if sk.strict, err = strictSchema(sk.OutputSchema); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	if sk.texts, err = readTexts(fsys, dir); err != nil {
		return nil, err
	}
	return sk, sk.check()
}

// check makes sure every locale has the texts the runner reads.
func (sk *Skill) check() error {
	for locale, texts := range sk.texts {
		sk.Locales = append(sk.Locales, locale)
		for _, n := range sk.rules.texts() {
			if strings.TrimSpace(texts[n]) == "" {
				return fmt.Errorf("%s/%s.md is missing or empty", locale, n)
			}
		}
	}
	slices.Sort(sk.Locales)
	if !slices.Contains(sk.Locales, "en") {
		return errors.New("no en texts")
	}
	return nil
}

// text returns the skill's text called name in locale, English when the locale has none.
func (sk *Skill) text(name, locale string) string {
	if t, ok := sk.texts[locale][name]; ok {
		return t
	}
	return sk.texts["en"][name]
}

// hasLocale reports whether the skill speaks locale.
func (sk *Skill) hasLocale(locale string) bool { return slices.Contains(sk.Locales, locale) }

// readTexts reads dir/<locale>/**/*.md as locale → name (without .md) → trimmed text.
func readTexts(fsys fs.FS, dir string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".md" {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, dir+"/"), ".md")
		locale, name, ok := strings.Cut(rel, "/")
		if !ok {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if out[locale] == nil {
			out[locale] = map[string]string{}
		}
		out[locale][name] = strings.TrimSpace(string(b))
		return nil
	})
	return out, err
}

// propertyTypes names a schema's properties with their JSON type ("" when untyped).
func propertyTypes(schema json.RawMessage) (map[string]string, error) {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		out[name], _ = p.Type.(string)
	}
	return out, nil
}
