package sfnlocal

import (
	"context"
	"errors"
	"fmt"
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

// describeStateMachine is DescribeStateMachine's answer for the state
// machine (its current definition, as loaded, placeholders filled) or one
// of its versions (the definition published).
func (e *Engine) describeStateMachine(ctx context.Context, arn string) (any, error) {
	t, err := e.parseTarget(arn)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"stateMachineArn":      e.smArn,
		"name":                 e.smName,
		"status":               "ACTIVE",
		"definition":           string(e.def),
		"roleArn":              e.roleArn(),
		"type":                 "STANDARD",
		"creationDate":         epochSeconds(e.created),
		"revisionId":           revisionID(e.digest),
		"loggingConfiguration": map[string]any{"level": "OFF", "includeExecutionData": false},
		"tracingConfiguration": map[string]any{"enabled": false},
	}
	switch {
	case t.alias != "":
		return nil, clientError("ValidationException", "'%s' is an alias ARN: DescribeStateMachineAlias describes aliases", arn)
	case t.version != 0:
		v, _, err := e.getVersion(ctx, t.version)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, clientError("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", arn)
		}
		d, err := e.loadDefinition(ctx, v.Def)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", v.Version, err)
		}
		out["stateMachineArn"] = arn
		out["definition"] = string(d.raw)
		out["creationDate"] = epochSeconds(fromMS(v.Created))
		out["revisionId"] = revisionID(v.Def)
		if v.Description != "" {
			out["description"] = v.Description
		}
	}
	return out, nil
}

// describeStateMachineForExecution answers for an execution that exists
// (running or closed) with the definition it runs or ran: the one current,
// or of its version, when it started.
func (e *Engine) describeStateMachineForExecution(ctx context.Context, arn string) (any, error) {
	name, err := e.executionName(arn)
	if err != nil {
		return nil, err
	}
	r, err := e.load(ctx, name)
	if err != nil {
		return nil, err
	}
	def, digest := e.def, e.digest
	if r.Def != "" {
		d, err := e.loadDefinition(ctx, r.Def)
		if err != nil {
			return nil, fmt.Errorf("execution %s: %w", name, err)
		}
		def, digest = d.raw, r.Def
	}
	out := map[string]any{
		"stateMachineArn":      e.smArn,
		"name":                 e.smName,
		"definition":           string(def),
		"roleArn":              e.roleArn(),
		"updateDate":           epochSeconds(e.created),
		"revisionId":           revisionID(digest),
		"loggingConfiguration": map[string]any{"level": "OFF", "includeExecutionData": false},
		"tracingConfiguration": map[string]any{"enabled": false},
	}
	return out, nil
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
