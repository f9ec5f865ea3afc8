package question

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Kinds of question.
const (
	KindSingle   = "single"
	KindMultiple = "multiple"
	KindConfirm  = "confirm"
	KindText     = "text"
	KindForm     = "form"
)

// Field types of a form.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
)

// Limits keep a request small enough for one card and one item.
const (
	MaxQuestions = 8
	MaxOptions   = 20
	MaxFields    = 30
	MaxTextBytes = 16 << 10
)

// Option is one choice of a single or multiple question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// FormField is one named field of a form question.
type FormField struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Required bool              `json:"required,omitempty"`
	Enum     []json.RawMessage `json:"enum,omitempty"`
	Label    string            `json:"label,omitempty"`
}

// Question is one question of a request, normalized (ID and Kind set).
type Question struct {
	ID          string      `json:"id"`
	Question    string      `json:"question"`
	Header      string      `json:"header,omitempty"`
	Kind        string      `json:"kind"`
	Options     []Option    `json:"options,omitempty"`
	MultiSelect bool        `json:"multiSelect,omitempty"`
	Fields      []FormField `json:"fields,omitempty"`
}

// Request is the arguments of AskUserQuestion, normalized.
type Request struct {
	Questions []Question `json:"questions"`
}

// Problem is one invalid part of a request or an answer, named by its
// JSON path ("questions[1].options", "answers.q2").
type Problem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

func (p Problem) Error() string { return p.Field + ": " + p.Problem }

// Parse reads and normalizes a request. Problems name the field; a request
// with problems is never returned half-normalized.
func Parse(args json.RawMessage) (Request, []Problem) {
	var raw struct {
		Questions *[]json.RawMessage `json:"questions"`
	}
	var probs []Problem
	add := func(f, format string, a ...any) { probs = append(probs, Problem{f, fmt.Sprintf(format, a...)}) }
	top := map[string]json.RawMessage{}
	if err := json.Unmarshal(args, &top); err != nil || top == nil {
		return Request{}, []Problem{{"arguments", "must be a JSON object with a questions array"}}
	}
	for k := range top {
		if k != "questions" && k != "metadata" && k != "answers" {
			add(k, "not an argument of AskUserQuestion (it takes questions)")
		}
	}
	if err := json.Unmarshal(args, &raw); err != nil || raw.Questions == nil {
		add("questions", "required: an array of 1 to %d questions", MaxQuestions)
		return Request{}, sorted(probs)
	}
	qs := *raw.Questions
	if len(qs) == 0 || len(qs) > MaxQuestions {
		add("questions", "must hold 1 to %d questions, has %d", MaxQuestions, len(qs))
		return Request{}, sorted(probs)
	}
	var req Request
	seen := map[string]bool{}
	for i, rq := range qs {
		f := fmt.Sprintf("questions[%d]", i)
		var q Question
		dec := json.NewDecoder(bytes.NewReader(rq))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			add(f, "%s", strings.TrimPrefix(err.Error(), "json: "))
			continue
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("q%d", i+1)
		}
		if !validID(q.ID) {
			add(f+".id", "%q: use letters, digits, _ or - (at most 64)", q.ID)
		} else if seen[q.ID] {
			add(f+".id", "%q is used by an earlier question", q.ID)
		}
		seen[q.ID] = true
		if strings.TrimSpace(q.Question) == "" {
			add(f+".question", "required: the text the person reads")
		}
		if q.Kind == "" {
			q.Kind = KindSingle
			if q.MultiSelect {
				q.Kind = KindMultiple
			}
		}
		switch q.Kind {
		case KindSingle, KindMultiple:
			if q.MultiSelect && q.Kind == KindSingle {
				add(f+".multiSelect", "true contradicts kind single")
			}
			if len(q.Options) < 2 || len(q.Options) > MaxOptions {
				add(f+".options", "a %s question needs 2 to %d options, has %d", q.Kind, MaxOptions, len(q.Options))
			}
			labels := map[string]bool{}
			for j, o := range q.Options {
				switch {
				case strings.TrimSpace(o.Label) == "":
					add(fmt.Sprintf("%s.options[%d].label", f, j), "required")
				case labels[o.Label]:
					add(fmt.Sprintf("%s.options[%d].label", f, j), "%q is used by an earlier option", o.Label)
				}
				labels[o.Label] = true
			}
		case KindConfirm, KindText:
			if len(q.Options) > 0 {
				add(f+".options", "a %s question takes no options", q.Kind)
			}
		case KindForm:
			if len(q.Options) > 0 {
				add(f+".options", "a form takes fields, not options")
			}
			probs = append(probs, checkFields(f, q.Fields)...)
		default:
			add(f+".kind", "%q is not single, multiple, confirm, text or form", q.Kind)
		}
		if q.Kind != KindForm && len(q.Fields) > 0 {
			add(f+".fields", "only a form question takes fields")
		}
		req.Questions = append(req.Questions, q)
	}
	if len(probs) > 0 {
		return Request{}, sorted(probs)
	}
	return req, nil
}

func checkFields(f string, fields []FormField) []Problem {
	var probs []Problem
	if len(fields) == 0 || len(fields) > MaxFields {
		return []Problem{{f + ".fields", fmt.Sprintf("a form needs 1 to %d fields, has %d", MaxFields, len(fields))}}
	}
	names := map[string]bool{}
	for k, fd := range fields {
		ff := fmt.Sprintf("%s.fields[%d]", f, k)
		switch {
		case !validID(fd.Name):
			probs = append(probs, Problem{ff + ".name", fmt.Sprintf("%q: use letters, digits, _ or - (at most 64)", fd.Name)})
		case names[fd.Name]:
			probs = append(probs, Problem{ff + ".name", fmt.Sprintf("%q is used by an earlier field", fd.Name)})
		}
		names[fd.Name] = true
		switch fd.Type {
		case TypeString, TypeNumber, TypeInteger, TypeBoolean:
		default:
			probs = append(probs, Problem{ff + ".type", fmt.Sprintf("%q is not string, number, integer or boolean", fd.Type)})
			continue
		}
		for e, v := range fd.Enum {
			if p := checkValue(fd.Type, v); p != "" {
				probs = append(probs, Problem{fmt.Sprintf("%s.enum[%d]", ff, e), p})
			}
		}
	}
	return probs
}

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func sorted(p []Problem) []Problem {
	sort.SliceStable(p, func(i, j int) bool { return p[i].Field < p[j].Field })
	return p
}

// CheckAnswers validates answers (question id → value) against the
// request: every question answered, no unknown id, each value of its
// question's kind. The problems name "answers.<id>" (or
// "answers.<id>.<field>" in a form) and are sorted.
func (r Request) CheckAnswers(answers map[string]json.RawMessage) []Problem {
	var probs []Problem
	known := map[string]bool{}
	for _, q := range r.Questions {
		known[q.ID] = true
		f := "answers." + q.ID
		v, ok := answers[q.ID]
		if !ok || isNull(v) {
			probs = append(probs, Problem{f, "required: every question of the request is answered together (or skip the request)"})
			continue
		}
		probs = append(probs, q.checkAnswer(f, v)...)
	}
	for id := range answers {
		if !known[id] {
			probs = append(probs, Problem{"answers." + id, "no question has this id"})
		}
	}
	return sorted(probs)
}

func (q Question) checkAnswer(f string, v json.RawMessage) []Problem {
	one := func(msg string, a ...any) []Problem { return []Problem{{f, fmt.Sprintf(msg, a...)}} }
	switch q.Kind {
	case KindSingle:
		var s string
		if json.Unmarshal(v, &s) != nil {
			return one("a single-choice answer is one option label (a string)")
		}
		if !q.hasOption(s) {
			return one("%q is not an option (%s)", s, q.labels())
		}
	case KindMultiple:
		var ss []string
		if json.Unmarshal(v, &ss) != nil {
			return one("a multiple-choice answer is an array of option labels")
		}
		if len(ss) == 0 {
			return one("choose at least one option")
		}
		seen := map[string]bool{}
		for _, s := range ss {
			if !q.hasOption(s) {
				return one("%q is not an option (%s)", s, q.labels())
			}
			if seen[s] {
				return one("%q is chosen twice", s)
			}
			seen[s] = true
		}
	case KindConfirm:
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return one("a confirmation is true or false")
		}
	case KindText:
		var s string
		if json.Unmarshal(v, &s) != nil {
			return one("a text answer is a string")
		}
		if len(s) > MaxTextBytes {
			return one("longer than %d bytes", MaxTextBytes)
		}
	case KindForm:
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			return one("a form answer is an object of field values")
		}
		var probs []Problem
		names := map[string]bool{}
		for _, fd := range q.Fields {
			names[fd.Name] = true
			fv, ok := m[fd.Name]
			if !ok || isNull(fv) {
				if fd.Required {
					probs = append(probs, Problem{f + "." + fd.Name, "required"})
				}
				continue
			}
			if p := checkValue(fd.Type, fv); p != "" {
				probs = append(probs, Problem{f + "." + fd.Name, p})
				continue
			}
			if len(fd.Enum) > 0 && !inEnum(fd.Enum, fv) {
				probs = append(probs, Problem{f + "." + fd.Name, "not one of the allowed values " + enumText(fd.Enum)})
			}
		}
		for name := range m {
			if !names[name] {
				probs = append(probs, Problem{f + "." + name, "not a field of this form"})
			}
		}
		return probs
	}
	return nil
}

func checkValue(typ string, v json.RawMessage) string {
	switch typ {
	case TypeString:
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "must be a string"
		}
		if len(s) > MaxTextBytes {
			return fmt.Sprintf("longer than %d bytes", MaxTextBytes)
		}
	case TypeBoolean:
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return "must be true or false"
		}
	case TypeNumber, TypeInteger:
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if d.Decode(&n) != nil {
			return "must be a number"
		}
		if typ == TypeInteger {
			if _, err := n.Int64(); err != nil {
				return "must be an integer"
			}
		}
	}
	return ""
}

func inEnum(enum []json.RawMessage, v json.RawMessage) bool {
	var want any
	_ = json.Unmarshal(v, &want)
	for _, e := range enum {
		var got any
		if json.Unmarshal(e, &got) == nil && fmt.Sprint(got) == fmt.Sprint(want) {
			return true
		}
	}
	return false
}

func enumText(enum []json.RawMessage) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = string(e)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func isNull(v json.RawMessage) bool {
	return len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null"
}

func (q Question) hasOption(label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}

func (q Question) labels() string {
	ls := make([]string, len(q.Options))
	for i, o := range q.Options {
		ls[i] = fmt.Sprintf("%q", o.Label)
	}
	return "options: " + strings.Join(ls, ", ")
}

// Output is what the model reads as the tool's result for an answered
// request: the answers by question id and the text of each question with
// its answer, as JSON.
func (r Request) Output(answers map[string]json.RawMessage) string {
	type qa struct {
		ID       string          `json:"id"`
		Question string          `json:"question"`
		Answer   json.RawMessage `json:"answer"`
	}
	out := struct {
		Answers   map[string]json.RawMessage `json:"answers"`
		Questions []qa                       `json:"questions"`
	}{Answers: answers}
	for _, q := range r.Questions {
		out.Questions = append(out.Questions, qa{q.ID, q.Question, answers[q.ID]})
	}
	b, _ := json.Marshal(out)
	return string(b)
}
