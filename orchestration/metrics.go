package orchestration

import "github.com/phaseflow/phaseflow/orchestration/report"

// Metrics receives what operators alert on about turns (package metrics implements it;
// package report says what each turn reports).
type Metrics = report.Metrics
