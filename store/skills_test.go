package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// question is a has_question run of user u from source src.
func question(u, src, fingerprint string) *store.SkillRun {
	return &store.SkillRun{UserID: u, Skill: "terminal_state", Version: "1", Status: store.RunSucceeded, SourceID: src,
		Input: store.JSON(`{"terminal":"q?"}`), Output: store.JSON(`{"status":"has_question"}`), Meta: store.JSON(`{}`), Fingerprint: fingerprint}
}

func TestSkillRunDuplicates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		save := func(run *store.SkillRun, window time.Duration) bool {
			t.Helper()
			if err := s.SaveSkillRun(t.Context(), run, window); err != nil {
				t.Fatal(err)
			}
			return run.Duplicate
		}
		base := time.Now().Add(-time.Hour)
		at := func(r *store.SkillRun, d time.Duration) *store.SkillRun { r.CreatedAt = base.Add(d); return r }
		steps := []struct {
			name string
			run  *store.SkillRun
			want bool
		}{
			{"a first question", at(question("u1", "agent-1", "fp-a"), 0), false},
			{"the same again", at(question("u1", "agent-1", "fp-a"), time.Minute), true},
			{"another source", at(question("u1", "agent-2", "fp-a"), 2*time.Minute), false},
			{"another user", at(question("u2", "agent-1", "fp-a"), 3*time.Minute), false},
			{"a new question", at(question("u1", "agent-1", "fp-b"), 4*time.Minute), false},
			{"the first one back", at(question("u1", "agent-1", "fp-a"), 5*time.Minute), false},
			{"past the window", at(question("u1", "agent-1", "fp-a"), 20*time.Minute), false},
			{"no fingerprint is never a duplicate", at(question("u1", "agent-1", ""), 21*time.Minute), false},
			{"asked again", at(question("u1", "agent-1", "fp-c"), 22*time.Minute), false},
			{"still on screen", at(question("u1", "agent-1", "fp-c"), 23*time.Minute), true},
			{"the agent worked", at(question("u1", "agent-1", store.StateMark+"processing"), 24*time.Minute), false},
			{"worked again: a state mark is never a duplicate", at(question("u1", "agent-1", store.StateMark+"processing"), 25*time.Minute), false},
			{"the same question after work is a new wait", at(question("u1", "agent-1", "fp-c"), 26*time.Minute), false},
		}
		for _, st := range steps {
			if got := save(st.run, 10*time.Minute); got != st.want {
				t.Errorf("%s: duplicate = %v, want %v", st.name, got, st.want)
			}
		}
		got, err := s.GetSkillRun(t.Context(), steps[1].run.ID, "u1")
		if err != nil || !got.Duplicate || got.Fingerprint != "fp-a" || string(got.Output) != `{"status":"has_question"}` {
			t.Errorf("GetSkillRun = %+v, %v", got, err)
		}
		if _, err := s.GetSkillRun(t.Context(), steps[1].run.ID, "u2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another user's run: %v, want ErrNotFound", err)
		}
	})
}

// Two replicas asked about the same question at once: one of them is the first.
func TestSkillRunDuplicatesAcrossReplicas(t *testing.T) {
	a := storetest.Postgres(t)
	b := storetest.Another(t, a)
	var wg sync.WaitGroup
	dups := make([]bool, 8)
	for i := range dups {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			run := question("u1", "agent-1", "fp-a")
			if err := st.SaveSkillRun(t.Context(), run, time.Hour); err != nil {
				t.Error(err)
			}
			dups[i] = run.Duplicate
		})
	}
	wg.Wait()
	firsts := 0
	for _, d := range dups {
		if !d {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d runs were not duplicates, want exactly 1: %v", firsts, dups)
	}
}

func TestListSkillRunsPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for i := range 5 {
			run := question("u1", fmt.Sprintf("agent-%d", i%2), "")
			if i == 4 {
				run.Skill = "post_views"
			}
			if err := s.SaveSkillRun(t.Context(), run, 0); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.ListSkillRunsPage(t.Context(), "u1", store.RunFilter{}, nil, 10)
		if err != nil || len(all) != 5 || all[0].Skill != "post_views" {
			t.Fatalf("all runs: %d, %v (newest first: %v)", len(all), err, all)
		}
		page, _ := s.ListSkillRunsPage(t.Context(), "u1", store.RunFilter{Skill: "terminal_state", SourceID: "agent-0"}, nil, 10)
		if len(page) != 2 {
			t.Errorf("terminal_state from agent-0: %d runs, want 2", len(page))
		}
		next, _ := s.ListSkillRunsPage(t.Context(), "u1", store.RunFilter{}, &store.TimeKey{CreatedAt: all[1].CreatedAt, ID: all[1].ID}, 10)
		if len(next) != 3 || next[0].ID != all[2].ID {
			t.Errorf("the page after the second: %d runs", len(next))
		}
		if other, _ := s.ListSkillRunsPage(t.Context(), "u2", store.RunFilter{}, nil, 10); len(other) != 0 {
			t.Errorf("another user sees %d runs", len(other))
		}
	})
}

// newJob stores a job of n inputs for u1.
func newJob(t *testing.T, s *store.Store, n int) *store.SkillJob {
	t.Helper()
	inputs := make([]store.JSON, n)
	for i := range inputs {
		inputs[i] = store.JSON(fmt.Sprintf(`{"content_text":"post %d"}`, i))
	}
	j := &store.SkillJob{UserID: "u1", Skill: "post_views", Locale: "en"}
	if err := s.CreateSkillJob(t.Context(), j, inputs); err != nil {
		t.Fatal(err)
	}
	return j
}

func runOf(u string, ok bool) *store.SkillRun {
	r := &store.SkillRun{UserID: u, Skill: "post_views", Version: "1", Status: store.RunSucceeded, Input: store.JSON(`{}`), Meta: store.JSON(`{}`)}
	if !ok {
		r.Status, r.Error = store.RunFailed, store.JSON(`{"code":"provider_error"}`)
	}
	return r
}

func TestSkillJobLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		j := newJob(t, s, 3)
		if j.Status != store.JobQueued || j.Total != 3 {
			t.Fatalf("new job %+v", j)
		}
		one := store.Lease{Owner: "replica-1", TTL: time.Hour}
		claimed, err := s.ClaimSkillJobs(t.Context(), one, 5)
		if err != nil || len(claimed) != 1 || claimed[0].Status != store.JobRunning || claimed[0].Owner != "replica-1" {
			t.Fatalf("claim: %+v, %v", claimed, err)
		}
		if again, _ := s.ClaimSkillJobs(t.Context(), store.Lease{Owner: "replica-2", TTL: time.Hour}, 5); len(again) != 0 {
			t.Fatalf("a running job with a live lease was claimed again: %+v", again)
		}
		items, _ := s.PendingJobItems(t.Context(), j.ID)
		if len(items) != 3 || items[2].Index != 2 || string(items[2].Input) != `{"content_text":"post 2"}` {
			t.Fatalf("pending items %+v", items)
		}
		for i, ok := range []bool{true, false} {
			if done, err := s.FinishJobItem(t.Context(), one, j.ID, i, runOf("u1", ok)); !done || err != nil {
				t.Fatalf("finish input %d: %v, %v", i, done, err)
			}
		}
		if done, err := s.FinishJobItem(t.Context(), one, j.ID, 0, runOf("u1", true)); done || err != nil {
			t.Errorf("input 0 finished twice: %v, %v", done, err)
		}
		lost := store.Lease{Owner: "replica-2", TTL: time.Hour}
		if _, err := s.FinishJobItem(t.Context(), lost, j.ID, 2, runOf("u1", true)); !errors.Is(err, store.ErrJobLost) {
			t.Errorf("a write by a replica that does not own the job: %v, want ErrJobLost", err)
		}
		progress, _ := s.SkillJobProgress(t.Context(), j.ID, 0)
		want := []store.JobProgress{{Seq: 1, Succeeded: 1, Failed: 0}, {Seq: 2, Succeeded: 1, Failed: 1}}
		if fmt.Sprint(progress) != fmt.Sprint(want) {
			t.Errorf("progress %v, want %v", progress, want)
		}
		if after, _ := s.SkillJobProgress(t.Context(), j.ID, 1); len(after) != 1 || after[0].Seq != 2 {
			t.Errorf("progress after 1: %v", after)
		}
		runs, _ := s.SkillJobRuns(t.Context(), j.ID)
		if len(runs) != 3 || runs[0] == "" || runs[1] == "" || runs[2] != "" {
			t.Errorf("runs %q", runs)
		}
		if err := s.EndSkillJob(t.Context(), one, j.ID, store.JobCompleted); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetSkillJob(t.Context(), j.ID, "u1")
		if got.Status != store.JobCompleted || got.Done != 2 || got.Succeeded != 1 || got.Failed != 1 {
			t.Errorf("job %+v", got)
		}
		if _, err := s.GetSkillJob(t.Context(), j.ID, "u2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another user's job: %v", err)
		}
	})
}

// A job whose owner stopped renewing is taken over once its lease runs out.
func TestSkillJobTakeover(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		j := newJob(t, s, 2)
		dead := store.Lease{Owner: "replica-dead", TTL: 50 * time.Millisecond}
		if claimed, _ := s.ClaimSkillJobs(t.Context(), dead, 1); len(claimed) != 1 {
			t.Fatal("not claimed")
		}
		if _, err := s.FinishJobItem(t.Context(), dead, j.ID, 0, runOf("u1", true)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		next := store.Lease{Owner: "replica-next", TTL: time.Hour}
		claimed, err := s.ClaimSkillJobs(t.Context(), next, 1)
		if err != nil || len(claimed) != 1 || claimed[0].Done != 1 {
			t.Fatalf("takeover: %+v, %v", claimed, err)
		}
		if owned, _ := s.RenewSkillJobs(t.Context(), dead, []string{j.ID}); len(owned) != 0 {
			t.Errorf("the old owner still renews: %v", owned)
		}
		if _, err := s.FinishJobItem(t.Context(), dead, j.ID, 1, runOf("u1", true)); !errors.Is(err, store.ErrJobLost) {
			t.Errorf("the old owner wrote after the takeover: %v", err)
		}
		if items, _ := s.PendingJobItems(t.Context(), j.ID); len(items) != 1 || items[0].Index != 1 {
			t.Errorf("pending after takeover: %+v", items)
		}
	})
}

func TestSkillJobCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		queued := newJob(t, s, 2)
		got, err := s.CancelSkillJob(t.Context(), queued.ID, "u1")
		if err != nil || got.Status != store.JobCancelled || !got.CancelRequested {
			t.Fatalf("cancel a queued job: %+v, %v", got, err)
		}
		if claimed, _ := s.ClaimSkillJobs(t.Context(), store.Lease{Owner: "r", TTL: time.Hour}, 5); len(claimed) != 0 {
			t.Errorf("a cancelled job was claimed")
		}
		running := newJob(t, s, 2)
		lease := store.Lease{Owner: "r", TTL: time.Hour}
		if claimed, _ := s.ClaimSkillJobs(t.Context(), lease, 5); len(claimed) != 1 {
			t.Fatal("not claimed")
		}
		got, _ = s.CancelSkillJob(t.Context(), running.ID, "u1")
		if got.Status != store.JobRunning || !got.CancelRequested {
			t.Errorf("a running job is left to its owner: %+v", got)
		}
		if owned, _ := s.RenewSkillJobs(t.Context(), lease, []string{running.ID}); !owned[running.ID] {
			t.Errorf("the renewal does not carry the cancel: %v", owned)
		}
		if _, err := s.CancelSkillJob(t.Context(), running.ID, "u2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another user cancelled: %v", err)
		}
	})
}
