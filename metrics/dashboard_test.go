package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v4"
)

// TestDashboardAndAlertsQueryRealMetrics: every metric the Grafana dashboard's panels and
// the alert rules query (docs/grafana) is one the registry defines, so neither can drift
// from the code.
func TestDashboardAndAlertsQueryRealMetrics(t *testing.T) {
	defined := definedNames(t)
	var exprs []string
	b, err := os.ReadFile("../docs/grafana/phaseflow-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	b, err = os.ReadFile("../docs/grafana/phaseflow-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%d queries in the dashboard and rules", len(exprs))
	}
	name := regexp.MustCompile(`\b(phaseflow|go_sql|process|go)_[a-z_]+\b`)
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			if !defined[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] {
				t.Errorf("%s queries %s, which the registry does not define", e, n)
			}
		}
	}
}

// definedNames are the metric names the registry describes, families without a series yet
// included (a scrape shows a labelled family only once it has one).
func definedNames(t *testing.T) map[string]bool {
	t.Helper()
	m := New()
	if err := m.RegisterEndpoints(func() []EndpointState { return nil }); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 256)
	go func() { m.reg.Describe(ch); close(ch) }()
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if mm := fq.FindStringSubmatch(d.String()); mm != nil {
			names[mm[1]] = true
		}
	}
	if !names["phaseflow_turns_total"] {
		t.Fatalf("the registry describes no phaseflow_turns_total: %v", names)
	}
	return names
}
