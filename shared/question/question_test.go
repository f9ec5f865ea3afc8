package question_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/question"
)

func TestParseNormalizes(t *testing.T) {
	req, probs := question.Parse(json.RawMessage(`{"questions":[
	 {"question":"A?","options":[{"label":"x"},{"label":"y"}]},
	 {"question":"B?","options":[{"label":"x"},{"label":"y"}],"multiSelect":true},
	 {"id":"go","question":"C?","kind":"confirm"}]}`))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	got := []string{}
	for _, q := range req.Questions {
		got = append(got, q.ID+":"+q.Kind)
	}
	if strings.Join(got, ",") != "q1:single,q2:multiple,go:confirm" {
		t.Fatalf("normalized %v", got)
	}
}

func TestParseNamesTheField(t *testing.T) {
	cases := []struct{ name, args, field string }{
		{"not an object", `[]`, "arguments"},
		{"no questions", `{}`, "questions"},
		{"empty questions", `{"questions":[]}`, "questions"},
		{"unknown top-level field", `{"questions":[{"question":"a","kind":"text"}],"extra":1}`, "extra"},
		{"no question text", `{"questions":[{"kind":"text"}]}`, "questions[0].question"},
		{"unknown question field", `{"questions":[{"question":"a","kind":"text","color":"red"}]}`, "questions[0]"},
		{"one option", `{"questions":[{"question":"a","options":[{"label":"x"}]}]}`, "questions[0].options"},
		{"blank label", `{"questions":[{"question":"a","options":[{"label":"x"},{"label":" "}]}]}`, "questions[0].options[1].label"},
		{"duplicate label", `{"questions":[{"question":"a","options":[{"label":"x"},{"label":"x"}]}]}`, "questions[0].options[1].label"},
		{"single with multiSelect", `{"questions":[{"question":"a","kind":"single","multiSelect":true,"options":[{"label":"x"},{"label":"y"}]}]}`, "questions[0].multiSelect"},
		{"confirm with options", `{"questions":[{"question":"a","kind":"confirm","options":[{"label":"x"},{"label":"y"}]}]}`, "questions[0].options"},
		{"text with fields", `{"questions":[{"question":"a","kind":"text","fields":[{"name":"f","type":"string"}]}]}`, "questions[0].fields"},
		{"bad id", `{"questions":[{"id":"a b","question":"a","kind":"text"}]}`, "questions[0].id"},
		{"form field name", `{"questions":[{"question":"a","kind":"form","fields":[{"name":"","type":"string"}]}]}`, "questions[0].fields[0].name"},
		{"form duplicate field", `{"questions":[{"question":"a","kind":"form","fields":[{"name":"f","type":"string"},{"name":"f","type":"string"}]}]}`, "questions[0].fields[1].name"},
		{"form enum of the wrong type", `{"questions":[{"question":"a","kind":"form","fields":[{"name":"n","type":"integer","enum":[1,"two"]}]}]}`, "questions[0].fields[0].enum[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, probs := question.Parse(json.RawMessage(tc.args))
			if len(req.Questions) != 0 {
				t.Fatalf("a request with problems was returned: %+v", req)
			}
			for _, p := range probs {
				if p.Field == tc.field {
					return
				}
			}
			t.Fatalf("no problem names %s: %+v", tc.field, probs)
		})
	}
}

func TestCheckAnswers(t *testing.T) {
	req, probs := question.Parse(json.RawMessage(`{"questions":[
	 {"id":"one","question":"?","options":[{"label":"a"},{"label":"b"}]},
	 {"id":"many","question":"?","kind":"multiple","options":[{"label":"a"},{"label":"b"}]},
	 {"id":"ok","question":"?","kind":"confirm"},
	 {"id":"why","question":"?","kind":"text"},
	 {"id":"f","question":"?","kind":"form","fields":[{"name":"n","type":"integer","required":true},{"name":"x","type":"number"},{"name":"e","type":"string","enum":["u","v"]},{"name":"b","type":"boolean"}]}]}`))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	good := `"one":"a","many":["b","a"],"ok":false,"why":"","f":{"n":3,"x":1.5,"e":"v","b":true}`
	cases := []struct{ name, answers, field string }{
		{"all good", `{` + good + `}`, ""},
		{"form optional fields absent", `{"one":"a","many":["a"],"ok":true,"why":"w","f":{"n":3}}`, ""},
		{"not an option", `{` + strings.Replace(good, `"one":"a"`, `"one":"c"`, 1) + `}`, "answers.one"},
		{"single as array", `{` + strings.Replace(good, `"one":"a"`, `"one":["a"]`, 1) + `}`, "answers.one"},
		{"multiple empty", `{` + strings.Replace(good, `"many":["b","a"]`, `"many":[]`, 1) + `}`, "answers.many"},
		{"multiple twice", `{` + strings.Replace(good, `"many":["b","a"]`, `"many":["a","a"]`, 1) + `}`, "answers.many"},
		{"confirm as string", `{` + strings.Replace(good, `"ok":false`, `"ok":"no"`, 1) + `}`, "answers.ok"},
		{"missing", `{` + strings.Replace(good, `"why":"",`, ``, 1) + `}`, "answers.why"},
		{"null", `{` + strings.Replace(good, `"why":""`, `"why":null`, 1) + `}`, "answers.why"},
		{"unknown id", `{` + good + `,"zzz":1}`, "answers.zzz"},
		{"form integer fraction", `{` + strings.Replace(good, `"n":3`, `"n":3.5`, 1) + `}`, "answers.f.n"},
		{"form number as string", `{` + strings.Replace(good, `"x":1.5`, `"x":"1.5"`, 1) + `}`, "answers.f.x"},
		{"form enum", `{` + strings.Replace(good, `"e":"v"`, `"e":"w"`, 1) + `}`, "answers.f.e"},
		{"form boolean", `{` + strings.Replace(good, `"b":true`, `"b":1`, 1) + `}`, "answers.f.b"},
		{"form required", `{` + strings.Replace(good, `"n":3,`, ``, 1) + `}`, "answers.f.n"},
		{"form unknown field", `{` + strings.Replace(good, `"b":true`, `"b":true,"z":1`, 1) + `}`, "answers.f.z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.answers), &m); err != nil {
				t.Fatal(err)
			}
			probs := req.CheckAnswers(m)
			if tc.field == "" {
				if len(probs) > 0 {
					t.Fatalf("valid answers refused: %+v", probs)
				}
				return
			}
			if len(probs) != 1 || probs[0].Field != tc.field {
				t.Fatalf("want one problem naming %s, got %+v", tc.field, probs)
			}
		})
	}
}

// The published schema is JSON Schema of the shape Parse accepts: the
// Claude Code example and every kind parse.
func TestInputSchemaDescribesParse(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(question.InputSchema, &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	props := schema["properties"].(map[string]any)["questions"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	for _, field := range []string{"id", "question", "header", "kind", "multiSelect", "options", "fields"} {
		if _, ok := props[field]; !ok {
			t.Errorf("the schema does not describe %s", field)
		}
	}
	example := `{"questions":[{"question":"Which library?","header":"Library","options":[{"label":"zod","description":"runtime"},{"label":"yup"}],"multiSelect":false}]}`
	if _, probs := question.Parse(json.RawMessage(example)); len(probs) > 0 {
		t.Fatalf("the Claude Code example: %+v", probs)
	}
}
