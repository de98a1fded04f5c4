package tests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestColdReplicaBurst is a replica's first seconds behind a busy load balancer: a fresh
// process gets three times as many streamed turns at once as its PostgreSQL pool has
// connections, before it has served any. Every one must stream its reply to completed. A
// transaction that waited for a second pool connection while holding one used to hang
// them all until the clients gave up.
func TestColdReplicaBurst(t *testing.T) {
	const turns = 60
	s := startServer(t)
	tok := s.token("burst")
	sessions := make([]string, turns)
	for i := range sessions {
		sessions[i] = s.newSession(tok, "en")
	}
	ctx := ctxFor(t, 60*time.Second)
	errs := make([]error, turns)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range sessions {
		wg.Go(func() {
			<-start
			errs[i] = streamTurn(ctx, s.base, tok, id)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("a cold burst of %d streamed turns:\n%v", turns, err)
	}
}

// streamTurn posts a message asking for the stream and reads it to its terminal event,
// which must be completed.
func streamTurn(ctx context.Context, base, token, sessionID string) error {
	return streamTurnOf(ctx, base, token, sessionID, "a cold burst")
}

// streamTurnOf is streamTurn with the message text.
func streamTurnOf(ctx context.Context, base, token, sessionID, text string) error {
	st, err := postForStream(ctx, base, token, sessionID, text)
	if err != nil {
		return err
	}
	defer st.close()
	for {
		ev, err := st.next()
		if err != nil {
			return fmt.Errorf("session %s: stream ended before its terminal event: %w", sessionID, err)
		}
		switch ev.Name {
		case "completed":
			return nil
		case "error":
			return fmt.Errorf("session %s: error event %v", sessionID, ev.Data)
		}
	}
}
