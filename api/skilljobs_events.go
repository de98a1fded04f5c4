package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// jobPoll is how often a job's event stream reads the job's progress. Jobs run for seconds
// to hours and no client acts on a progress bar faster than this; reading the stored
// progress keeps every replica's streams right without notifications.
const jobPoll = 250 * time.Millisecond

// jobProgress is the data of a job's progress event, and of its last event.
type jobProgress struct {
	JobID     string `json:"job_id"`
	Done      int64  `json:"done"`
	Total     int    `json:"total"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
}

// getSkillJobEvents serves GET /api/v1/skills/jobs/{id}/events: a progress event per
// finished input (event id n: n inputs done), then completed or cancelled (id done + 1),
// resumable with Last-Event-ID as a message's stream is; 204 at or past the last event.
func (s *Server) getSkillJobEvents(c echo.Context) error {
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	job, err := s.store.GetSkillJob(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	if job.Ended() && after > int64(job.Done) {
		return c.NoContent(http.StatusNoContent)
	}
	w, err := startSSE(c.Response(), c.Request().ProtoMajor, &s.frames)
	if err != nil {
		return nil // the client is already gone
	}
	s.metrics.StreamOpened()
	defer s.metrics.StreamClosed()
	js := &jobStream{srv: s, w: w, id: job.ID, user: job.UserID, after: after}
	js.follow(c.Request().Context())
	return nil
}

// jobStream is one client's stream of a job's events.
type jobStream struct {
	srv   *Server
	w     *sseWriter
	id    string
	user  string
	after int64 // the last event id sent
}

// follow sends the job's events as its inputs finish, with heartbeats, until its last
// event, the client leaving or the server stopping.
func (js *jobStream) follow(ctx context.Context) {
	poll := time.NewTicker(jobPoll)
	defer poll.Stop()
	beat := time.NewTicker(js.srv.cfg.HeartbeatInterval)
	defer beat.Stop()
	for {
		ended, err := js.send(ctx)
		if err != nil || ended {
			return
		}
		select {
		case <-poll.C:
		case <-beat.C:
			hb := map[string]any{"job_id": js.id, "ts": time.Now().UnixMilli(), "last_event_id": js.after}
			if js.w.unlogged(events.Heartbeat, hb) != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-js.srv.streamsCtx.Done():
			return
		}
	}
}

// send writes the events after js.after: the progress stored since, and the last event
// once the job has ended. The job is read before its progress, so an ended job's progress
// is whole when read.
func (js *jobStream) send(ctx context.Context) (ended bool, err error) {
	job, err := js.srv.store.GetSkillJob(ctx, js.id, js.user)
	if err != nil {
		return false, nil // an outage: try again at the next poll
	}
	progress, err := js.srv.store.SkillJobProgress(ctx, js.id, js.after)
	if err != nil {
		return false, nil
	}
	for _, p := range progress {
		if err := js.event(p.Seq, events.JobProgress, jobProgress{JobID: js.id, Done: p.Seq, Total: job.Total, Succeeded: p.Succeeded, Failed: p.Failed}); err != nil {
			return false, err
		}
	}
	last := job.Ended() && js.after == int64(job.Done)
	if last {
		name := events.Completed
		if job.Status == store.JobCancelled {
			name = events.JobCancelled
		}
		err = js.event(int64(job.Done)+1, name, jobProgress{JobID: js.id, Done: int64(job.Done), Total: job.Total, Succeeded: job.Succeeded, Failed: job.Failed})
		if err != nil {
			return false, err
		}
	}
	return last, js.w.flush(last)
}

// event buffers one event with its id.
func (js *jobStream) event(seq int64, name string, data jobProgress) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("api: encode %s: %w", name, err)
	}
	js.w.event(store.Event{Seq: seq, Name: name, Data: b})
	js.after = seq
	return nil
}
