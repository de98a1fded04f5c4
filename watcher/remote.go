package watcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/orchestration/events"
)

// Remote is a Phaseflow server the watcher works through (phaseflow watch --server): its
// terminal_state skill reads the snapshots, and it keeps the questions and their answers,
// so a laptop needs neither the database nor the model's key, and one user's laptops
// share one server. Calls carry the user's bearer token.
type Remote struct {
	Base   string // the server's URL, without /api/v1
	Token  string
	Locale string
	// Client makes the calls; Stream follows the answers (no timeout).
	Client, Stream *http.Client
}

// reconnectDelay is how long the answers stream waits before reconnecting, at most.
const reconnectDelay = 5 * time.Second

// ReadScreen runs terminal_state on the server.
func (r Remote) ReadScreen(ctx context.Context, src Source, snapshot []byte) (Reading, error) {
	body := map[string]any{"input": map[string]string{"terminal": string(snapshot)}, "locale": r.Locale, "source_id": src.ID}
	var run struct {
		ID        string          `json:"id"`
		Status    string          `json:"status"`
		Duplicate bool            `json:"duplicate"`
		Output    json.RawMessage `json:"output"`
		Meta      json.RawMessage `json:"meta"`
		Error     json.RawMessage `json:"error"`
		CreatedAt time.Time       `json:"created_at"`
	}
	if err := r.call(ctx, http.MethodPost, "/api/v1/skills/terminal_state/runs", body, &run); err != nil {
		return Reading{}, err
	}
	return readingOf(run.ID, run.CreatedAt, run.Duplicate, run.Status, run.Output, run.Meta, run.Error)
}

// Record records q on the server.
func (r Remote) Record(ctx context.Context, q Question) (Recorded, error) {
	var rec struct {
		Question struct {
			ID string `json:"id"`
		} `json:"question"`
		New       bool     `json:"new"`
		AnswerURL string   `json:"answer_url"`
		Actions   []Action `json:"actions"`
	}
	if err := r.call(ctx, http.MethodPost, "/api/v1/watch/questions", q, &rec); err != nil {
		return Recorded{}, err
	}
	return Recorded{ID: rec.Question.ID, New: rec.New, AnswerURL: rec.AnswerURL, Actions: rec.Actions}, nil
}

// Report reports an answer's outcome. An outcome the server already knows is no error.
func (r Remote) Report(ctx context.Context, id, state string) error {
	err := r.call(ctx, http.MethodPost, "/api/v1/watch/questions/"+id+"/outcome", map[string]string{"state": state}, nil)
	var he *httpError
	if errors.As(err, &he) && he.status == http.StatusConflict {
		return nil
	}
	return err
}

// Follow follows the answers stream, reconnecting after a drop, until ctx ends.
func (r Remote) Follow(ctx context.Context, answers chan<- Answer) error {
	delay := 250 * time.Millisecond
	for {
		err := r.followOnce(ctx, answers)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			delay = 250 * time.Millisecond
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, reconnectDelay)
	}
}

// followOnce reads one connection of the answers stream to its end.
func (r Remote) followOnce(ctx context.Context, answers chan<- Answer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.Base+"/api/v1/watch/answers", nil)
	if err != nil {
		return fmt.Errorf("follow answers: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := r.Stream.Do(req)
	if err != nil {
		return fmt.Errorf("follow answers: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("follow answers: %s answered %s", config.RedactURL(r.Base), resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: ") && name == events.Answer:
			var a Answer
			if err := json.Unmarshal([]byte(line[len("data: "):]), &a); err != nil {
				return fmt.Errorf("follow answers: %w", err)
			}
			select {
			case answers <- a:
			case <-ctx.Done():
				return ctx.Err()
			}
		case line == "":
			name = ""
		}
	}
	return sc.Err()
}

// httpError is an error answer of the server.
type httpError struct {
	status int
	text   string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.status, e.text) }

// call makes one API call; out, when set, receives the JSON answer.
func (r Remote) call(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.Base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %w", method, path, &httpError{status: resp.StatusCode, text: strings.TrimSpace(string(body))})
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}
