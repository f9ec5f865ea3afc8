package sfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// Handler must survive concurrent invocations of one handler: every caller
// gets its own response.
func TestHandlerConcurrentResponses(t *testing.T) {
	f := Handler(func(_ context.Context, in map[string]string) (map[string]string, error) {
		return map[string]string{"echo": in["v"]}, nil
	})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				v := fmt.Sprintf("g%d-%d", g, i)
				out, err := f(context.Background(), []byte(`{"v":"`+v+`"}`))
				var m map[string]string
				if err != nil || json.Unmarshal(out, &m) != nil || m["echo"] != v {
					errs <- fmt.Sprintf("call %s got %s, %v", v, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestHandlerErrorsAreLambdaErrors(t *testing.T) {
	f := Handler(func(context.Context, json.RawMessage) (string, error) { return "", &TransientError{msg: "later"} })
	res := runFunction(context.Background(), f, []byte(`{}`))
	if res.errName != "TransientError" || res.cause != `{"errorMessage":"later","errorType":"TransientError"}` {
		t.Fatalf("got %q %q", res.errName, res.cause)
	}
	// A payload the handler cannot decode fails as it fails in AWS.
	g := Handler(func(context.Context, struct{ N int }) (string, error) { return "", nil })
	res = runFunction(context.Background(), g, []byte(`{"N": "x"}`))
	if res.errName != "UnmarshalTypeError" {
		t.Fatalf("decode failure named %q", res.errName)
	}
}
