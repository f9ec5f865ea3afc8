package awscost

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestPerMillion(t *testing.T) {
	mem := map[string]float64{"authorize": 256, "approval": 128}
	tests := []struct {
		name    string
		u       Usage
		want    map[string]float64 // component -> dollars per million
		total   float64
		wantErr string
	}{
		{name: "transitions only", u: Usage{Transitions: 6},
			want: map[string]float64{"Step Functions Standard": 150}, total: 150},
		{name: "lambda at 256 MB: 1000 ms is a quarter GB-second",
			u:     Usage{Invocations: map[string]Invocation{"authorize": {Count: 1, BilledMs: 1000}}},
			want:  map[string]float64{"Lambda authorize duration (256 MB arm64)": 0.25 * 0.0000133334 * 1e6, "Lambda requests": 0.20},
			total: 0.25*0.0000133334*1e6 + 0.20},
		{name: "requests of every function add up",
			u:    Usage{Invocations: map[string]Invocation{"authorize": {Count: 2, BilledMs: 0}, "approval": {Count: 1, BilledMs: 0}}},
			want: map[string]float64{"Lambda requests": 0.60}, total: 0.60},
		{name: "dynamodb, http and events",
			u:    Usage{WriteUnits: 16, ReadUnits: 8, HTTPRequests: 2, Events: 3},
			want: map[string]float64{"DynamoDB writes": 10, "DynamoDB reads": 1, "HTTP API": 2, "EventBridge": 3}, total: 16},
		{name: "a function without a memory size", u: Usage{Invocations: map[string]Invocation{"dispatch": {Count: 1}}},
			wantErr: `no memory size for function "dispatch"`},
		{name: "a negative quantity", u: Usage{Transitions: -1}, wantErr: "transitions per action is -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := USEast1.PerMillion(tc.u, mem)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, l := range lines {
				got[l.Component] = l.Dollars
			}
			for c, d := range tc.want {
				if !near(got[c], d) {
					t.Errorf("%s = $%v, want $%v", c, got[c], d)
				}
			}
			if !near(Total(lines), tc.total) {
				t.Errorf("total = $%v, want $%v", Total(lines), tc.total)
			}
		})
	}
}

func TestBilledMs(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {0.2, 1}, {1, 1}, {1.01, 2}, {12.5, 13}, {40, 40}} {
		if got := BilledMs(tc.in); got != tc.want {
			t.Errorf("BilledMs(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestExpressPerMillion(t *testing.T) {
	tests := []struct {
		name              string
		durationMs, memMB float64
		want              float64
	}{
		// $1 per million requests + 0.1 s x 64 MB = 0.00625 GB-s x $0.00001667.
		{name: "under 100 ms, one chunk", durationMs: 40, memMB: 50, want: 1 + 0.00625*0.00001667*1e6},
		{name: "250 ms rounds to 300", durationMs: 250, memMB: 64, want: 1 + 0.3*0.0625*0.00001667*1e6},
		{name: "65 MB is two chunks", durationMs: 100, memMB: 65, want: 1 + 0.1*0.125*0.00001667*1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := USEast1.ExpressPerMillion(tc.durationMs, tc.memMB); !near(got, tc.want) {
				t.Errorf("= $%v, want $%v", got, tc.want)
			}
		})
	}
}

// The stack's real source: every function is sized, and the sizes are
// what the CDK template tests expect.
func TestFunctionMemoryOfTheStack(t *testing.T) {
	mem, err := FunctionMemory(filepath.Join("..", "..", "infra", "stack", "functions.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"authorize", "approval", "dispatch", "record", "project", "api", "recover"} {
		if mem[fn] <= 0 {
			t.Errorf("%s: memory %v", fn, mem[fn])
		}
	}
	if mem["approval"] != 128 || mem["authorize"] != 256 {
		t.Errorf("approval %v MB, authorize %v MB; want 128 and 256 as infra/stack deploys them", mem["approval"], mem["authorize"])
	}
}

func TestFunctionMemoryRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct{ name, src, wantErr string }{
		{name: "no table", src: "package stack\nconst FnA = \"a\"\n", wantErr: "has no functionSpecs"},
		{name: "memory not a literal", src: "package stack\nconst FnA = \"a\"\nvar m = 1.0\nvar functionSpecs = map[string]functionSpec{FnA: {memoryMB: m}}\n",
			wantErr: "memoryMB of a is not a number literal"},
		{name: "no memory", src: "package stack\nconst FnA = \"a\"\nvar functionSpecs = map[string]functionSpec{FnA: {name: FnA}}\n",
			wantErr: "a has no memoryMB"},
		{name: "unknown key", src: "package stack\nvar functionSpecs = map[string]functionSpec{FnB: {memoryMB: 1}}\n",
			wantErr: "FnB is not a string constant"},
		{name: "not Go", src: "package", wantErr: "read function memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "functions.go")
			os.WriteFile(p, []byte(tc.src), 0o644)
			_, err := FunctionMemory(p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	out := Format("allow", []Line{{Component: "HTTP API", Quantity: 2, Unit: "requests", Dollars: 2}, {Component: "EventBridge", Quantity: 3, Unit: "events", Dollars: 3}})
	for _, want := range []string{"allow\n", "HTTP API", "2.00", "total", "5.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
