package failures

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openprogram/lifecycle/shared/identity"
)

// Capacity is the one bound shared by the loop and the checkpoint
// serializer. Eviction bounds storage only: it never grants permission or
// resets a refusal counter (those are durable scalars in the store).
const Capacity = 16

// RepeatBudget is how many deterministic failures of one repeat identity,
// under unchanged conditions, are allowed before an equivalent repeat is
// suppressed.
const RepeatBudget = 1

// SchemaVersion of the serialized map.
const SchemaVersion = 1

// Entry is the recent failure record of one repeat identity.
type Entry struct {
	// Key is the repeat identity (identity.Identity.RepeatKey), or for a
	// legacy key whose tool contract is unknown, the legacy key verbatim.
	Key    string `json:"key"`
	Tool   string `json:"tool,omitempty"`
	Digest string `json:"digest,omitempty"`
	Count  int    `json:"count"`
	// ErrorCode of the last failure.
	ErrorCode string `json:"error_code,omitempty"`
	// Conditions fingerprints what the failure depended on (policy version,
	// workspace state...). A repeat under different conditions is not suppressed.
	Conditions string `json:"conditions,omitempty"`
	// Legacy marks a key loaded from the legacy shape that could not be
	// normalized (unknown tool contract or unparseable key).
	Legacy bool `json:"legacy,omitempty"`
}

// Map is the bounded recent-failure map. Entries are kept in recency order;
// recording a new failure beyond Capacity evicts the least recently recorded.
// The zero value is an empty map ready to use.
type Map struct {
	entries []Entry // oldest first
}

func (m *Map) index(key string) int {
	for i := range m.entries {
		if m.entries[i].Key == key {
			return i
		}
	}
	return -1
}

// Record notes a deterministic failure of the operation id under the given
// conditions and returns the updated entry.
func (m *Map) Record(id identity.Identity, errorCode, conditions string) Entry {
	key := id.RepeatKey()
	e := Entry{Key: key, Tool: id.Tool, Digest: id.Digest}
	if i := m.index(key); i >= 0 {
		e = m.entries[i]
		m.entries = append(m.entries[:i], m.entries[i+1:]...)
		if e.Conditions != conditions {
			e.Count = 0 // conditions changed: a fresh budget
		}
	}
	e.Count++
	e.ErrorCode = errorCode
	e.Conditions = conditions
	m.entries = append(m.entries, e)
	if len(m.entries) > Capacity {
		m.entries = append([]Entry(nil), m.entries[len(m.entries)-Capacity:]...)
	}
	return e
}

// Clear forgets an identity (after it succeeded).
func (m *Map) Clear(id identity.Identity) {
	if i := m.index(id.RepeatKey()); i >= 0 {
		m.entries = append(m.entries[:i], m.entries[i+1:]...)
	}
}

// Get returns the entry of an identity.
func (m *Map) Get(id identity.Identity) (Entry, bool) {
	if i := m.index(id.RepeatKey()); i >= 0 {
		return m.entries[i], true
	}
	return Entry{}, false
}

// Suppressed reports whether an equivalent repeat of id under conditions
// must be suppressed: it already failed RepeatBudget times under the same
// conditions. Changing an execution-relevant argument changes the identity;
// changing only a presentation field (Bash's description) does not.
func (m *Map) Suppressed(id identity.Identity, conditions string) (Entry, bool) {
	e, ok := m.Get(id)
	if !ok || e.Conditions != conditions {
		return e, false
	}
	return e, e.Count >= RepeatBudget
}

// Len is the number of entries (never more than Capacity).
func (m *Map) Len() int { return len(m.entries) }

// Entries returns a copy of the entries, oldest first.
func (m *Map) Entries() []Entry { return append([]Entry(nil), m.entries...) }

type serialized struct {
	Version  int     `json:"version"`
	Capacity int     `json:"capacity"`
	Entries  []Entry `json:"entries"`
}

// MarshalJSON writes the current shape. It never fails because of the
// number of entries: the map can hold no more than Capacity.
func (m Map) MarshalJSON() ([]byte, error) {
	es := m.entries
	if es == nil {
		es = []Entry{}
	}
	return json.Marshal(serialized{Version: SchemaVersion, Capacity: Capacity, Entries: es})
}

// UnmarshalJSON loads either the current shape or the legacy shape.
//
// Current: {"version":1,"capacity":16,"entries":[{"key":...,"count":...},...]}.
// A serialized map with more than Capacity entries (written by a build with
// a larger bound) loads its most recent Capacity entries, never an error.
//
// Legacy (checkpoints written before identities were normalized): a plain
// object {"<Tool>:<arguments JSON as the model sent it>": <count>, ...},
// optionally wrapped as {"recent_failures": {...}}. A key whose tool has a
// known contract is normalized to tool + canonical digest (so a Bash key that
// differs only in description merges with its twin); any other key is kept
// verbatim and marked Legacy. Because a Go map has no order, legacy entries
// are ordered by count, then key, and the Capacity highest kept.
func (m *Map) UnmarshalJSON(b []byte) error {
	return m.load(b, identity.Builtin)
}

func (m *Map) load(b []byte, contracts identity.Contracts) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		m.entries = nil
		return nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("recent failures: %w", err)
	}
	if _, ok := probe["entries"]; ok {
		var s serialized
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("recent failures: %w", err)
		}
		if s.Version > SchemaVersion {
			return fmt.Errorf("recent failures: schema version %d is newer than %d", s.Version, SchemaVersion)
		}
		es := s.Entries
		if len(es) > Capacity {
			es = es[len(es)-Capacity:]
		}
		m.entries = append([]Entry(nil), es...)
		return nil
	}
	if inner, ok := probe["recent_failures"]; ok {
		probe = nil
		if err := json.Unmarshal(inner, &probe); err != nil {
			return fmt.Errorf("legacy recent failures: %w", err)
		}
	}
	merged := map[string]Entry{}
	for k, raw := range probe {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("legacy recent failures: count of %q: %w", k, err)
		}
		e := normalizeLegacy(k, contracts)
		prev := merged[e.Key]
		e.Count = prev.Count + n
		merged[e.Key] = e
	}
	es := make([]Entry, 0, len(merged))
	for _, e := range merged {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Count != es[j].Count {
			return es[i].Count < es[j].Count
		}
		return es[i].Key > es[j].Key
	})
	if len(es) > Capacity {
		es = es[len(es)-Capacity:]
	}
	m.entries = es
	return nil
}

func normalizeLegacy(key string, contracts identity.Contracts) Entry {
	tool, args, ok := strings.Cut(key, ":")
	if ok {
		if _, known := contracts.Lookup(tool); known {
			if id, err := contracts.Of(tool, json.RawMessage(args)); err == nil {
				return Entry{Key: id.RepeatKey(), Tool: id.Tool, Digest: id.Digest}
			}
		}
	}
	if !ok {
		tool = ""
	}
	return Entry{Key: key, Tool: tool, Legacy: true}
}
