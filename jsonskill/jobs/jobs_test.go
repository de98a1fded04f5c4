package jobs

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/router"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// skillRunner is a JSON-skill runner on the scripted upstream, paced so that a job's
// inputs take a while.
func skillRunner(t *testing.T, s *store.Store, pace time.Duration) *jsonskill.Runner {
	t.Helper()
	hs := httptest.NewServer(scripted.New(scripted.Options{Pace: pace}))
	t.Cleanup(hs.Close)
	c := upstream.New(upstream.Config{BaseURL: hs.URL + "/v1"})
	t.Cleanup(c.CloseIdleConnections)
	r, err := router.New([]router.Endpoint{{ID: 1, Provider: "scripted", Model: "m", Client: c}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := jsonskill.Load(skills.New().JSON())
	if err != nil {
		t.Fatal(err)
	}
	return jsonskill.New(cat, r, s, jsonskill.Options{})
}

// postJob stores a post_views job of n inputs.
func postJob(t *testing.T, s *store.Store, n int) *store.SkillJob {
	t.Helper()
	inputs := make([]store.JSON, n)
	for i := range inputs {
		inputs[i] = store.JSON(fmt.Sprintf(`{"content_text":"$BTC post %d, buying"}`, i))
	}
	j := &store.SkillJob{UserID: "u1", Skill: "post_views", Locale: "en"}
	if err := s.CreateSkillJob(t.Context(), j, inputs); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitJob waits until job id has its final status.
func waitJob(t *testing.T, s *store.Store, id string) *store.SkillJob {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		j, err := s.GetSkillJob(t.Context(), id, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if j.Ended() {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s did not end", id)
	return nil
}

// runsOf counts the stored runs of job id's inputs, and checks none is stored twice.
func runsOf(t *testing.T, s *store.Store, id string) int {
	t.Helper()
	runs, err := s.ListSkillRunsPage(t.Context(), "u1", store.RunFilter{Skill: "post_views"}, nil, store.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		if r.JobID.String == id {
			n++
		}
	}
	return n
}

func newRunner(s *store.Store, skills *jsonskill.Runner, owner string, ttl time.Duration) *Runner {
	return New(s, skills, Options{Lease: store.Lease{Owner: owner, TTL: ttl}, Concurrency: 3, MaxJobs: 2})
}

func TestAJobRunsEveryInputOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := newRunner(s, skillRunner(t, s, -1), "replica-1", 3*time.Second)
		r.Start(t.Context())
		defer r.Close()
		j := postJob(t, s, 10)
		r.Kick()
		got := waitJob(t, s, j.ID)
		if got.Status != store.JobCompleted || got.Done != 10 || got.Succeeded != 10 {
			t.Errorf("job %+v", got)
		}
		if n := runsOf(t, s, j.ID); n != 10 {
			t.Errorf("%d runs stored for 10 inputs", n)
		}
		progress, _ := s.SkillJobProgress(t.Context(), j.ID, 0)
		for i, p := range progress {
			if p.Seq != int64(i+1) || p.Succeeded != i+1 {
				t.Errorf("progress %d: %+v", i, p)
			}
		}
	})
}

// A replica stops (a crash, as far as the job knows: its inputs are abandoned and its
// lease lapses); another takes the job over and finishes it, no input finished twice.
func TestAJobIsTakenOverWhenItsReplicaStops(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		j := postJob(t, s, 12)
		first := newRunner(s, skillRunner(t, s, 20*time.Millisecond), "replica-1", 400*time.Millisecond)
		first.Start(t.Context())
		first.Kick()
		for {
			got, _ := s.GetSkillJob(t.Context(), j.ID, "u1")
			if got.Done >= 2 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		first.Close()
		second := newRunner(s, skillRunner(t, s, -1), "replica-2", 400*time.Millisecond)
		second.Start(t.Context())
		defer second.Close()
		got := waitJob(t, s, j.ID)
		if got.Status != store.JobCompleted || got.Done != 12 || got.Owner != "replica-2" {
			t.Errorf("job %+v", got)
		}
		if n := runsOf(t, s, j.ID); n != 12 {
			t.Errorf("%d runs stored for 12 inputs", n)
		}
	})
}

func TestACancelledJobStartsNoMoreInputs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := newRunner(s, skillRunner(t, s, 30*time.Millisecond), "replica-1", 300*time.Millisecond)
		r.Start(t.Context())
		defer r.Close()
		j := postJob(t, s, 30)
		r.Kick()
		for {
			got, _ := s.GetSkillJob(t.Context(), j.ID, "u1")
			if got.Done >= 1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := s.CancelSkillJob(t.Context(), j.ID, "u1"); err != nil {
			t.Fatal(err)
		}
		got := waitJob(t, s, j.ID)
		if got.Status != store.JobCancelled || got.Done == 30 {
			t.Errorf("job %+v, want cancelled before its end", got)
		}
		if n := runsOf(t, s, j.ID); n != got.Done {
			t.Errorf("%d runs stored, %d counted", n, got.Done)
		}
	})
}
