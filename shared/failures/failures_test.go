package failures

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/openprogram/lifecycle/shared/identity"
)

func bashID(t *testing.T, cmd, desc string) identity.Identity {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"command": cmd, "description": desc})
	id, err := identity.Of("Bash", b)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestMoreThanCapacityDistinctFailures(t *testing.T) {
	var m Map
	for i := 0; i < 40; i++ {
		m.Record(bashID(t, fmt.Sprintf("false %d", i), "d"), "exit_1", "p1")
		if m.Len() > Capacity {
			t.Fatalf("len %d > capacity", m.Len())
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("serialize 40 distinct failures: %v", err)
	}
	var back Map
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("load: %v", err)
	}
	if back.Len() != Capacity {
		t.Fatalf("loaded %d entries", back.Len())
	}
	if _, ok := back.Get(bashID(t, "false 39", "d")); !ok {
		t.Fatal("most recent failure evicted")
	}
	if _, ok := back.Get(bashID(t, "false 0", "d")); ok {
		t.Fatal("oldest failure kept beyond capacity")
	}
}

func TestOversizedSerializedMapLoads(t *testing.T) {
	s := serialized{Version: 1, Capacity: 64}
	for i := 0; i < 64; i++ {
		s.Entries = append(s.Entries, Entry{Key: fmt.Sprintf("k%d", i), Count: 1})
	}
	b, _ := json.Marshal(s)
	var m Map
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Len() != Capacity || m.Entries()[Capacity-1].Key != "k63" {
		t.Fatalf("got %d entries, last %v", m.Len(), m.Entries()[m.Len()-1])
	}
}

func TestSuppression(t *testing.T) {
	var m Map
	id := bashID(t, "make test", "run tests")
	if _, s := m.Suppressed(id, "p1"); s {
		t.Fatal("suppressed before any failure")
	}
	m.Record(id, "exit_2", "p1")
	if _, s := m.Suppressed(bashID(t, "make test", "try again, differently worded"), "p1"); !s {
		t.Fatal("a description-only change bypassed repeat suppression")
	}
	if _, s := m.Suppressed(bashID(t, "make test -k", "run tests"), "p1"); s {
		t.Fatal("changed executable arguments were suppressed")
	}
	if _, s := m.Suppressed(id, "p2"); s {
		t.Fatal("changed conditions were suppressed")
	}
	m.Clear(id)
	if _, s := m.Suppressed(id, "p1"); s {
		t.Fatal("cleared entry still suppresses")
	}
}

// The legacy shape: {"recent_failures": {"<Tool>:<args as sent>": count}}.
func TestLegacyCheckpointLoads(t *testing.T) {
	legacy := `{"recent_failures": {
	  "Bash:{\"command\":\"make test\",\"description\":\"run tests\"}": 2,
	  "Bash:{\"description\":\"again\",\"command\":\"make test\"}": 1,
	  "create_ticket:{\"title\":\"a\",\"description\":\"x\"}": 1,
	  "garbage without colon": 3
	}}`
	var m Map
	if err := json.Unmarshal([]byte(legacy), &m); err != nil {
		t.Fatal(err)
	}
	e, ok := m.Get(bashID(t, "make test", "anything"))
	if !ok || e.Count != 3 || e.Legacy {
		t.Fatalf("Bash legacy keys not normalized and merged: %+v ok=%v all=%+v", e, ok, m.Entries())
	}
	var userKept, garbageKept bool
	for _, e := range m.Entries() {
		if e.Key == `create_ticket:{"title":"a","description":"x"}` && e.Legacy {
			userKept = true
		}
		if e.Key == "garbage without colon" && e.Legacy && e.Count == 3 {
			garbageKept = true
		}
	}
	if !userKept || !garbageKept {
		t.Fatalf("unknown-contract keys must be kept verbatim: %+v", m.Entries())
	}
	// Round trip in the current shape.
	b, _ := json.Marshal(m)
	var back Map
	if err := json.Unmarshal(b, &back); err != nil || back.Len() != m.Len() {
		t.Fatalf("round trip: %v %d/%d", err, back.Len(), m.Len())
	}
	// A legacy map larger than capacity still loads.
	big := map[string]int{}
	for i := 0; i < 50; i++ {
		big[fmt.Sprintf("Bash:{\"command\":\"c%d\"}", i)] = i + 1
	}
	bb, _ := json.Marshal(big)
	var bm Map
	if err := json.Unmarshal(bb, &bm); err != nil || bm.Len() != Capacity {
		t.Fatalf("big legacy: %v len %d", err, bm.Len())
	}
}
