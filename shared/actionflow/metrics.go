package actionflow

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Metrics receives the lifecycle's operational counters.
type Metrics interface {
	// UnknownOutcome counts a receipt sealed with outcome unknown.
	UnknownOutcome(tool string)
}

// NopMetrics discards metrics.
type NopMetrics struct{}

func (NopMetrics) UnknownOutcome(string) {}

// EMFMetrics writes CloudWatch Embedded Metric Format lines (namespace
// "OpenProgram/Lifecycle", metric "UnknownOutcomes"), which Lambda's log
// pipeline turns into metrics without an API call. The stack's alarm on
// unknown outcomes reads exactly this metric.
type EMFMetrics struct {
	mu sync.Mutex
	W  io.Writer
}

func (m *EMFMetrics) UnknownOutcome(tool string) {
	line := map[string]any{
		"_aws": map[string]any{
			"Timestamp": time.Now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "OpenProgram/Lifecycle",
				"Dimensions": [][]string{{}},
				"Metrics":    []any{map[string]string{"Name": "UnknownOutcomes", "Unit": "Count"}},
			}},
		},
		"UnknownOutcomes": 1,
		"level":           "WARN", // kept by a Lambda log level filter of WARN or lower
		"tool":            tool,
	}
	b, _ := json.Marshal(line)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.W.Write(append(b, '\n'))
}
