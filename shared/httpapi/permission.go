package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
)

// ValidatePermissionPolicy is the policystore.Validator of permission
// documents: it parses with permission.ParsePolicy and answers the first
// problem as a ValidationError naming its place ("policy.deny[2]") with
// line, column and rule in the message, and how many more there are.
func ValidatePermissionPolicy(doc json.RawMessage) (string, error) {
	p, err := permission.ParsePolicy(doc)
	if err == nil {
		return p.Version, nil
	}
	var pe *permission.PolicyError
	if errors.As(err, &pe) && len(pe.Errors) > 0 {
		first := pe.Errors[0]
		field := "policy"
		if first.Field != "" {
			field += "." + first.Field
		}
		msg := first.Error()
		if n := len(pe.Errors) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more problem(s))", n)
		}
		return "", &actionflow.ValidationError{Field: field, Msg: msg}
	}
	return "", &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
}

// PermissionPolicyValidator is ValidatePermissionPolicy followed by the
// checks only the engine can make (its sandbox paths against the service's
// state directory and the credential stores under home), answered as a
// ValidationError naming the setting ("policy.sandbox.writable[0]").
func PermissionPolicyValidator(eng *permission.Engine, home string) func(json.RawMessage) (string, error) {
	return func(doc json.RawMessage) (string, error) {
		v, err := ValidatePermissionPolicy(doc)
		if err != nil {
			return v, err
		}
		p, err := permission.ParsePolicy(doc)
		if err == nil {
			err = eng.CheckSandbox(p, home)
		}
		var se *permission.SandboxPathError
		if errors.As(err, &se) {
			return "", &actionflow.ValidationError{Field: "policy." + se.Field, Msg: se.Error()}
		}
		if err != nil {
			return "", &actionflow.ValidationError{Field: "policy", Msg: err.Error()}
		}
		return v, nil
	}
}

// LivePolicies returns a session's live permission policy (nil: none;
// decider.Policies has the same shape).
type LivePolicies interface {
	Policy(ctx context.Context, session ids.SessionID) (*permission.Policy, error)
}

// PermissionTools is the ToolLister of the permission engine: the catalog
// filtered by permission.VisibleTools against the session's live policy
// (Default when the session has none).
type PermissionTools struct {
	Policies LivePolicies
	Default  *permission.Policy
	Catalog  []permission.ToolSpec
}

// Knows reports whether the catalog has the tool (under any spelling
// identity.CanonicalTool accepts), whether or not a session's policy shows
// it: a front door that offers only the catalog (MCP) refuses any other
// name at once instead of submitting it.
func (pt PermissionTools) Knows(tool string) bool {
	c := identity.CanonicalTool(tool)
	for _, t := range pt.Catalog {
		if t.Name == tool || identity.CanonicalTool(t.Name) == c {
			return true
		}
	}
	return false
}

// VisibleTools implements ToolLister.
func (pt PermissionTools) VisibleTools(ctx context.Context, session ids.SessionID) (ToolList, error) {
	p, err := pt.Policies.Policy(ctx, session)
	if err != nil {
		return ToolList{}, err
	}
	if p == nil {
		p = pt.Default
	}
	out := ToolList{Tools: []Tool{}}
	if p != nil {
		out.PolicyVersion = p.Version
	}
	for _, t := range permission.VisibleTools(p, pt.Catalog) {
		out.Tools = append(out.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out, nil
}
