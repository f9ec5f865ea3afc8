package httpapi

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// BenchmarkSubmitRequestValidation is the CPU one submission's request
// validation costs, the figure to set against the allow path's CPU per
// action (BenchmarkLifecycle/allow in package embedded, cpu-µs/action):
//
//	go test -run '^$' -bench SubmitRequestValidation ./shared/httpapi/
//
// "decoder" is what the server does: the strict decode of the body (size
// limit, no unknown field, no trailing data, types) and the submit
// handler's checks of required fields. "spec-validator" is
// libopenapi-validator checking the same request (path, parameters,
// headers, body) against api/openapi.yaml.
func BenchmarkSubmitRequestValidation(b *testing.B) {
	body := []byte(`{"tool":"Bash","arguments":{"command":"ls -la /workspace","description":"list the files"},"tool_call_id":"toolu_01","interactive":true,"iteration_limit":50,"title":"Look around"}`)
	newRequest := func() *http.Request {
		r, _ := http.NewRequest("POST", "http://127.0.0.1:8080/v1/sessions/ses_bench/actions", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer x.y.z")
		r.Header.Set(IdempotencyHeader, "key-1")
		return r
	}
	b.Run("decoder", func(b *testing.B) {
		cpu := startCPU(b)
		for b.Loop() {
			var sb SubmitBody
			if err := decodeBody(newRequest(), DefaultMaxBodyBytes, &sb); err != nil {
				b.Fatal(err)
			}
			if sb.Tool == "" || len(sb.Arguments) == 0 || sb.Arguments[0] != '{' || sb.ToolCallID == "" || sb.Interactive == nil {
				b.Fatal("a required field is missing")
			}
		}
		cpu.report(b)
	})
	b.Run("spec-validator", func(b *testing.B) {
		raw, err := os.ReadFile(filepath.Join("..", "..", "api", "openapi.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		doc, err := libopenapi.NewDocument(raw)
		if err != nil {
			b.Fatal(err)
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		if ok, verrs := v.ValidateHttpRequestSync(newRequest()); !ok {
			for _, e := range verrs {
				b.Error(e.Message, e.Reason)
			}
			b.FailNow()
		}
		cpu := startCPU(b)
		for b.Loop() {
			if ok, _ := v.ValidateHttpRequestSync(newRequest()); !ok {
				b.Fatal("a valid submission was refused")
			}
		}
		cpu.report(b)
	})
}

// cpuMeter reports the process's CPU time (user and system, every
// thread: the garbage collector's share included) per operation.
type cpuMeter time.Duration

func startCPU(b *testing.B) cpuMeter {
	b.Helper()
	return cpuMeter(processCPU())
}

func (c cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64((processCPU()-time.Duration(c)).Nanoseconds())/1000/float64(b.N), "cpu-µs/request")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
