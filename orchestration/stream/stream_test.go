package stream

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/upstream"
)

// fakeUpstream plays a fixed list of events, optionally hanging afterwards.
type fakeUpstream struct {
	events []upstream.Event
	err    error
	hang   bool
}

func (f fakeUpstream) Stream(ctx context.Context, _ upstream.Request) iter.Seq2[upstream.Event, error] {
	return func(yield func(upstream.Event, error) bool) {
		for _, ev := range f.events {
			if !yield(ev, nil) {
				return
			}
		}
		if f.hang {
			<-ctx.Done()
			yield(upstream.Event{}, ctx.Err())
			return
		}
		if f.err != nil {
			yield(upstream.Event{}, f.err)
		}
	}
}

// sink records what the client would see.
type sink struct {
	deltas  []string
	tools   []string
	retries []string
}

func (s *sink) Routed(context.Context, string, int, string, string) error { return nil }
func (s *sink) Delta(_ context.Context, text string) error {
	s.deltas = append(s.deltas, text)
	return nil
}
func (s *sink) ToolCall(_ context.Context, _, name, state string) error {
	s.tools = append(s.tools, name+":"+state)
	return nil
}
func (s *sink) Retrying(_ context.Context, attempt int, reason string) error {
	s.retries = append(s.retries, reason)
	return nil
}
func (s *sink) Trace(int, int, upstream.Sent) {}

func text(d string) upstream.Event { return upstream.Event{Kind: upstream.EventTextDelta, Delta: d} }

var completed = upstream.Event{Kind: upstream.EventCompleted, ResponseID: "resp_final", Usage: &upstream.Usage{TotalTokens: 3}}

func TestRun(t *testing.T) {
	tool := &upstream.ToolCall{ID: "mcp_1", Name: "validate_strategy"}
	failed := &upstream.ToolCall{ID: "mcp_1", Name: "validate_strategy", Failed: true}
	cases := []struct {
		name      string
		up        fakeUpstream
		idle      time.Duration
		wantErr   error
		wantText  string
		wantTools int
	}{
		{"a complete reply", fakeUpstream{events: []upstream.Event{{Kind: upstream.EventCreated, ResponseID: "resp_1"}, text("<final>hi"), text("</final>"), completed}}, 0, nil, "<final>hi</final>", 0},
		{"withheld blocks never reach the client", fakeUpstream{events: []upstream.Event{text("<final>a</final><AGENT_STATE"), text("_PATCH>{}</AGENT_STATE_PATCH>"), completed}}, 0, nil, "<final>a</final>", 0},
		{"tool calls are announced", fakeUpstream{events: []upstream.Event{{Kind: upstream.EventToolCallStarted, Tool: tool}, {Kind: upstream.EventToolCallDone, Tool: failed}, text("x"), completed}}, 0, nil, "x", 2},
		{"no terminal event is a failure", fakeUpstream{events: []upstream.Event{text("partial")}}, 0, upstream.ErrNoTerminal, "partial", 0},
		{"upstream error keeps the partial text", fakeUpstream{events: []upstream.Event{text("part")}, err: &upstream.Error{Kind: upstream.KindProvider}}, 0, &upstream.Error{}, "part", 0},
		{"silence past the idle limit", fakeUpstream{events: []upstream.Event{text("a")}, hang: true}, 50 * time.Millisecond, ErrIdle, "a", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			res, err := New(tc.up, tc.idle, Limits{}).Run(context.Background(), upstream.Request{}, s)
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.ResponseID != "resp_final" || res.Usage == nil {
					t.Fatalf("result lacks the completed response id or usage: %+v", res)
				}
			case *upstream.Error:
				var ue *upstream.Error
				if !errors.As(err, &ue) {
					t.Fatalf("Run error = %v, want an upstream error", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("Run error = %v, want %v", err, want)
				}
			}
			joined := ""
			for _, d := range s.deltas {
				joined += d
			}
			if joined != tc.wantText || res.Text != tc.wantText {
				t.Fatalf("client saw %q, result %q, want %q", joined, res.Text, tc.wantText)
			}
			if len(s.tools) != tc.wantTools {
				t.Fatalf("tool states %v, want %d", s.tools, tc.wantTools)
			}
		})
	}
}

// TestLimitsEndALongReply: a reply past its byte limit, or a turn past its event limit,
// ends with ErrReplyTooLarge, what arrived until then kept, and nothing more is read.
func TestLimitsEndALongReply(t *testing.T) {
	many := func(n int, d string) fakeUpstream {
		evs := make([]upstream.Event, 0, n+1)
		for range n {
			evs = append(evs, text(d))
		}
		return fakeUpstream{events: append(evs, completed)}
	}
	cases := []struct {
		name     string
		up       fakeUpstream
		limits   Limits
		wantErr  error
		wantText int // bytes forwarded
	}{
		{"within both limits", many(100, "ab"), Limits{ReplyBytes: 200, Events: 100}, nil, 200},
		{"a byte past the reply limit", many(101, "ab"), Limits{ReplyBytes: 201}, ErrReplyTooLarge, 200},
		{"an event past the event limit", many(1000, "a"), Limits{Events: 100}, ErrReplyTooLarge, 100},
		{"no limits", many(1000, "a"), Limits{}, nil, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			res, err := New(tc.up, 0, tc.limits).Run(context.Background(), upstream.Request{}, s)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Run error = %v, want %v", err, tc.wantErr)
			}
			if len(res.Text) != tc.wantText {
				t.Fatalf("kept %d bytes, want %d", len(res.Text), tc.wantText)
			}
			if code, _, ok := Failure(err); err != nil && (!ok || code != "reply_too_large") {
				t.Fatalf("Failure = %q, %v; want reply_too_large", code, ok)
			}
		})
	}
}
