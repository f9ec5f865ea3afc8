package awsmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// lambdaService is the Lambda Invoke API on loopback: it routes
// POST /2015-03-31/functions/{name or ARN}/invocations to a Runtime
// Interface Emulator process running that function's binary. The emulator
// serves one function, under the fixed name "function", one invocation at
// a time (a second concurrent invocation crashes it), so this front door
// does what Lambda's own front end does: route by name, and run each
// invocation in an idle execution environment, starting another one (a
// cold start) when all are busy, up to the function's concurrency.
//
// Two things the emulator does not do, which this front door adds as
// Lambda does them: a failed invocation is answered with the
// X-Amz-Function-Error: Unhandled header (the emulator returns the error
// payload with a plain 200, or with 502 for its own Runtime.ExitError when
// the function process died), and an environment that dies whole during an
// invocation (the emulator killed too) is answered with the same
// Runtime.ExitError function error and replaced by a fresh one on the next
// invocation.
type lambdaService struct {
	rie     string
	logDir  string
	mu      sync.Mutex
	fns     map[string]*function
	closing atomic.Bool
}

// function is one deployed function: its binary, its environment, its
// concurrency.
type function struct {
	svc     *lambdaService
	name    string
	bin     string
	env     []string
	timeout time.Duration
	slots   chan struct{}

	mu   sync.Mutex
	idle []*sandbox
	busy map[*sandbox]bool
	all  []*sandbox
	// invocations counts the invocations answered (any outcome).
	invocations atomic.Int64
	crashes     atomic.Int64
}

// sandbox is one execution environment: an emulator process (and the
// function process it starts) in its own process group.
type sandbox struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

func newLambdaService(rie, logDir string) *lambdaService {
	return &lambdaService{rie: rie, logDir: logDir, fns: map[string]*function{}}
}

// add deploys a function: bin runs with env (plus what Lambda sets),
// timeout bounds an invocation, concurrency bounds its environments.
func (s *lambdaService) add(name, bin string, env map[string]string, timeout time.Duration, memoryMB, concurrency int) *function {
	vars := []string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_NAME=" + name,
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(timeout/time.Second)),
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", memoryMB),
		// The emulator's own log lines (START/END/REPORT stay).
		"LOG_LEVEL=warn",
	}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	f := &function{svc: s, name: name, bin: bin, env: vars, timeout: timeout, slots: make(chan struct{}, concurrency), busy: map[*sandbox]bool{}}
	s.mu.Lock()
	s.fns[name] = f
	s.mu.Unlock()
	return f
}

func (s *lambdaService) function(name string) *function {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fns[name]
}

// close kills every environment (process groups) and waits for them.
func (s *lambdaService) close() {
	s.closing.Store(true)
	s.mu.Lock()
	fns := make([]*function, 0, len(s.fns))
	for _, f := range s.fns {
		fns = append(fns, f)
	}
	s.mu.Unlock()
	for _, f := range fns {
		f.mu.Lock()
		all := append([]*sandbox(nil), f.all...)
		f.mu.Unlock()
		for _, sb := range all {
			sb.kill()
		}
	}
}

func (sb *sandbox) kill() {
	if sb.cmd.Process != nil {
		// The whole group: the emulator and the function it runs.
		_ = syscall.Kill(-sb.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-sb.exited
}

func (sb *sandbox) alive() bool {
	select {
	case <-sb.exited:
		return false
	default:
		return true
	}
}

// freePort is a loopback port nobody listened on a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port), nil
}

// start launches one environment and waits until its emulator accepts
// connections (it starts the function on the first invocation, as a cold
// start does). A port taken in between makes the emulator exit: try again.
func (f *function) start() (*sandbox, error) {
	var last error
	for try := 0; try < 3; try++ {
		sb, err := f.startOnce()
		if err == nil {
			return sb, nil
		}
		last = err
	}
	return nil, last
}

func (f *function) startOnce() (*sandbox, error) {
	p1, err := freePort()
	if err != nil {
		return nil, err
	}
	p2, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(f.svc.logDir, f.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(f.svc.rie,
		"--runtime-interface-emulator-address", "127.0.0.1:"+p1,
		"--runtime-api-address", "127.0.0.1:"+p2,
		f.bin)
	cmd.Env = f.env
	cmd.Dir = f.svc.logDir
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (killed as one), and killed by the kernel if the
	// test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the emulator for %s: %w", f.name, err)
	}
	sb := &sandbox{url: "http://127.0.0.1:" + p1, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(sb.exited)
	}()
	f.mu.Lock()
	f.all = append(f.all, sb)
	f.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p1, time.Second)
		if err == nil {
			c.Close()
			return sb, nil
		}
		if !sb.alive() {
			return nil, fmt.Errorf("the emulator for %s exited before it listened on %s (see %s.log)", f.name, p1, f.name)
		}
		if time.Now().After(deadline) {
			sb.kill()
			return nil, fmt.Errorf("the emulator for %s did not listen on %s within 30s", f.name, p1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// acquire takes an idle environment or starts one, waiting while the
// function's concurrency is used up.
func (f *function) acquire(ctx context.Context) (*sandbox, error) {
	select {
	case f.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	for len(f.idle) > 0 {
		sb := f.idle[len(f.idle)-1]
		f.idle = f.idle[:len(f.idle)-1]
		if sb.alive() {
			f.busy[sb] = true
			f.mu.Unlock()
			return sb, nil
		}
	}
	f.mu.Unlock()
	sb, err := f.start()
	if err != nil {
		<-f.slots
		return nil, err
	}
	f.mu.Lock()
	f.busy[sb] = true
	f.mu.Unlock()
	return sb, nil
}

func (f *function) release(sb *sandbox) {
	f.mu.Lock()
	delete(f.busy, sb)
	if sb.alive() {
		f.idle = append(f.idle, sb)
	}
	f.mu.Unlock()
	<-f.slots
}

// killBusy kills the environments running an invocation now, as a crash
// of the function's process would; it reports how many it killed.
func (f *function) killBusy() int {
	f.mu.Lock()
	var victims []*sandbox
	for sb := range f.busy {
		victims = append(victims, sb)
	}
	f.mu.Unlock()
	for _, sb := range victims {
		sb.kill()
	}
	return len(victims)
}

// killBusyFunction kills the function processes (the emulator's children)
// of the environments running an invocation now, leaving the emulators up:
// they answer the invocation with Runtime.ExitError and start the function
// again on the next one, as Lambda does. It reports how many it killed.
func (f *function) killBusyFunction() int {
	f.mu.Lock()
	var victims []*sandbox
	for sb := range f.busy {
		victims = append(victims, sb)
	}
	f.mu.Unlock()
	n := 0
	for _, sb := range victims {
		// The emulator is a Go program: any of its threads may have started
		// the function, so every thread's children are read.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", sb.cmd.Process.Pid))
		var children []string
		for _, p := range tasks {
			if b, err := os.ReadFile(p); err == nil {
				children = append(children, strings.Fields(string(b))...)
			}
		}
		for _, c := range children {
			var child int
			if _, err := fmt.Sscan(c, &child); err == nil && syscall.Kill(child, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// ServeHTTP is the Invoke API (RequestResponse only: nothing here invokes
// asynchronously).
func (s *lambdaService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		lambdaAPIError(w, http.StatusNotFound, "ResourceNotFoundException", "no such operation: "+r.Method+" "+r.URL.Path)
		return
	}
	name, _ = url.PathUnescape(name)
	// A name, or an ARN arn:aws:lambda:<region>:<account>:function:<name>.
	if i := strings.LastIndex(name, ":function:"); i >= 0 {
		name = name[i+len(":function:"):]
	}
	f := s.function(name)
	if f == nil {
		lambdaAPIError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		lambdaAPIError(w, http.StatusBadRequest, "InvalidParameterValueException", "only RequestResponse invocations are served here, not "+t)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		lambdaAPIError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	// The invocation runs to its end even if the caller goes away (a
	// killed caller does not stop a Lambda invocation); the environment is
	// only reused once it is idle again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), f.timeout+30*time.Second)
	defer cancel()
	sb, err := f.acquire(ctx)
	if err != nil {
		lambdaAPIError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	defer f.release(sb)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sb.url+"/2015-03-31/functions/function/invocations", bytes.NewReader(body))
	if err != nil {
		lambdaAPIError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	if cc := r.Header.Get("X-Amz-Client-Context"); cc != "" {
		req.Header.Set("X-Amz-Client-Context", cc)
	}
	out, status, err := roundTrip(req)
	f.invocations.Add(1)
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case err != nil || !sb.alive():
		// The environment died mid-invocation: Lambda's answer.
		f.crashes.Add(1)
		sb.kill()
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		json.NewEncoder(w).Encode(map[string]string{"errorType": "Runtime.ExitError",
			"errorMessage": fmt.Sprintf("Error: Runtime exited with error: signal: killed (%v)", err)})
	case isErrorPayload(out):
		// A function error, or (status 502) the emulator's own
		// Runtime.ExitError for a function process that died: Lambda
		// answers both with 200 and the header.
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		w.Write(out)
	case status != http.StatusOK:
		lambdaAPIError(w, http.StatusBadGateway, "ServiceException", fmt.Sprintf("the emulator answered %d: %s", status, out))
	case bytes.HasPrefix(out, []byte("Task timed out after")):
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		json.NewEncoder(w).Encode(map[string]string{"errorMessage": string(out)})
	default:
		w.Write(out)
	}
}

func roundTrip(req *http.Request) ([]byte, int, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return out, resp.StatusCode, err
}

// isErrorPayload: the runtime's error document, {"errorMessage",
// "errorType"[, "stackTrace"]} and nothing else. No handler of this
// project returns such an object as a result.
func isErrorPayload(b []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	if _, ok := m["errorType"]; !ok {
		return false
	}
	for k := range m {
		if k != "errorType" && k != "errorMessage" && k != "stackTrace" {
			return false
		}
	}
	return true
}

// lambdaAPIError is an error of the Lambda API itself (not the function's).
func lambdaAPIError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Type": "Service", "message": msg})
}

func (s *lambdaService) logTail(t *testing.T) {
	t.Helper()
	entries, _ := filepath.Glob(filepath.Join(s.logDir, "*.log"))
	for _, p := range entries {
		b, _ := os.ReadFile(p)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s (tail)\n%s", filepath.Base(p), b)
	}
}
