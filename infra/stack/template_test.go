package stack_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/openprogram/lifecycle/infra/stack"
)

func TestTable(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		s.hasProps(t, "AWS::DynamoDB::Table", map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": assertions.Match_ArrayEquals(&[]any{
				map[string]any{"AttributeName": "pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"},
				map[string]any{"AttributeName": "gsi1pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "gsi1sk", "AttributeType": "S"},
				map[string]any{"AttributeName": "gsi2pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "gsi2sk", "AttributeType": "S"},
			}),
			"GlobalSecondaryIndexes": []any{
				map[string]any{
					"IndexName": stack.GSI1Name,
					"KeySchema": []any{
						map[string]any{"AttributeName": "gsi1pk", "KeyType": "HASH"},
						map[string]any{"AttributeName": "gsi1sk", "KeyType": "RANGE"},
					},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				},
				map[string]any{
					"IndexName": stack.GSI2Name,
					"KeySchema": []any{
						map[string]any{"AttributeName": "gsi2pk", "KeyType": "HASH"},
						map[string]any{"AttributeName": "gsi2sk", "KeyType": "RANGE"},
					},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				},
			},
			"BillingMode":                      "PAY_PER_REQUEST",
			"ProvisionedThroughput":            assertions.Match_Absent(),
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        s.cfg.DeletionProtection,
		})
		policy := "Retain"
		if !s.cfg.DeletionProtection {
			policy = "Delete"
		}
		check(t, "table removal policy", func() {
			s.tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"DeletionPolicy": policy, "UpdateReplacePolicy": policy,
			})
		})
	})
	if !defaults.cfg.DeletionProtection {
		t.Error("cdk.json must deploy with deletion protection on")
	}
}

// functionWant is the expected shape of one function; every number here is
// repeated from functions.go on purpose, so a change there is a decision
// made twice.
type functionWant struct {
	timeout, memory, reserved float64
	// extraEnv lists variables beyond the common four.
	extraEnv []string
}

var functionWants = map[string]functionWant{
	stack.FnAuthorize: {timeout: 30, memory: 256, reserved: 20, extraEnv: []string{stack.EnvReviewer, stack.EnvToolFunctionARNs}},
	stack.FnApproval:  {timeout: 10, memory: 128, reserved: 10},
	stack.FnDispatch:  {timeout: 840, memory: 256, reserved: 50, extraEnv: []string{stack.EnvToolFunctionARNs}},
	stack.FnRecord:    {timeout: 30, memory: 256, reserved: 20},
	stack.FnProject:   {timeout: 30, memory: 256, reserved: 20},
	stack.FnAPI: {timeout: 29, memory: 256, reserved: 40,
		extraEnv: []string{stack.EnvStateMachineARN, stack.EnvStateMachineAliasARN, stack.EnvStateMachineVersionARN, stack.EnvJWTIssuer, stack.EnvJWTAudience, stack.EnvLogGroups, stack.EnvToolFunctionARNs}},
	stack.FnRecover: {timeout: 55, memory: 256, reserved: 2,
		extraEnv: []string{stack.EnvStateMachineARN, stack.EnvStateMachineAliasARN, stack.EnvStateMachineVersionARN}},
}

func TestFunctions(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		if got := len(s.resources("AWS::Lambda::Function")); got != len(stack.Functions) {
			t.Errorf("want %d functions, got %d", len(stack.Functions), got)
		}
		total := 0.0
		for _, r := range s.resources("AWS::Lambda::Function") {
			n, _ := props(r)["ReservedConcurrentExecutions"].(float64)
			total += n
		}
		// The documented account requirement (Config.ReservedConcurrency):
		// 162 reserved + 100 Lambda keeps unreserved = a limit of 262.
		if want := map[bool]float64{true: 162, false: 0}[s.cfg.ReservedConcurrency]; total != want {
			t.Errorf("reserved concurrency totals %.0f, documented %.0f", total, want)
		}
		tableID, _ := s.only(t, "AWS::DynamoDB::Table")
		bucketID, _ := s.only(t, "AWS::S3::Bucket")
		busID, _ := s.only(t, "AWS::Events::EventBus")
		smID, _ := s.only(t, "AWS::StepFunctions::StateMachine")
		smAliasID, _ := s.only(t, "AWS::StepFunctions::StateMachineAlias")
		smVersionID, _ := s.only(t, "AWS::StepFunctions::StateMachineVersion")
		for _, name := range stack.Functions {
			t.Run(name, func(t *testing.T) {
				want := functionWants[name]
				id, fn := s.function(t, name)
				reserved := any(want.reserved)
				if !s.cfg.ReservedConcurrency {
					reserved = assertions.Match_Absent()
				}
				check(t, name, func() {
					s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
						"Description":                  stack.FunctionDescription(name),
						"Runtime":                      "provided.al2023",
						"Architectures":                []any{s.cfg.Architecture},
						"Handler":                      "bootstrap",
						"Timeout":                      want.timeout,
						"MemorySize":                   want.memory,
						"ReservedConcurrentExecutions": reserved,
						"TracingConfig":                map[string]any{"Mode": "Active"},
						"LoggingConfig": map[string]any{
							"LogFormat":           "JSON",
							"ApplicationLogLevel": strings.ToUpper(s.cfg.LogLevel),
							"LogGroup":            map[string]any{"Ref": assertions.Match_AnyValue()},
						},
					})
				})

				vars := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
				wantKeys := append([]string{stack.EnvTable, stack.EnvBlobBucket, stack.EnvEventBus, stack.EnvLogLevel}, want.extraEnv...)
				if name == stack.FnAuthorize && s.cfg.Reviewer == stack.ReviewerBedrock {
					wantKeys = append(wantKeys, stack.EnvBedrockModelID)
				}
				if name == stack.FnAPI && s.cfg.HostHome != "" {
					wantKeys = append(wantKeys, stack.EnvHostHome)
				}
				var gotKeys []string
				for k := range vars {
					gotKeys = append(gotKeys, k)
				}
				slices.Sort(gotKeys)
				slices.Sort(wantKeys)
				if !slices.Equal(gotKeys, wantKeys) {
					t.Errorf("%s (%s) environment keys:\n got %v\nwant %v", name, id, gotKeys, wantKeys)
				}
				wantValues := map[string]string{
					stack.EnvTable:                  "{" + tableID + "}",
					stack.EnvBlobBucket:             "{" + bucketID + "}",
					stack.EnvEventBus:               "{" + busID + "}",
					stack.EnvLogLevel:               s.cfg.LogLevel,
					stack.EnvStateMachineARN:        "{" + smID + "}",
					stack.EnvStateMachineAliasARN:   "{" + smAliasID + ".Arn}",
					stack.EnvStateMachineVersionARN: "{" + smVersionID + ".Arn}",
					stack.EnvJWTIssuer:              "{JwtIssuer}",
					stack.EnvJWTAudience:            "{JwtAudience}",
					stack.EnvReviewer:               s.cfg.Reviewer,
					stack.EnvBedrockModelID:         s.cfg.BedrockModelID,
					stack.EnvToolFunctionARNs:       strings.Join(s.cfg.ToolFunctionARNs, ","),
					stack.EnvLogGroups:              logGroups(t, s),
					stack.EnvHostHome:               s.cfg.HostHome,
				}
				for k, v := range vars {
					if got := render(v); got != wantValues[k] {
						t.Errorf("%s %s = %s, want %s", name, k, got, wantValues[k])
					}
				}
			})
		}
	})
}

func TestDeployedArchitectureIsARM64(t *testing.T) {
	if defaults.cfg.Architecture != stack.ArchARM64 {
		t.Errorf("cdk.json deploys %s functions; AWS runs arm64 (x86_64 is only for emulators)", defaults.cfg.Architecture)
	}
}

// TestFunctionCode proves each function deploys its own build/<name>.zip:
// the asset behind its S3Key is byte-for-byte that zip.
func TestFunctionCode(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		var manifest struct {
			Files map[string]struct {
				Source struct {
					Path      string `json:"path"`
					Packaging string `json:"packaging"`
				} `json:"source"`
			} `json:"files"`
		}
		raw, err := os.ReadFile(filepath.Join(s.outdir, s.name+".assets.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &manifest); err != nil {
			t.Fatal(err)
		}
		for _, name := range stack.Functions {
			_, fn := s.function(t, name)
			key, _ := fn["Code"].(map[string]any)["S3Key"].(string)
			hash := strings.TrimSuffix(key, ".zip")
			asset, ok := manifest.Files[hash]
			if !ok {
				t.Errorf("%s: S3Key %q has no asset in the manifest", name, key)
				continue
			}
			if asset.Source.Packaging != "file" {
				t.Errorf("%s: asset packaging %q, want file (the zip as built, not re-zipped)", name, asset.Source.Packaging)
			}
			staged, err := os.ReadFile(filepath.Join(s.outdir, asset.Source.Path))
			if err != nil {
				t.Fatal(err)
			}
			built, err := os.ReadFile(s.zips[name])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(staged, built) {
				t.Errorf("%s deploys %s, which is not build/%s.zip", name, asset.Source.Path, name)
			}
			if body := zipEntry(t, staged, "bootstrap"); !strings.Contains(body, "placeholder "+name+"\n") {
				t.Errorf("%s: bootstrap is %q", name, body)
			}
		}
	})
}

func zipEntry(t *testing.T, data []byte, name string) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open(name)
	if err != nil {
		t.Fatalf("zip has no %s: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFunctionLogGroups(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		groups := s.resources("AWS::Logs::LogGroup")
		// One per function, one for the state machine, one for API access logs.
		if len(groups) != len(stack.Functions)+2 {
			t.Errorf("want %d log groups, got %d", len(stack.Functions)+2, len(groups))
		}
		for id, g := range groups {
			if got := props(g)["RetentionInDays"]; got != 30.0 {
				t.Errorf("log group %s retention %v, want 30 days", id, got)
			}
		}
		for _, name := range stack.Functions {
			_, fn := s.function(t, name)
			ref := render(fn["LoggingConfig"].(map[string]any)["LogGroup"])
			if _, ok := groups[strings.Trim(ref, "{}")]; !ok {
				t.Errorf("%s logs to %s, not to a log group of this stack", name, ref)
			}
		}
	})
}

// logGroups is the api function's LIFECYCLE_LOG_GROUPS as the template
// must render it: each function the lifecycle runs, then the state
// machine, each with the log group it really logs to.
func logGroups(t *testing.T, s *synthesized) string {
	t.Helper()
	var parts []string
	for _, name := range []string{stack.FnAuthorize, stack.FnApproval, stack.FnDispatch, stack.FnRecord, stack.FnProject, stack.FnAPI} {
		_, fn := s.function(t, name)
		parts = append(parts, name+"="+render(fn["LoggingConfig"].(map[string]any)["LogGroup"]))
	}
	_, sm := s.only(t, "AWS::StepFunctions::StateMachine")
	dest := sm["LoggingConfiguration"].(map[string]any)["Destinations"].([]any)[0].(map[string]any)
	arn := render(dest["CloudWatchLogsLogGroup"].(map[string]any)["LogGroupArn"])
	parts = append(parts, "states="+strings.TrimSuffix(arn, ".Arn}")+"}")
	return strings.Join(parts, ",")
}

func TestNoManagedPolicies(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		for id, r := range s.resources("AWS::IAM::Role") {
			if mp := props(r)["ManagedPolicyArns"]; mp != nil {
				t.Errorf("role %s has managed policies %v: every grant must be written out in this stack", id, mp)
			}
		}
	})
}

func TestStateMachine(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		smID, _ := s.only(t, "AWS::StepFunctions::StateMachine")
		s.hasProps(t, "AWS::StepFunctions::StateMachine", map[string]any{
			"StateMachineType": "STANDARD",
			"LoggingConfiguration": map[string]any{
				"Level": "ALL",
				"Destinations": []any{map[string]any{
					"CloudWatchLogsLogGroup": map[string]any{"LogGroupArn": map[string]any{"Fn::GetAtt": assertions.Match_AnyValue()}},
				}},
			},
			"TracingConfiguration": map[string]any{"Enabled": true},
		})
		versionID, version := s.only(t, "AWS::StepFunctions::StateMachineVersion")
		if got := render(version["StateMachineArn"]); got != "{"+smID+"}" {
			t.Errorf("version of %s, want {%s}", got, smID)
		}
		if got := render(version["StateMachineRevisionId"]); got != "{"+smID+".StateMachineRevisionId}" {
			t.Errorf("version not tied to the revision id: %s", got)
		}
		check(t, "version kept on replacement", func() {
			s.tpl.HasResource(jsii.String("AWS::StepFunctions::StateMachineVersion"), map[string]any{"UpdateReplacePolicy": "Retain"})
		})
		s.hasProps(t, "AWS::StepFunctions::StateMachineAlias", map[string]any{
			"Name": stack.AliasName,
			"RoutingConfiguration": []any{map[string]any{
				"StateMachineVersionArn": map[string]any{"Fn::GetAtt": []any{versionID, "Arn"}},
				"Weight":                 100,
			}},
		})
	})
}

// The functions the state machine invokes each publish a Lambda version
// (kept when a later deployment replaces it) with a `live` alias on it;
// the definition names the versions (definition_test.go). The API and
// recover functions, which no Task invokes, have none.
func TestLambdaVersionsAndAliases(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		versions := s.resources("AWS::Lambda::Version")
		aliases := s.resources("AWS::Lambda::Alias")
		if len(versions) != len(lifecycleSubstitutions) || len(aliases) != len(lifecycleSubstitutions) {
			t.Errorf("%d Lambda versions and %d aliases, want %d of each (one per function the state machine invokes)",
				len(versions), len(aliases), len(lifecycleSubstitutions))
		}
		raw := s.raw["Resources"].(map[string]any)
		for _, name := range lifecycleSubstitutions {
			t.Run(name, func(t *testing.T) {
				fnID, _ := s.function(t, name)
				versionID := lambdaVersionOf(t, s, fnID)
				if r := raw[versionID].(map[string]any); r["UpdateReplacePolicy"] != "Retain" || r["DeletionPolicy"] != "Retain" {
					t.Errorf("version %s of %s is not retained: UpdateReplacePolicy %v, DeletionPolicy %v", versionID, name, r["UpdateReplacePolicy"], r["DeletionPolicy"])
				}
				found := 0
				for _, a := range aliases {
					p := props(a)
					if render(p["FunctionName"]) != "{"+fnID+"}" {
						continue
					}
					found++
					if p["Name"] != stack.AliasName || render(p["FunctionVersion"]) != "{"+versionID+".Version}" {
						t.Errorf("alias of %s: name %v, version %s; want %s on {%s.Version}", name, p["Name"], render(p["FunctionVersion"]), stack.AliasName, versionID)
					}
				}
				if found != 1 {
					t.Errorf("%s has %d aliases, want 1", name, found)
				}
			})
		}
		// Retired functions are invoked only through the versions earlier
		// deployments published (retained): this one publishes none.
		for _, name := range append([]string{stack.FnAPI, stack.FnRecover}, retiredFunctions...) {
			fnID, _ := s.function(t, name)
			for id, v := range versions {
				if render(props(v)["FunctionName"]) == "{"+fnID+"}" {
					t.Errorf("%s has a version %s: no Task of this definition invokes it", name, id)
				}
			}
		}
	})
}

// lambdaVersionOf is the one AWS::Lambda::Version of a function.
func lambdaVersionOf(t *testing.T, s *synthesized, fnID string) string {
	t.Helper()
	var ids []string
	for id, v := range s.resources("AWS::Lambda::Version") {
		if render(props(v)["FunctionName"]) == "{"+fnID+"}" {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("function %s has versions %v, want exactly one", fnID, ids)
	}
	return ids[0]
}

func TestHTTPAPI(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		apiID, _ := s.only(t, "AWS::ApiGatewayV2::Api")
		authID, auth := s.only(t, "AWS::ApiGatewayV2::Authorizer")
		integrationID, integration := s.only(t, "AWS::ApiGatewayV2::Integration")
		apiFnID, _ := s.function(t, stack.FnAPI)

		if got := render(auth["JwtConfiguration"]); got == "" {
			t.Fatal("authorizer without JwtConfiguration")
		}
		s.hasProps(t, "AWS::ApiGatewayV2::Authorizer", map[string]any{
			"AuthorizerType": "JWT",
			"IdentitySource": []any{"$request.header.Authorization"},
			"JwtConfiguration": map[string]any{
				"Issuer":   map[string]any{"Ref": "JwtIssuer"},
				"Audience": map[string]any{"Fn::Split": []any{",", map[string]any{"Ref": "JwtAudience"}}},
			},
		})
		if got := render(integration["IntegrationUri"]); got != "{"+apiFnID+".Arn}" {
			t.Errorf("integration targets %s, want the api function", got)
		}
		s.hasProps(t, "AWS::ApiGatewayV2::Integration", map[string]any{
			"IntegrationType":      "AWS_PROXY",
			"PayloadFormatVersion": "2.0",
		})

		want := map[string]stack.Route{}
		for _, r := range stack.Routes {
			want[r.Method+" "+r.Path] = r
		}
		got := map[string]bool{}
		for id, r := range s.resources("AWS::ApiGatewayV2::Route") {
			p := props(r)
			key := p["RouteKey"].(string)
			got[key] = true
			route, ok := want[key]
			if !ok {
				t.Errorf("unexpected route %s (%s)", key, id)
				continue
			}
			if render(p["ApiId"]) != "{"+apiID+"}" {
				t.Errorf("%s on another API", key)
			}
			if tgt := render(p["Target"]); tgt != "integrations/{"+integrationID+"}" {
				t.Errorf("%s target %s, want the one integration", key, tgt)
			}
			if route.Public {
				if p["AuthorizationType"] != "NONE" || p["AuthorizerId"] != nil {
					t.Errorf("%s must be public, got %v %v", key, p["AuthorizationType"], p["AuthorizerId"])
				}
				continue
			}
			if p["AuthorizationType"] != "JWT" || render(p["AuthorizerId"]) != "{"+authID+"}" {
				t.Errorf("%s not behind the JWT authorizer: %v %v", key, p["AuthorizationType"], p["AuthorizerId"])
			}
		}
		for key := range want {
			if !got[key] {
				t.Errorf("route %s missing", key)
			}
		}
		if n := len(want); n != 44 {
			t.Errorf("route table has %d routes, want 44 (the API's table, checked by shared/httpapi's TestEveryRouteIsAnAPIGatewayRoute, plus the health check, the UI, the API reference page and POST/GET/DELETE /mcp)", n)
		}
		var public []string
		for _, r := range stack.Routes {
			if r.Public {
				public = append(public, r.Method+" "+r.Path)
			}
		}
		// Only the health check, the UI's static files and the API reference
		// page (a static file, served by the api function) skip the
		// authorizer; every /v1 route carries the JWT.
		if !slices.Equal(public, []string{"GET /healthz", "GET /", "GET /ui/{proxy+}", "GET /docs"}) {
			t.Errorf("public routes %v, want only GET /healthz, the UI's static files and GET /docs", public)
		}

		s.hasProps(t, "AWS::ApiGatewayV2::Stage", map[string]any{
			"StageName":  "$default",
			"AutoDeploy": true,
			"DefaultRouteSettings": map[string]any{
				"ThrottlingRateLimit":  s.cfg.APIRateLimit,
				"ThrottlingBurstLimit": s.cfg.APIBurstLimit,
			},
			"AccessLogSettings": map[string]any{
				"DestinationArn": map[string]any{"Fn::GetAtt": assertions.Match_AnyValue()},
				"Format":         assertions.Match_StringLikeRegexp(jsii.String(`"requestId":"\$context\.requestId"`)),
			},
		})
		// The api function may be invoked by this API only.
		for id, r := range s.resources("AWS::Lambda::Permission") {
			p := props(r)
			if render(p["FunctionName"]) != "{"+apiFnID+".Arn}" {
				continue
			}
			if p["Principal"] != "apigateway.amazonaws.com" || !strings.Contains(render(p["SourceArn"]), "{"+apiID+"}") {
				t.Errorf("permission %s lets %v invoke the api function from %s", id, p["Principal"], render(p["SourceArn"]))
			}
		}
	})
}

func TestLambdaPermissionsAreScoped(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		for id, r := range s.resources("AWS::Lambda::Permission") {
			p := props(r)
			if p["SourceArn"] == nil {
				t.Errorf("permission %s (%v) has no SourceArn", id, p["Principal"])
			}
			if p["Action"] != "lambda:InvokeFunction" {
				t.Errorf("permission %s grants %v", id, p["Action"])
			}
		}
	})
}

func TestRecoverTriggers(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		recoverID, fn := s.function(t, stack.FnRecover)
		smID, _ := s.only(t, "AWS::StepFunctions::StateMachine")
		dlqID, _ := s.only(t, "AWS::SQS::Queue")
		target := map[string]any{
			"Arn":              map[string]any{"Fn::GetAtt": []any{recoverID, "Arn"}},
			"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}},
			"RetryPolicy":      map[string]any{"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
		}
		s.hasProps(t, "AWS::Events::Rule", map[string]any{
			"ScheduleExpression": "rate(1 minute)",
			"State":              "ENABLED",
			"Targets":            []any{target},
		})
		s.hasProps(t, "AWS::Events::Rule", map[string]any{
			"EventPattern": assertions.Match_ObjectEquals(&map[string]any{
				"source":      []any{"aws.states"},
				"detail-type": []any{"Step Functions Execution Status Change"},
				"detail": map[string]any{
					"status":          []any{"FAILED", "TIMED_OUT", "ABORTED"},
					"stateMachineArn": []any{map[string]any{"Ref": smID}},
				},
			}),
			"EventBusName": assertions.Match_Absent(), // the default bus: Step Functions publishes there
			"Targets":      []any{target},
		})
		if n := len(s.resources("AWS::Events::Rule")); n != 2 {
			t.Errorf("want 2 rules, got %d", n)
		}
		// Asynchronous invocation: failures after two retries go to the DLQ.
		if got := render(fn["DeadLetterConfig"].(map[string]any)["TargetArn"]); got != "{"+dlqID+".Arn}" {
			t.Errorf("recover DLQ %s", got)
		}
		s.hasProps(t, "AWS::Lambda::EventInvokeConfig", map[string]any{
			"FunctionName":             map[string]any{"Ref": recoverID},
			"MaximumRetryAttempts":     2,
			"MaximumEventAgeInSeconds": 3600,
		})
		// Both rules may invoke recover, each from its own ARN.
		rules := s.resources("AWS::Events::Rule")
		for ruleID := range rules {
			s.hasProps(t, "AWS::Lambda::Permission", map[string]any{
				"FunctionName": map[string]any{"Fn::GetAtt": []any{recoverID, "Arn"}},
				"Principal":    "events.amazonaws.com",
				"SourceArn":    map[string]any{"Fn::GetAtt": []any{ruleID, "Arn"}},
			})
		}
	})
}

func TestEventBus(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		busID, _ := s.only(t, "AWS::Events::EventBus")
		s.hasProps(t, "AWS::Events::EventBus", map[string]any{"Name": assertions.Match_AnyValue()})
		check(t, "bus name output", func() {
			s.tpl.HasOutput(jsii.String(stack.OutputEventBusName), map[string]any{"Value": map[string]any{"Ref": busID}})
		})
	})
}

func TestDeadLetterQueue(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		dlqID, _ := s.only(t, "AWS::SQS::Queue")
		s.hasProps(t, "AWS::SQS::Queue", map[string]any{
			"SqsManagedSseEnabled":   true,
			"MessageRetentionPeriod": 14 * 24 * 3600,
		})
		_, qp := s.only(t, "AWS::SQS::QueuePolicy")
		var sawDeny, sawEvents bool
		for _, st := range list(qp["PolicyDocument"].(map[string]any)["Statement"]) {
			stmt := st.(map[string]any)
			if stmt["Effect"] == "Deny" && render(stmt["Condition"]) == `{"Bool":{"aws:SecureTransport":"false"}}` {
				sawDeny = true
			}
			if stmt["Effect"] == "Allow" {
				if render(stmt["Principal"]) != `{"Service":"events.amazonaws.com"}` || stmt["Condition"] == nil {
					t.Errorf("queue policy allows %s without a source condition", render(stmt["Principal"]))
				}
				sawEvents = true
			}
		}
		if !sawDeny || !sawEvents {
			t.Errorf("queue policy: enforce SSL %v, EventBridge delivery %v", sawDeny, sawEvents)
		}
		s.hasProps(t, "AWS::CloudWatch::Alarm", map[string]any{
			"Namespace":          "AWS/SQS",
			"MetricName":         "ApproximateAgeOfOldestMessage",
			"Dimensions":         []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{dlqID, "QueueName"}}}},
			"Statistic":          "Maximum",
			"Threshold":          300,
			"ComparisonOperator": "GreaterThanOrEqualToThreshold",
			"TreatMissingData":   "notBreaching",
		})
	})
}

func TestBlobBucket(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		bucketID, _ := s.only(t, "AWS::S3::Bucket")
		s.hasProps(t, "AWS::S3::Bucket", map[string]any{
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
			}},
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"OwnershipControls": map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
			"LifecycleConfiguration": map[string]any{"Rules": []any{map[string]any{
				"Id":                                "expire-result-blobs",
				"Status":                            "Enabled",
				"ExpirationInDays":                  float64(s.cfg.BlobRetentionDays),
				"AbortIncompleteMultipartUpload":    map[string]any{"DaysAfterInitiation": 1},
				"NoncurrentVersionExpirationInDays": assertions.Match_Absent(),
				"ExpiredObjectDeleteMarker":         assertions.Match_Absent(),
				"NoncurrentVersionTransitions":      assertions.Match_Absent(),
				"Transitions":                       assertions.Match_Absent(),
			}}},
		})
		_, bp := s.only(t, "AWS::S3::BucketPolicy")
		if render(bp["Bucket"]) != "{"+bucketID+"}" {
			t.Errorf("bucket policy on %s", render(bp["Bucket"]))
		}
		var ssl, tls bool
		for _, st := range list(bp["PolicyDocument"].(map[string]any)["Statement"]) {
			stmt := st.(map[string]any)
			if stmt["Effect"] != "Deny" {
				t.Errorf("bucket policy has a non-deny statement: %s", render(stmt))
			}
			c := render(stmt["Condition"])
			ssl = ssl || c == `{"Bool":{"aws:SecureTransport":"false"}}`
			tls = tls || c == `{"NumericLessThan":{"s3:TlsVersion":1.2}}`
		}
		if !ssl || !tls {
			t.Errorf("bucket policy: deny non-SSL %v, deny TLS < 1.2 %v", ssl, tls)
		}
	})
	if defaults.cfg.BlobRetentionDays != 90 {
		t.Errorf("documented blob retention is 90 days, cdk.json says %d", defaults.cfg.BlobRetentionDays)
	}
}

func TestAlarms(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		smID, _ := s.only(t, "AWS::StepFunctions::StateMachine")
		alarms := s.resources("AWS::CloudWatch::Alarm")
		if len(alarms) != 4 {
			t.Errorf("want 4 alarms, got %d", len(alarms))
		}
		smDims := []any{map[string]any{"Name": "StateMachineArn", "Value": map[string]any{"Ref": smID}}}
		for _, metric := range []string{"ExecutionsFailed", "ExecutionsTimedOut"} {
			s.hasProps(t, "AWS::CloudWatch::Alarm", map[string]any{
				"Namespace": "AWS/States", "MetricName": metric, "Dimensions": smDims,
				"Statistic": "Sum", "Period": 300, "Threshold": 1,
				"ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching",
			})
		}
		s.hasProps(t, "AWS::CloudWatch::Alarm", map[string]any{
			"Namespace": "OpenProgram/Lifecycle", "MetricName": "UnknownOutcomes",
			// No dimensions: the record function emits the metric without any.
			"Dimensions": assertions.Match_Absent(),
			"Statistic":  "Sum", "Threshold": 1,
		})
		for id, a := range alarms {
			actions := props(a)["AlarmActions"]
			if s.cfg.AlarmTopicARN == "" && actions != nil {
				t.Errorf("alarm %s has actions without a topic: %v", id, actions)
			}
			if s.cfg.AlarmTopicARN != "" && render(actions) != `["`+s.cfg.AlarmTopicARN+`"]` {
				t.Errorf("alarm %s actions %s, want the topic", id, render(actions))
			}
		}
	})
}

func TestParametersAndOutputs(t *testing.T) {
	both(t, func(t *testing.T, s *synthesized) {
		for name, def := range map[string]string{"JwtIssuer": s.cfg.JWTIssuer, "JwtAudience": s.cfg.JWTAudience} {
			want := map[string]any{"Type": "String"}
			if def == "" {
				want["Default"] = assertions.Match_Absent()
			} else {
				want["Default"] = def
			}
			check(t, "parameter "+name, func() { s.tpl.HasParameter(jsii.String(name), want) })
		}
		tableID, _ := s.only(t, "AWS::DynamoDB::Table")
		smID, _ := s.only(t, "AWS::StepFunctions::StateMachine")
		aliasID, _ := s.only(t, "AWS::StepFunctions::StateMachineAlias")
		versionID, _ := s.only(t, "AWS::StepFunctions::StateMachineVersion")
		busID, _ := s.only(t, "AWS::Events::EventBus")
		bucketID, _ := s.only(t, "AWS::S3::Bucket")
		stageID, _ := s.only(t, "AWS::ApiGatewayV2::Stage")
		apiID, _ := s.only(t, "AWS::ApiGatewayV2::Api")
		_ = stageID
		want := map[string]string{
			stack.OutputAPIURL:                 "https://{" + apiID + "}.execute-api.{AWS::Region}.{AWS::URLSuffix}/",
			stack.OutputTableName:              "{" + tableID + "}",
			stack.OutputStateMachineARN:        "{" + smID + "}",
			stack.OutputStateMachineAliasARN:   "{" + aliasID + ".Arn}",
			stack.OutputStateMachineVersionARN: "{" + versionID + ".Arn}",
			stack.OutputEventBusName:           "{" + busID + "}",
			stack.OutputBlobBucketName:         "{" + bucketID + "}",
		}
		outputs := s.raw["Outputs"].(map[string]any)
		if len(outputs) != len(want) {
			t.Errorf("want %d outputs, got %d", len(want), len(outputs))
		}
		for name, value := range want {
			o, ok := outputs[name].(map[string]any)
			if !ok {
				t.Errorf("output %s missing", name)
				continue
			}
			if got := render(o["Value"]); got != value {
				t.Errorf("output %s = %s, want %s", name, got, value)
			}
		}
	})
}

// TestValidationReport: the CDK's built-in CloudFormation validation
// (feature flag in cdk.json) ran and found nothing unacknowledged.
func TestValidationReport(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(defaults.outdir, "validation-report.json"))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		PluginReports []struct {
			PluginName string `json:"pluginName"`
			Violations []struct {
				RuleName    string `json:"ruleName"`
				Description string `json:"description"`
			} `json:"violations"`
		} `json:"pluginReports"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	for _, p := range report.PluginReports {
		for _, v := range p.Violations {
			t.Errorf("%s: %s %s", p.PluginName, v.RuleName, v.Description)
		}
	}
}
