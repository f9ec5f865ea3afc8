package awscost

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Usage is what one action uses on AWS (averages per action).
type Usage struct {
	// Transitions are Standard state transitions (states entered).
	Transitions float64
	// Invocations are Lambda invocations by function name.
	Invocations map[string]Invocation
	// HTTPRequests are requests through the HTTP API.
	HTTPRequests float64
	// WriteUnits and ReadUnits are DynamoDB request units of the lifecycle
	// table, its indexes' writes included.
	WriteUnits, ReadUnits float64
	// Events are EventBridge entries published (each under 64 KB).
	Events float64
}

// Invocation is one function's share of an action: how many times it runs
// and the milliseconds billed in total (each invocation rounded up to 1 ms).
type Invocation struct {
	Count, BilledMs float64
}

// Line is one component of the cost of a million actions.
type Line struct {
	Component string
	Quantity  float64 // per action
	Unit      string
	Dollars   float64 // per million actions
}

// BilledMs rounds one invocation's duration in milliseconds up to Lambda's
// 1 ms billing granularity (at least 1 ms).
func BilledMs(ms float64) float64 {
	if ms <= 1 {
		return 1
	}
	return math.Ceil(ms)
}

// PerMillion prices a million actions of usage u with Lambda memory
// memoryMB (by function name). It fails naming a function that u invokes
// and memoryMB does not size, and on a negative quantity.
func (p Prices) PerMillion(u Usage, memoryMB map[string]float64) ([]Line, error) {
	for name, q := range map[string]float64{"transitions": u.Transitions, "http requests": u.HTTPRequests,
		"write units": u.WriteUnits, "read units": u.ReadUnits, "events": u.Events} {
		if q < 0 || math.IsNaN(q) {
			return nil, fmt.Errorf("awscost: %s per action is %v", name, q)
		}
	}
	const million = 1_000_000
	lines := []Line{{Component: "Step Functions Standard", Quantity: u.Transitions, Unit: "transitions",
		Dollars: u.Transitions * p.StandardTransition * million}}
	names := make([]string, 0, len(u.Invocations))
	for name := range u.Invocations {
		names = append(names, name)
	}
	sort.Strings(names)
	var requests float64
	for _, name := range names {
		inv := u.Invocations[name]
		mb, ok := memoryMB[name]
		if !ok || mb <= 0 {
			return nil, fmt.Errorf("awscost: no memory size for function %q (sized: %s)", name, strings.Join(keys(memoryMB), ", "))
		}
		if inv.Count < 0 || inv.BilledMs < 0 {
			return nil, fmt.Errorf("awscost: function %q: %v invocations, %v ms", name, inv.Count, inv.BilledMs)
		}
		requests += inv.Count
		gbs := inv.BilledMs / 1000 * mb / 1024
		lines = append(lines, Line{Component: fmt.Sprintf("Lambda %s duration (%.0f MB arm64)", name, mb),
			Quantity: inv.BilledMs, Unit: "ms", Dollars: gbs * p.LambdaARMGBSecond * million})
	}
	lines = append(lines,
		Line{Component: "Lambda requests", Quantity: requests, Unit: "invocations", Dollars: requests * p.LambdaRequest * million},
		Line{Component: "DynamoDB writes", Quantity: u.WriteUnits, Unit: "WRU", Dollars: u.WriteUnits * p.DynamoWRU * million},
		Line{Component: "DynamoDB reads", Quantity: u.ReadUnits, Unit: "RRU", Dollars: u.ReadUnits * p.DynamoRRU * million},
		Line{Component: "HTTP API", Quantity: u.HTTPRequests, Unit: "requests", Dollars: u.HTTPRequests * p.HTTPRequest * million},
		Line{Component: "EventBridge", Quantity: u.Events, Unit: "events", Dollars: u.Events * p.EventBridgeEvent * million},
	)
	return lines, nil
}

// Total sums the lines' dollars.
func Total(lines []Line) float64 {
	var t float64
	for _, l := range lines {
		t += l.Dollars
	}
	return t
}

// ExpressPerMillion is what a million Express executions cost that each
// run for durationMs with a state machine of memoryMB (rounded up to 64 MB
// chunks; at least 64), duration rounded up to 100 ms: the price of the
// workflow alone, which replaces the Standard transitions line.
func (p Prices) ExpressPerMillion(durationMs, memoryMB float64) float64 {
	chunks := math.Max(1, math.Ceil(memoryMB/64))
	billed := math.Max(1, math.Ceil(durationMs/100)) * 0.1 // seconds
	return (p.ExpressRequest + billed*chunks*64/1024*p.ExpressGBSecond) * 1_000_000
}

// Format renders lines as a table with a total: one row per component,
// its quantity per action and dollars per million actions.
func Format(title string, lines []Line) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "  %-40s %12s %-12s %14s\n", "component", "per action", "", "$ per million")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-40s %12.2f %-12s %14.2f\n", l.Component, l.Quantity, l.Unit, l.Dollars)
	}
	fmt.Fprintf(&b, "  %-40s %12s %-12s %14.2f\n", "total", "", "", Total(lines))
	return b.String()
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
