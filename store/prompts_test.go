package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func createPrompt(t *testing.T, s *store.Store, name, locale, body string) *store.Prompt {
	t.Helper()
	p := &store.Prompt{Name: name, Locale: locale, Body: body, CreatedBy: "admin"}
	if err := s.CreatePrompt(t.Context(), p); err != nil {
		t.Fatalf("CreatePrompt(%s/%s): %v", name, locale, err)
	}
	return p
}

// activeIDs lists the ids of the active versions of name in locale.
func activeIDs(t *testing.T, s *store.Store, name, locale string) []string {
	t.Helper()
	all, err := s.ListPrompts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range all {
		if p.Name == name && p.Locale == locale && p.Active {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

func TestPrompts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		v1 := createPrompt(t, s, "strategy/skills.md", "en", "first")
		zh := createPrompt(t, s, "strategy/skills.md", "zh", "第一")
		v2 := createPrompt(t, s, "strategy/skills.md", "en", "second")
		other := createPrompt(t, s, "contract.md", "en", "contract")
		v3 := createPrompt(t, s, "strategy/skills.md", "en", "third")

		t.Run("versions number per name and locale", func(t *testing.T) {
			got := map[string]int{}
			for _, p := range []*store.Prompt{v1, zh, v2, other, v3} {
				if p.ID == "" || p.Active || p.CreatedAt.IsZero() {
					t.Errorf("created prompt %+v: want an id, a time and inactive", p)
				}
				got[p.Body] = p.Version
			}
			want := map[string]int{"first": 1, "第一": 1, "second": 2, "contract": 1, "third": 3}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})

		t.Run("list by name, locale, version", func(t *testing.T) {
			all, err := s.ListPrompts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []*store.Prompt{other, v1, v2, v3, zh}
			if diff := cmp.Diff(want, ptrsOf(all)); diff != "" {
				t.Errorf("ListPrompts (-want +got):\n%s", diff)
			}
		})

		t.Run("none active yet", func(t *testing.T) {
			if p, err := s.ActivePrompt(ctx, "strategy/skills.md", "en"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ActivePrompt = %+v, %v; want ErrNotFound", p, err)
			}
		})

		// Activations run in order; after each, exactly the wanted versions are active.
		steps := []struct {
			name     string
			activate *store.Prompt
			wantEn   *store.Prompt
			wantZh   *store.Prompt
		}{
			{"activate v2", v2, v2, nil},
			{"switch to v3", v3, v3, nil},
			{"other locale is separate", zh, v3, zh},
			{"roll back to v1", v1, v1, zh},
			{"activate the active one again", v1, v1, zh},
		}
		for _, step := range steps {
			t.Run(step.name, func(t *testing.T) {
				got, err := s.ActivatePrompt(ctx, step.activate.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := *step.activate
				want.Active = true
				if diff := cmp.Diff(&want, got); diff != "" {
					t.Errorf("ActivatePrompt (-want +got):\n%s", diff)
				}
				for locale, wantActive := range map[string]*store.Prompt{"en": step.wantEn, "zh": step.wantZh} {
					checkActive(t, s, "strategy/skills.md", locale, wantActive)
				}
			})
		}

		t.Run("other names unaffected", func(t *testing.T) {
			checkActive(t, s, "contract.md", "en", nil)
		})

		t.Run("activate a missing id", func(t *testing.T) {
			if p, err := s.ActivatePrompt(ctx, "no-such-id"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ActivatePrompt = %+v, %v; want ErrNotFound", p, err)
			}
		})

		t.Run("the index allows one active version", func(t *testing.T) {
			err := s.ForcePromptActive(ctx, v2.ID)
			if _, unique := store.UniqueViolation(err); !unique {
				t.Fatalf("second active version: err = %v, want a unique violation", err)
			}
			checkActive(t, s, "strategy/skills.md", "en", v1)
		})

		invalid := []struct {
			name string
			p    store.Prompt
		}{
			{"no name", store.Prompt{Locale: "en", Body: "x"}},
			{"no locale", store.Prompt{Name: "n", Body: "x"}},
			{"no body", store.Prompt{Name: "n", Locale: "en"}},
		}
		for _, tc := range invalid {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				if err := s.CreatePrompt(ctx, &tc.p); err == nil {
					t.Fatal("CreatePrompt = nil, want an error")
				}
			})
		}

		t.Run("created active is stored inactive", func(t *testing.T) {
			p := &store.Prompt{Name: "strategy/skills.md", Locale: "en", Body: "fourth", Active: true}
			if err := s.CreatePrompt(ctx, p); err != nil {
				t.Fatal(err)
			}
			if p.Active || p.Version != 4 {
				t.Errorf("created %+v, want version 4, inactive", p)
			}
			checkActive(t, s, "strategy/skills.md", "en", v1)
		})
	})
}

// checkActive asserts that want (nil: none) is the one active version of name in locale.
func checkActive(t *testing.T, s *store.Store, name, locale string, want *store.Prompt) {
	t.Helper()
	got, err := s.ActivePrompt(t.Context(), name, locale)
	if want == nil {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ActivePrompt(%s) = %+v, %v; want ErrNotFound", locale, got, err)
		}
		return
	}
	if err != nil || got.ID != want.ID || !got.Active || got.Body != want.Body {
		t.Errorf("ActivePrompt(%s) = %+v, %v; want version %d active", locale, got, err, want.Version)
	}
	if ids := activeIDs(t, s, name, locale); !slices.Equal(ids, []string{want.ID}) {
		t.Errorf("active %s versions %v, want only %s", locale, ids, want.ID)
	}
}

func ptrsOf(ps []store.Prompt) []*store.Prompt {
	out := make([]*store.Prompt, len(ps))
	for i := range ps {
		out[i] = &ps[i]
	}
	return out
}

// TestPromptsConcurrent creates versions and switches the active one from several
// goroutines: numbers stay distinct and gapless, and one version ends active.
func TestPromptsConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const writers = 8
		prompts := make([]*store.Prompt, writers)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				prompts[i] = &store.Prompt{Name: "n", Locale: "en", Body: fmt.Sprint("body ", i)}
				errs[i] = s.CreatePrompt(t.Context(), prompts[i])
			})
		}
		wg.Wait()
		var versions []int
		for i, err := range errs {
			if err != nil {
				t.Fatalf("CreatePrompt %d: %v", i, err)
			}
			versions = append(versions, prompts[i].Version)
		}
		slices.Sort(versions)
		if want := []int{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(versions, want) {
			t.Errorf("versions %v, want %v", versions, want)
		}

		for i := range writers {
			wg.Go(func() { _, errs[i] = s.ActivatePrompt(t.Context(), prompts[i].ID) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("ActivatePrompt %d: %v", i, err)
			}
		}
		if ids := activeIDs(t, s, "n", "en"); len(ids) != 1 {
			t.Errorf("active versions %v, want exactly one", ids)
		}
	})
}
