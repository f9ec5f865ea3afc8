package sfnlocal

import (
	"context"
	"errors"
	"strings"

	"github.com/openprogram/lifecycle/shared/asl"
)

// The read API a console or toolkit calls first (the AWS CLI, boto3, the
// AWS Toolkit for VS Code): the engine runs one Standard state machine,
// which these operations describe as Step Functions does.

type listStateMachinesInput struct {
	MaxResults int    `json:"maxResults"`
	NextToken  string `json:"nextToken"`
}

type stateMachineArnInput struct {
	StateMachineArn string `json:"stateMachineArn"`
}

type validateInput struct {
	Definition *string `json:"definition"`
	Type       string  `json:"type"`
	Severity   string  `json:"severity"`
	MaxResults int     `json:"maxResults"`
}

// listStateMachines lists the one state machine. It never returns a
// nextToken, so any token it is given is not one of its own.
func (e *Engine) listStateMachines(in listStateMachinesInput) (any, error) {
	if in.MaxResults < 0 || in.MaxResults > 1000 {
		return nil, clientError("ValidationException", "maxResults must be between 0 and 1000, got %d", in.MaxResults)
	}
	if in.NextToken != "" {
		return nil, clientError("InvalidToken", "Invalid Token: '%s'", in.NextToken)
	}
	return map[string]any{"stateMachines": []map[string]any{{
		"stateMachineArn": e.smArn,
		"name":            e.smName,
		"type":            "STANDARD",
		"creationDate":    epochSeconds(e.created),
	}}}, nil
}

// describeStateMachine is DescribeStateMachine's answer: the definition as
// loaded, with its placeholders filled.
func (e *Engine) describeStateMachine(arn string) (any, error) {
	if err := e.checkStateMachine(arn); err != nil {
		return nil, err
	}
	return map[string]any{
		"stateMachineArn":      e.smArn,
		"name":                 e.smName,
		"status":               "ACTIVE",
		"definition":           string(e.def),
		"roleArn":              e.roleArn(),
		"type":                 "STANDARD",
		"creationDate":         epochSeconds(e.created),
		"loggingConfiguration": map[string]any{"level": "OFF", "includeExecutionData": false},
		"tracingConfiguration": map[string]any{"enabled": false},
	}, nil
}

// describeStateMachineForExecution answers for an execution that exists
// (running or closed). The definition is not versioned (see Limits), so
// every execution ran the current one.
func (e *Engine) describeStateMachineForExecution(ctx context.Context, arn string) (any, error) {
	name, err := e.executionName(arn)
	if err != nil {
		return nil, err
	}
	if _, err := e.load(ctx, name); err != nil {
		return nil, err
	}
	return map[string]any{
		"stateMachineArn":      e.smArn,
		"name":                 e.smName,
		"definition":           string(e.def),
		"roleArn":              e.roleArn(),
		"updateDate":           epochSeconds(e.created),
		"loggingConfiguration": map[string]any{"level": "OFF", "includeExecutionData": false},
		"tracingConfiguration": map[string]any{"enabled": false},
	}, nil
}

// validateDefinition runs the engine's own validation (shared/asl.Parse,
// the one that refuses a definition at New) and reports its problems as
// Step Functions' diagnostics. A definition Step Functions accepts but the
// engine does not implement (Parallel, Map, JSONata) FAILs here, with a
// message saying so: it would not run locally.
func validateDefinition(in validateInput) (any, error) {
	if in.Definition == nil || *in.Definition == "" {
		return nil, clientError("ValidationException", "definition is required")
	}
	switch in.Type {
	case "", "STANDARD", "EXPRESS":
	default:
		return nil, clientError("ValidationException", "type must be STANDARD or EXPRESS, got %q", in.Type)
	}
	switch in.Severity {
	case "", "ERROR", "WARNING":
	default:
		return nil, clientError("ValidationException", "severity must be ERROR or WARNING, got %q", in.Severity)
	}
	if in.MaxResults < 0 || in.MaxResults > 100 {
		return nil, clientError("ValidationException", "maxResults must be between 0 and 100, got %d", in.MaxResults)
	}
	size := in.MaxResults
	if size == 0 {
		size = 100
	}
	diagnostics := []map[string]any{}
	_, err := asl.Parse([]byte(*in.Definition))
	var ve *asl.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		// The engine reports errors only, which both severity levels show.
		for _, p := range ve.Problems {
			d := map[string]any{"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": p.String()}
			if p.Path != "" {
				d["location"] = "/" + strings.ReplaceAll(p.Path, ".", "/")
			}
			diagnostics = append(diagnostics, d)
		}
	default:
		return nil, err
	}
	out := map[string]any{"result": "OK", "diagnostics": diagnostics[:min(size, len(diagnostics))], "truncated": len(diagnostics) > size}
	if len(diagnostics) > 0 {
		out["result"] = "FAIL"
	}
	return out, nil
}

// listVersionsOrAliases answers ListStateMachineVersions and
// ListStateMachineAliases: the embedded engine does not version its
// definition (see Limits), so there are none, and it never hands out a
// token for these lists.
//
// ListStateMachineVersions' model has no StateMachineDoesNotExist (only
// InvalidArn, InvalidToken and ValidationException), so another state
// machine's ARN is a ValidationException there, as SDKs can type it.
func (e *Engine) listVersionsOrAliases(field string, in listInput) (any, error) {
	if err := e.checkStateMachine(in.StateMachineArn); err != nil {
		var ae *apiError
		if field == "stateMachineVersions" && errors.As(err, &ae) && ae.code == "StateMachineDoesNotExist" {
			ae.code = "ValidationException"
		}
		return nil, err
	}
	if in.MaxResults < 0 || in.MaxResults > 1000 {
		return nil, clientError("ValidationException", "maxResults must be between 0 and 1000, got %d", in.MaxResults)
	}
	if in.NextToken != "" {
		return nil, clientError("InvalidToken", "Invalid Token: '%s'", in.NextToken)
	}
	return map[string]any{field: []any{}}, nil
}
