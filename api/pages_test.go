package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

type sessionPage struct {
	Sessions   []struct{ ID string } `json:"sessions"`
	NextCursor *string               `json:"next_cursor"`
}

func TestListPages(t *testing.T) {
	s := newStack(t)
	defer s.close()
	var made []string
	for range 5 {
		resp := s.do(t, http.MethodPost, "/api/v1/sessions", `{"title":"p"}`)
		var sess struct{ ID string }
		_ = json.NewDecoder(resp.Body).Decode(&sess)
		resp.Body.Close()
		made = append(made, sess.ID)
	}
	slices.Reverse(made) // newest first

	var got []string
	path := "/api/v1/sessions?limit=2"
	for pages := 1; ; pages++ {
		resp := s.do(t, http.MethodGet, path, "")
		var p sessionPage
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, resp.StatusCode, err)
		}
		resp.Body.Close()
		if len(p.Sessions) > 2 {
			t.Fatalf("page %d has %d sessions, limit 2", pages, len(p.Sessions))
		}
		for _, x := range p.Sessions {
			got = append(got, x.ID)
		}
		if p.NextCursor == nil {
			if pages != 3 {
				t.Fatalf("%d pages for 5 sessions in pages of 2, want 3", pages)
			}
			break
		}
		path = "/api/v1/sessions?limit=2&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if !slices.Equal(got, made) {
		t.Fatalf("paged sessions %v, want %v", got, made)
	}

	resp := s.do(t, http.MethodGet, "/api/v1/sessions", "")
	var all sessionPage
	_ = json.NewDecoder(resp.Body).Decode(&all)
	resp.Body.Close()
	if len(all.Sessions) != 5 || all.NextCursor != nil {
		t.Fatalf("default page: %d sessions, next %v", len(all.Sessions), all.NextCursor)
	}

	resp = s.do(t, http.MethodGet, "/api/v1/sessions/"+made[0]+"/messages?limit=1", "")
	var msgs map[string]json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&msgs)
	resp.Body.Close()
	if string(msgs["messages"]) != "[]" || string(msgs["next_cursor"]) != "null" {
		t.Fatalf("empty message list = %v", msgs)
	}

	first := s.do(t, http.MethodGet, "/api/v1/sessions?limit=1", "")
	var p sessionPage
	_ = json.NewDecoder(first.Body).Decode(&p)
	first.Body.Close()
	for name, q := range map[string]string{
		"limit 0":                        "/api/v1/sessions?limit=0",
		"limit over 200":                 "/api/v1/sessions?limit=201",
		"limit not a number":             "/api/v1/sessions?limit=ten",
		"garbage cursor":                 "/api/v1/sessions?cursor=%21%21",
		"cursor of another list":         "/api/v1/sessions/" + made[0] + "/transitions?cursor=" + url.QueryEscape(*p.NextCursor),
		"cursor holding a NUL":           "/api/v1/sessions?cursor=eyJsIjoic2Vzc2lvbnMiLCJpIjoiXHUwMDAwIn0",
		"NUL in the cursor query itself": "/api/v1/sessions?cursor=%00",
	} {
		t.Run(name, func(t *testing.T) {
			resp := s.do(t, http.MethodGet, q, "")
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s: %d %s, want 400", q, resp.StatusCode, b)
			}
		})
	}
}
