package stack_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/infra/stack"
)

// wildcardAllowed lists every action that may be granted on Resource "*",
// and why. Nothing else may be.
var wildcardAllowed = map[string]string{
	// Task tokens are the capability; IAM has no resource-level
	// permissions for these (api completes approval waits and host tasks).
	"states:SendTaskSuccess":   "no resource-level permissions",
	"states:SendTaskFailure":   "no resource-level permissions",
	"states:SendTaskHeartbeat": "no resource-level permissions",
	// X-Ray (Lambda active tracing, state machine tracing): no resources.
	"xray:PutTraceSegments":    "no resource-level permissions",
	"xray:PutTelemetryRecords": "no resource-level permissions",
	"xray:GetSamplingRules":    "no resource-level permissions",
	"xray:GetSamplingTargets":  "no resource-level permissions",
	// Step Functions log delivery (CDK adds these to the state machine
	// role when logging is on); CloudWatch Logs vended-log delivery
	// requires "*".
	"logs:CreateLogDelivery":        "vended logs delivery requires *",
	"logs:GetLogDelivery":           "vended logs delivery requires *",
	"logs:UpdateLogDelivery":        "vended logs delivery requires *",
	"logs:DeleteLogDelivery":        "vended logs delivery requires *",
	"logs:ListLogDeliveries":        "vended logs delivery requires *",
	"logs:PutResourcePolicy":        "vended logs delivery requires *",
	"logs:DescribeResourcePolicies": "vended logs delivery requires *",
	"logs:DescribeLogGroups":        "vended logs delivery requires *",
}

// policyStatement is one Allow/Deny statement found anywhere in a template.
type policyStatement struct {
	where string
	stmt  map[string]any
}

// statements walks the whole template and returns every IAM statement:
// identity policies, resource policies (bucket, queue), trust policies.
func statements(v any, where string) []policyStatement {
	var out []policyStatement
	switch x := v.(type) {
	case map[string]any:
		if sts, ok := x["Statement"]; ok {
			for i, st := range list(sts) {
				if m, ok := st.(map[string]any); ok {
					out = append(out, policyStatement{where: fmt.Sprintf("%s[%d]", where, i), stmt: m})
				}
			}
		}
		for k, e := range x {
			out = append(out, statements(e, where+"."+k)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, statements(e, fmt.Sprintf("%s[%d]", where, i))...)
		}
	}
	return out
}

// A resource with "*" in it is specific only when "*" is its last character,
// right after ":" or "/", and what precedes it names one resource: either it
// refers to a resource of this stack ({LogicalId} or {LogicalId.Attr}; the
// pseudo parameters {AWS::...} do not count), or it is a literal ARN with a
// region, an account, a resource type and a resource name.
var (
	logicalIDRef = regexp.MustCompile(`\{[A-Za-z0-9]+(\.[A-Za-z]+)?\}`)
	specificARN  = regexp.MustCompile(`^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]+:[0-9]{12}:[a-z-]+[:/][^*]+$`)
)

func wildcardProblem(resource string) string {
	if resource == "*" {
		return ""
	}
	i := strings.Index(resource, "*")
	if i < 0 {
		return ""
	}
	if i != len(resource)-1 {
		return "wildcard inside the resource"
	}
	prefix := resource[:i]
	if !strings.HasSuffix(prefix, ":") && !strings.HasSuffix(prefix, "/") {
		return "wildcard not after : or /"
	}
	trimmed := strings.TrimRight(prefix, ":/")
	if !logicalIDRef.MatchString(trimmed) && !specificARN.MatchString(trimmed) {
		return "wildcard after a non-specific prefix"
	}
	return ""
}

// TestIAMNoWildcards walks every IAM statement of both templates. It fails
// on an action with "*", on NotAction/NotResource, on Resource "*" for any
// action not in wildcardAllowed, and on a resource pattern broader than one
// resource of this stack (or one configured ARN) plus its sub-resources.
func TestIAMNoWildcards(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		n := 0
		for _, ps := range statements(s.raw["Resources"], "Resources") {
			n++
			st := ps.stmt
			for _, forbidden := range []string{"NotAction", "NotResource", "NotPrincipal"} {
				if st[forbidden] != nil {
					t.Errorf("%s uses %s", ps.where, forbidden)
				}
			}
			if st["Effect"] != "Allow" {
				continue
			}
			var actions []string
			for _, a := range list(st["Action"]) {
				action := a.(string)
				actions = append(actions, action)
				if strings.Contains(action, "*") {
					t.Errorf("%s grants wildcard action %q", ps.where, action)
				}
			}
			for _, r := range list(st["Resource"]) {
				res := render(r)
				if res == "*" {
					for _, a := range actions {
						if _, ok := wildcardAllowed[a]; !ok {
							t.Errorf("%s grants %s on \"*\" although a specific ARN exists", ps.where, a)
						}
					}
					continue
				}
				if p := wildcardProblem(res); p != "" {
					t.Errorf("%s resource %s: %s", ps.where, res, p)
				}
			}
			if st["Principal"] != nil {
				if render(st["Principal"]) == `{"AWS":"*"}` || st["Principal"] == "*" {
					t.Errorf("%s allows any principal", ps.where)
				}
			}
		}
		if n < 10 {
			t.Errorf("found only %d statements: the walker is not seeing the policies", n)
		}
	})
}

func TestWildcardProblem(t *testing.T) {
	cases := map[string]bool{ // resource -> acceptable
		"{Table.Arn}":         true,
		"{Table.Arn}/index/*": true,
		"{Fn.Arn}:*":          true,
		"{Bucket.Arn}/*":      true,
		"arn:{AWS::Partition}:states:{AWS::Region}:{AWS::AccountId}:execution:{SM.Name}:*": true,
		"arn:aws:lambda:eu-west-1:123456789012:function:tool:*":                            true,
		"arn:aws:s3:::*":                                   false,
		"arn:aws:lambda:*:*:function:*":                    false,
		"arn:aws:lambda:eu-west-1:123456789012:function:*": false,
		"{Table.Arn}*":                                     false,
		"arn:{AWS::Partition}:s3:::*":                      false,
		"arn:{AWS::Partition}:lambda:{AWS::Region}:{AWS::AccountId}:function:*": false,
		"arn:aws:states:{AWS::Region}:*:execution:x":                            false,
	}
	for res, ok := range cases {
		if got := wildcardProblem(res) == ""; got != ok {
			t.Errorf("%s: acceptable=%v, want %v (%s)", res, got, ok, wildcardProblem(res))
		}
	}
}

// grantsOf returns "action @ resource" for every Allow statement of the
// policies attached to a role.
func (s *synthesized) grantsOf(t *testing.T, roleID string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	attached := 0
	for _, p := range s.resources("AWS::IAM::Policy") {
		pp := props(p)
		mine := false
		for _, r := range list(pp["Roles"]) {
			if render(r) == "{"+roleID+"}" {
				mine = true
			}
		}
		if !mine {
			continue
		}
		attached++
		for _, st := range list(pp["PolicyDocument"].(map[string]any)["Statement"]) {
			stmt := st.(map[string]any)
			if stmt["Effect"] != "Allow" {
				continue
			}
			if stmt["Condition"] != nil {
				t.Errorf("role %s: unexpected condition %s", roleID, render(stmt["Condition"]))
			}
			for _, a := range list(stmt["Action"]) {
				for _, r := range list(stmt["Resource"]) {
					out[a.(string)+" @ "+render(r)] = true
				}
			}
		}
	}
	if attached == 0 {
		t.Errorf("role %s has no policy", roleID)
	}
	if role, ok := s.resources("AWS::IAM::Role")[roleID]; ok {
		if props(role)["Policies"] != nil {
			t.Errorf("role %s has inline policies", roleID)
		}
	}
	return out
}

func grants(actions []string, resources ...string) []string {
	var out []string
	for _, a := range actions {
		for _, r := range resources {
			out = append(out, a+" @ "+r)
		}
	}
	return out
}

// TestIAMPerFunction states, for each function, the complete set of
// (action, resource) pairs its role has. Any grant added or widened without
// updating this list fails here.
func TestIAMPerFunction(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		id := func(typ string) string { i, _ := s.only(t, typ); return i }
		table := "{" + id("AWS::DynamoDB::Table") + ".Arn}"
		objects := "{" + id("AWS::S3::Bucket") + ".Arn}/*"
		bus := "{" + id("AWS::Events::EventBus") + ".Arn}"
		sm := "{" + id("AWS::StepFunctions::StateMachine") + "}"
		// Any version or alias of the machine: keep_original starts on the
		// version an execution recorded, new actions on the alias.
		qualified := sm + ":*"
		smName := "{" + id("AWS::StepFunctions::StateMachine") + ".Name}"
		executions := "arn:{AWS::Partition}:states:{AWS::Region}:{AWS::AccountId}:execution:" + smName + ":*"
		dlq := "{" + id("AWS::SQS::Queue") + ".Arn}"

		tableGrants := grants([]string{
			"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem",
			"dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem",
		}, table, table+"/index/*")
		xray := grants([]string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "*")

		want := map[string][]string{
			stack.FnAuthorize: tableGrants,
			stack.FnApproval:  tableGrants,
			stack.FnDispatch:  slices.Concat(tableGrants, grants([]string{"s3:PutObject"}, objects), grants([]string{"states:SendTaskSuccess"}, "*")),
			stack.FnRecord:    slices.Concat(tableGrants, grants([]string{"s3:GetObject", "s3:PutObject"}, objects), grants([]string{"events:PutEvents"}, bus)),
			stack.FnProject:   slices.Concat(tableGrants, grants([]string{"events:PutEvents"}, bus)),
			stack.FnAPI: slices.Concat(tableGrants,
				grants([]string{"states:StartExecution", "states:DescribeStateMachine"}, sm, qualified),
				grants([]string{"states:DescribeExecution", "states:GetExecutionHistory", "states:StopExecution",
					"states:DescribeStateMachineForExecution"}, executions),
				grants([]string{"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"}, "*"),
				grants([]string{"s3:GetObject"}, objects)),
			stack.FnRecover: slices.Concat(tableGrants,
				grants([]string{"states:StartExecution", "states:DescribeStateMachine"}, sm, qualified),
				grants([]string{"states:DescribeExecution", "states:StopExecution"}, executions),
				grants([]string{"events:PutEvents"}, bus),
				grants([]string{"states:SendTaskSuccess", "states:SendTaskFailure"}, "*"),
				grants([]string{"sqs:SendMessage"}, dlq)),
		}
		if s.cfg.Reviewer == stack.ReviewerBedrock {
			want[stack.FnAuthorize] = append(want[stack.FnAuthorize],
				"bedrock:InvokeModel @ arn:{AWS::Partition}:bedrock:{AWS::Region}::foundation-model/"+s.cfg.BedrockModelID)
		}
		for _, arn := range s.cfg.ToolFunctionARNs {
			want[stack.FnDispatch] = append(want[stack.FnDispatch], grants([]string{"lambda:InvokeFunction"}, arn, arn+":*")...)
		}

		roles := map[string]bool{}
		for _, name := range stack.Functions {
			t.Run(name, func(t *testing.T) {
				_, fn := s.function(t, name)
				roleID := roleOf(t, fn)
				if roles[roleID] {
					t.Errorf("role %s shared between functions", roleID)
				}
				roles[roleID] = true
				logs := "{" + strings.Trim(render(fn["LoggingConfig"].(map[string]any)["LogGroup"]), "{}") + ".Arn}"
				expected := map[string]bool{}
				for _, g := range slices.Concat(want[name], xray, grants([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, logs)) {
					expected[g] = true
				}
				got := s.grantsOf(t, roleID)
				for _, g := range sorted(got) {
					if !expected[g] {
						t.Errorf("unexpected grant: %s", g)
					}
				}
				for _, g := range sorted(expected) {
					if !got[g] {
						t.Errorf("missing grant: %s", g)
					}
				}
			})
		}
	})
}

// TestStateMachineRole: the state machine may invoke exactly the functions
// its definition names and the retired ones earlier revisions' versions
// name (and their versions/aliases), plus the log-delivery and X-Ray
// actions Step Functions needs.
func TestStateMachineRole(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		_, sm := s.only(t, "AWS::StepFunctions::StateMachine")
		roleID := strings.TrimSuffix(strings.Trim(render(sm["RoleArn"]), "{}"), ".Arn")
		expected := map[string]bool{}
		invoked := slices.Clone(retiredFunctions)
		for _, fnName := range lifecycleSubstitutions {
			invoked = append(invoked, fnName)
		}
		for _, fnName := range invoked {
			fnID, _ := s.function(t, fnName)
			expected["lambda:InvokeFunction @ {"+fnID+".Arn}"] = true
			expected["lambda:InvokeFunction @ {"+fnID+".Arn}:*"] = true
		}
		for action := range wildcardAllowed {
			if strings.HasPrefix(action, "logs:") || strings.HasPrefix(action, "xray:") {
				expected[action+" @ *"] = true
			}
		}
		got := s.grantsOf(t, roleID)
		for _, g := range sorted(got) {
			if !expected[g] {
				t.Errorf("unexpected grant: %s", g)
			}
		}
		for _, g := range sorted(expected) {
			if !got[g] {
				t.Errorf("missing grant: %s", g)
			}
		}
		check(t, "trust", func() {
			s.hasProps(t, "AWS::IAM::Role", map[string]any{
				"AssumeRolePolicyDocument": map[string]any{"Statement": []any{map[string]any{
					"Action": "sts:AssumeRole", "Effect": "Allow",
					"Principal": map[string]any{"Service": "states.amazonaws.com"},
				}}},
			})
		})
	})
}

// TestRoleTrust: function roles are assumable by Lambda only.
func TestRoleTrust(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		for _, name := range stack.Functions {
			_, fn := s.function(t, name)
			role := props(s.resources("AWS::IAM::Role")[roleOf(t, fn)])
			if got := render(role["AssumeRolePolicyDocument"]); got != `{"Statement":[{"Action":"sts:AssumeRole","Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"}}],"Version":"2012-10-17"}` {
				t.Errorf("%s trust policy %s", name, got)
			}
		}
	})
}
