package sfnlocal

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// History larger than packAbove is stored compressed and reads back the
// same, event for event; small history stays plain JSON.
func TestHistoryPacking(t *testing.T) {
	for _, n := range []int{2, 40} {
		r := &record{StateMachine: "m", Name: "x", Input: "{}", Status: statusRunning}
		for i := 0; i < n; i++ {
			r.addEvent(time.UnixMilli(int64(i)), event{Type: "PassStateEntered", StateEntered: &stateDetails{Name: "S", Input: strp(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 100)))}})
		}
		want := append([]json.RawMessage(nil), r.Events...)
		it, err := r.item(1)
		if err != nil {
			t.Fatal(err)
		}
		packed := strings.Contains(string(it.Body), `"packed":`)
		if packed != (n > 2) {
			t.Fatalf("%d events: packed=%v (%d bytes)", n, packed, len(it.Body))
		}
		got, err := decodeRecord(it)
		if err == nil {
			err = got.unpack()
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != len(want) || got.Packed != nil {
			t.Fatalf("%d events: read back %d (packed left %d bytes)", n, len(got.Events), len(got.Packed))
		}
		for i := range want {
			if string(got.Events[i]) != string(want[i]) {
				t.Fatalf("event %d: %s, want %s", i, got.Events[i], want[i])
			}
		}
		le := logEntry{From: 1, To: int64(n), Events: want}
		b, err := le.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeLogEntry(b)
		if err != nil || len(back.Events) != n || string(back.Events[n-1]) != string(want[n-1]) {
			t.Fatalf("log entry of %d events: %v", n, err)
		}
	}
}
