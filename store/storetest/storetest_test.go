package storetest_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// recorder stands in for the test so that Fatal and Skip can be observed instead of ending
// the real test. Both end the calling goroutine, as the testing package does.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, args ...any) {
	r.fatal = fmt.Sprintf(f, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) { r.skip = fmt.Sprint(args...); runtime.Goexit() }

func TestUnreachablePostgres(t *testing.T) {
	cases := []struct {
		name              string
		ci                string
		wantFatal, wantSk bool
	}{
		{"skips on a developer machine", "", false, true},
		{"fails in CI", "true", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEST_DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable")
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				storetest.Postgres(r)
			}()
			<-done
			if (r.fatal != "") != tc.wantFatal || (r.skip != "") != tc.wantSk {
				t.Errorf("fatal %q, skip %q; want fatal %v, skip %v", r.fatal, r.skip, tc.wantFatal, tc.wantSk)
			}
		})
	}
}

func TestEach(t *testing.T) {
	var drivers []string
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		drivers = append(drivers, s.Driver())
	})
	if len(drivers) == 0 || drivers[len(drivers)-1] != store.DriverSQLite {
		t.Errorf("Each ran %v, want postgres (unless skipped) then sqlite", drivers)
	}
}
