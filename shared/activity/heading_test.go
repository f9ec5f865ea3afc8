package activity_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/activity"
	"github.com/openprogram/lifecycle/shared/ids"
)

func TestSummary(t *testing.T) {
	long := strings.Repeat("é", 100)
	cases := []struct {
		name, tool, args, want string
	}{
		{"bash command", "Bash", `{"command":"npm test"}`, "npm test"},
		{"bash alias", "bash", `{"command":"go vet ./..."}`, "go vet ./..."},
		{"bash multi-line command is one line", "Bash", `{"command":"set -e\n  make   build\n"}`, "set -e make build"},
		{"bash without a command uses its description", "Bash", `{"command":"  ","description":"Run tests"}`, "Run tests"},
		{"read", "Read", `{"file_path":"src/main.go"}`, "src/main.go"},
		{"a question asks its first question", "AskUserQuestion", `{"questions":[{"question":"Which environment?","options":[{"label":"a"},{"label":"b"}]},{"question":"Run checks?"}]}`, "Which environment? (+1 more)"},
		{"one question", "AskUserQuestion", `{"questions":[{"question":"Deploy now?","kind":"confirm"}]}`, "Deploy now?"},
		{"read_file alias", "read_file", `{"file_path":"README.md"}`, "README.md"},
		{"write names the file, not the content", "Write", `{"file_path":"notes.txt","content":"secret stuff"}`, "notes.txt"},
		{"edit", "Edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`, "a.go"},
		{"grep with a path", "Grep", `{"pattern":"TODO","path":"src"}`, "TODO in src"},
		{"web fetch", "WebFetch", `{"url":"https://example.com/x"}`, "https://example.com/x"},
		{"mcp tool: key=value pairs in key order", "mcp__github__create_issue", `{"title":"Fix login","repo":"acme/web","labels":["bug"],"draft":false}`,
			`draft=false labels=[…] repo=acme/web title="Fix login"`},
		{"mcp tool with an object and a number", "mcp__db__query", `{"params":{"a":1},"limit":10}`, "limit=10 params={…}"},
		{"mcp tool without arguments", "mcp__x__ping", `{}`, ""},
		{"control and bidi characters are dropped", "Bash", "{\"command\":\"echo \\u202eevil\\u0007 ok\"}", "echo evil ok"},
		{"long summary cut at 64 runes with an ellipsis", "Read", `{"file_path":"` + long + `"}`, strings.Repeat("é", 63) + "…"},
		{"not an object", "Bash", `["npm test"]`, ""},
		{"wrong type", "Read", `{"file_path":7}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := activity.Summary(c.tool, json.RawMessage(c.args))
			if got != c.want {
				t.Fatalf("Summary(%s, %s) = %q, want %q", c.tool, c.args, got, c.want)
			}
			if n := utf8.RuneCountInString(got); n > activity.MaxSummaryRunes {
				t.Fatalf("%d runes", n)
			}
		})
	}
}

func withArgs(a actionflow.Action, tool, args string) actionflow.Action {
	a.Tool, a.Arguments = tool, json.RawMessage(args)
	return a
}

func titled(e actionflow.Execution, title string) actionflow.Execution {
	e.Title = title
	return e
}

// retryOf is a Retry child: on its source's branch.
func retryOf(id, source, branch string, n int) actionflow.Execution {
	e := exe(id, branch, source, n, actionflow.ExecPaused)
	e.PauseOwner = actionflow.PauseByFork
	return e
}

// forkOf is a Fork child: a branch of its own (its id).
func forkOf(id, source string, n int) actionflow.Execution {
	e := exe(id, id, source, n, actionflow.ExecPaused)
	e.PauseOwner = actionflow.PauseByFork
	return e
}

func TestHeadings(t *testing.T) {
	long := strings.Repeat("word ", 40)
	cases := []struct {
		name   string
		in     activity.Input
		branch string
		want   string
		// execs: the heading of each listed execution in the branch's details
		execs map[string]string
	}{
		{
			name: "the title the client gave wins",
			in: activity.Input{Executions: []actionflow.Execution{titled(exe("e1", "b1", "", 0, actionflow.ExecCompleted), "Fix the flaky login test")},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, done), "Bash", `{"command":"npm test"}`)}},
			branch: "b1", want: "Fix the flaky login test",
			execs: map[string]string{"e1": "Fix the flaky login test"},
		},
		{
			name: "no title: the first action's tool and summary",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecCompleted)},
				Actions: []actionflow.Action{withArgs(act("a2", "e1", 1, done), "Read", `{"file_path":"src/main.go"}`),
					withArgs(act("a1", "e1", 0, done), "Bash", `{"command":"npm test"}`),
					withArgs(act("a3", "e2", 2, done), "Write", `{"file_path":"notes.txt","content":"x"}`)}},
			branch: "b1", want: "Bash: npm test",
			execs: map[string]string{"e1": "Bash: npm test", "e2": "Write: notes.txt"},
		},
		{
			name: "an MCP tool: its name and a compact line of arguments",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecRunning)},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, running), "mcp__tickets__create", `{"summary":"Printer on fire","priority":2}`)}},
			branch: "b1", want: `mcp__tickets__create: priority=2 summary="Printer on fire"`,
		},
		{
			name: "a long command is cut with an ellipsis",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted)},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, done), "Bash", `{"command":"echo `+long+`"}`)}},
			branch: "b1", want: "Bash: echo " + strings.Repeat("word ", 11) + "wor…",
		},
		{
			name:   "a long title is cut at 80 runes",
			in:     activity.Input{Executions: []actionflow.Execution{titled(exe("e1", "b1", "", 0, actionflow.ExecCompleted), strings.Repeat("ü", 120))}},
			branch: "b1", want: strings.Repeat("ü", 79) + "…",
		},
		{
			name: "a fork says so in words and inherits what its source is about",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted), forkOf("e2", "e1", 1)},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, done), "Bash", `{"command":"npm test"}`)}},
			branch: "e2", want: "Bash: npm test · fork",
			execs: map[string]string{"e1": "Bash: npm test", "e2": "Bash: npm test · fork"},
		},
		{
			name:   "a fork of a titled execution keeps the title",
			in:     activity.Input{Executions: []actionflow.Execution{titled(exe("e1", "b1", "", 0, actionflow.ExecCompleted), "Release 1.2"), forkOf("e2", "e1", 1)}},
			branch: "e2", want: "Release 1.2 · fork",
		},
		{
			name: "a fork of a fork says fork once",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted), forkOf("e2", "e1", 1), forkOf("e3", "e2", 2)},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, done), "Read", `{"file_path":"go.mod"}`)}},
			branch: "e3", want: "Read: go.mod · fork",
		},
		{
			name: "a retry stays on its branch: the branch keeps its heading, the execution says retry",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecFailed), retryOf("e2", "e1", "b1", 1)},
				Actions: []actionflow.Action{withArgs(act("a1", "e1", 0, done), "Bash", `{"command":"npm test"}`)}},
			branch: "b1", want: "Bash: npm test",
			execs: map[string]string{"e1": "Bash: npm test", "e2": "Bash: npm test · retry"},
		},
		{
			name: "a fork whose source record is missing: its own first action, never an id",
			in: activity.Input{Executions: []actionflow.Execution{forkOf("e9", "e_gone", 1)},
				Actions: []actionflow.Action{withArgs(act("a1", "e9", 2, running), "Read", `{"file_path":"a.txt"}`)}},
			branch: "e9", want: "Read: a.txt · fork",
		},
		{
			name:   "nothing to go on: the kind, never an id",
			in:     activity.Input{Executions: []actionflow.Execution{forkOf("exe_01JXYZABCDEF", "e_gone", 1)}},
			branch: "exe_01JXYZABCDEF", want: "Agent chat · fork",
		},
		{
			name: "a first execution without actions takes the branch's first action",
			in: activity.Input{Executions: []actionflow.Execution{exe("e1", "b1", "", 0, actionflow.ExecCompleted), exe("e2", "b1", "", 1, actionflow.ExecRunning)},
				Actions: []actionflow.Action{withArgs(act("a1", "e2", 1, running), "Bash", `{"command":"ls"}`)}},
			branch: "b1", want: "Bash: ls",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := activity.Build(c.in)
			var row *activity.Row
			for _, rows := range [][]activity.Row{got.NeedsAttention, got.InProgress, got.History} {
				for i := range rows {
					if rows[i].BranchID == c.branch {
						row = &rows[i]
					}
				}
			}
			if row == nil {
				t.Fatalf("no row for branch %s: %+v", c.branch, got)
			}
			if row.Heading != c.want {
				t.Fatalf("heading %q, want %q", row.Heading, c.want)
			}
			if n := utf8.RuneCountInString(row.Heading); n > activity.MaxHeadingRunes {
				t.Fatalf("heading of %d runes", n)
			}
			for id, want := range c.execs {
				found := false
				for _, e := range row.Executions {
					if e.ExecutionID == ids.ExecutionID(id) {
						found = true
						if e.Heading != want {
							t.Fatalf("execution %s heading %q, want %q", id, e.Heading, want)
						}
					}
				}
				if !found {
					t.Fatalf("execution %s not in the details", id)
				}
			}
		})
	}
}
