package machineview

import (
	"encoding/json"
	"strings"
)

// TaskTokenHidden replaces a task token in event data.
const TaskTokenHidden = "(task token hidden)"

// HideTaskTokens removes every task token from the events' data. A task
// token completes a callback Task (an approval, a question, a host task):
// whoever holds it decides the wait, so it never leaves the lifecycle
// through a read. The definition says where tokens go (a parameter bound
// to "$$.Task.Token"); the values found there in the events are then
// replaced wherever they appear (inputs, outputs, causes).
func HideTaskTokens(def []byte, events []Event) {
	var doc any
	if json.Unmarshal(def, &doc) != nil {
		return
	}
	keys := map[string]bool{}
	tokenKeys(doc, keys)
	if len(keys) == 0 {
		return
	}
	tokens := map[string]bool{}
	for _, ev := range events {
		for _, s := range []*string{ev.Input, ev.Output} {
			var data any
			if s != nil && json.Unmarshal([]byte(*s), &data) == nil {
				tokenValues(data, keys, tokens)
			}
		}
	}
	if len(tokens) == 0 {
		return
	}
	var pairs []string
	for t := range tokens {
		enc, _ := json.Marshal(t)
		// As is, as JSON writes it, and with "/" escaped (JSON allows it).
		pairs = append(pairs, t, TaskTokenHidden, string(enc[1:len(enc)-1]), TaskTokenHidden,
			strings.ReplaceAll(t, "/", `\/`), TaskTokenHidden)
	}
	r := strings.NewReplacer(pairs...)
	for i := range events {
		ev := &events[i]
		for _, s := range []**string{&ev.Input, &ev.Output} {
			if *s != nil {
				v := r.Replace(**s)
				*s = &v
			}
		}
		ev.Cause = r.Replace(ev.Cause)
	}
}

// tokenKeys collects the names of parameters bound to the task token.
func tokenKeys(v any, keys map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && strings.HasSuffix(k, ".$") && strings.TrimSpace(s) == "$$.Task.Token" {
				keys[strings.TrimSuffix(k, ".$")] = true
			}
			tokenKeys(val, keys)
		}
	case []any:
		for _, e := range x {
			tokenKeys(e, keys)
		}
	}
}

// tokenValues collects the string values of those parameters in data.
func tokenValues(v any, keys, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && keys[k] && s != "" && s != TaskTokenHidden {
				out[s] = true
			}
			tokenValues(val, keys, out)
		}
	case []any:
		for _, e := range x {
			tokenValues(e, keys, out)
		}
	}
}
