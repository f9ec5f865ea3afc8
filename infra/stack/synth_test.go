package stack_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/openprogram/lifecycle/infra/stack"
)

// The CDK runs in a Node process started by jsii, and a synth of the whole
// stack costs seconds, so each test binary synthesizes ONE app holding the
// two stacks below, once, in TestMain, and every test asserts on those two
// templates:
//   - defaults: exactly the configuration cdk.json deploys (builtin reviewer,
//     no tool functions, deletion protection and reserved concurrency on);
//   - variant: every optional branch taken (Bedrock reviewer, tool
//     functions, protection and reserved concurrency off, alarm topic,
//     x86_64 functions).
var (
	defaults *synthesized
	variant  *synthesized
	// anchored is the defaults with lifecycle:auditAnchor on (its own
	// test only: the other tests read two stacks).
	anchored *synthesized
)

// variantHostHome is the variant's lifecycle:hostHome.
const variantHostHome = "/home/agent"

// synthesized is one stack of the shared synth.
type synthesized struct {
	name   string
	cfg    stack.Config
	tpl    assertions.Template
	raw    map[string]any // the template as JSON
	outdir string         // the cloud assembly directory
	zips   map[string]string
}

const (
	variantModelID = "anthropic.claude-3-haiku-20240307-v1:0"
	variantTopic   = "arn:aws:sns:eu-west-1:123456789012:lifecycle-alarms"
)

var variantTools = []string{
	"arn:aws:lambda:eu-west-1:123456789012:function:tool-echo",
	"arn:aws:lambda:eu-west-1:123456789012:function:tool-fetch",
}

// repoRoot is two levels up from infra/stack.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// definitionFile is the ASL file the stack deploys.
func definitionFile() string {
	return filepath.Join(repoRoot(), "statemachines", "action-lifecycle.asl.json")
}

func TestMain(m *testing.M) {
	code, err := synthAll(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synthesize the test stacks:", err)
		code = 1
	}
	os.Exit(code)
}

func synthAll(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "lifecycle-infra-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	defer jsii.Close()

	zips, err := placeholderZips(filepath.Join(tmp, "build"))
	if err != nil {
		return 0, err
	}
	cdkContext, err := readCDKContext(filepath.Join(repoRoot(), "cdk.json"))
	if err != nil {
		return 0, err
	}
	outdir := filepath.Join(tmp, "cdk.out")
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir), Context: &cdkContext})

	// The defaults come through the same path as the real app: cdk.json
	// context -> FromContext.
	node := app.Node()
	base, err := stack.FromContext(func(key string) any { return node.TryGetContext(jsii.String(key)) })
	if err != nil {
		return 0, fmt.Errorf("cdk.json context: %w", err)
	}
	base.AssetDir = filepath.Join(tmp, "build")
	base.DefinitionFile = definitionFile()

	alt := base
	alt.Reviewer = stack.ReviewerBedrock
	alt.BedrockModelID = variantModelID
	alt.ToolFunctionARNs = variantTools
	alt.DeletionProtection = false
	alt.ReservedConcurrency = false
	alt.AlarmTopicARN = variantTopic
	alt.JWTIssuer = "https://issuer.example.com/pool"
	alt.JWTAudience = "client-a,client-b"
	alt.LogLevel = "debug"
	alt.Architecture = stack.ArchX86_64
	alt.HostHome = variantHostHome

	withAnchor := base
	withAnchor.AuditAnchor = true
	withAnchor.AuditAnchorRetentionDays = 400

	stacks := []*synthesized{{name: "Defaults", cfg: base}, {name: "Variant", cfg: alt}, {name: "Anchored", cfg: withAnchor}}
	for _, s := range stacks {
		if _, err := stack.New(app, s.name, stack.Props{Config: s.cfg}); err != nil {
			return 0, fmt.Errorf("stack %s: %w", s.name, err)
		}
	}
	app.Synth(nil)
	for _, s := range stacks {
		raw, err := os.ReadFile(filepath.Join(outdir, s.name+".template.json"))
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(raw, &s.raw); err != nil {
			return 0, fmt.Errorf("template %s: %w", s.name, err)
		}
		s.tpl = assertions.Template_FromJSON(&s.raw, nil)
		s.outdir = outdir
		s.zips = zips
	}
	defaults, variant, anchored = stacks[0], stacks[1], stacks[2]
	return m.Run(), nil
}

// placeholderZips writes one small zip per function, each with different
// content so that every function gets its own asset and a mix-up shows.
func placeholderZips(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range stack.Functions {
		p := filepath.Join(dir, name+".zip")
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		zw := zip.NewWriter(f)
		h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err == nil {
			_, err = fmt.Fprintf(w, "#!/bin/sh\necho placeholder %s\n", name)
		}
		if err == nil {
			err = zw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("placeholder zip %s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

func readCDKContext(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file.Context, nil
}

// both runs f once per synthesized stack, as a named subtest.
func both(t *testing.T, f func(t *testing.T, s *synthesized)) {
	t.Helper()
	for _, s := range []*synthesized{defaults, variant} {
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

// check turns an assertions panic (how jsii reports a failed match) into a
// test failure with the CDK's own explanation.
func check(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

func (s *synthesized) hasProps(t *testing.T, typ string, props map[string]any) {
	t.Helper()
	check(t, typ, func() { s.tpl.HasResourceProperties(jsii.String(typ), props) })
}

// resources returns the template's resources of one type by logical id.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.raw["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// only returns the one resource of a type; it fails when there are more.
func (s *synthesized) only(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	rs := s.resources(typ)
	if len(rs) != 1 {
		t.Fatalf("want exactly one %s, got %d", typ, len(rs))
	}
	for id, r := range rs {
		return id, props(r)
	}
	panic("unreachable")
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// function finds a lifecycle function by its description.
func (s *synthesized) function(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	var found []string
	var res map[string]any
	for id, r := range s.resources("AWS::Lambda::Function") {
		if props(r)["Description"] == stack.FunctionDescription(name) {
			found = append(found, id)
			res = props(r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one function %q, found %v", name, found)
	}
	return found[0], res
}

// roleOf returns the logical id of a function's role.
func roleOf(t *testing.T, fn map[string]any) string {
	t.Helper()
	getAtt, ok := fn["Role"].(map[string]any)["Fn::GetAtt"].([]any)
	if !ok {
		t.Fatalf("function role is not a GetAtt: %v", fn["Role"])
	}
	return getAtt[0].(string)
}

// render writes a CloudFormation value as a readable string: Ref X -> {X},
// GetAtt X.A -> {X.A}, Join -> the joined parts. Policy comparisons use it.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if ref, ok := x["Ref"]; ok {
			return "{" + ref.(string) + "}"
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok {
			return "{" + ga[0].(string) + "." + ga[1].(string) + "}"
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, render(p))
			}
			return strings.Join(parts, j[0].(string))
		}
		if sp, ok := x["Fn::Split"].([]any); ok {
			return "split(" + sp[0].(string) + "," + render(sp[1]) + ")"
		}
		b, _ := json.Marshal(x)
		return string(b)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// list normalizes a string-or-list IAM field.
func list(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	default:
		return []any{x}
	}
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
