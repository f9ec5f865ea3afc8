package actionflow

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// InvalidArguments is what prepare found wrong with a call's arguments
// (the tool contract, identity.Contract.CheckArguments, and the workspace
// boundary of its path fields). An action carrying it is refused at its
// first authorization, before the permission engine is asked, so no rule,
// grant, mode or approval can let it run; it ends not_started with
// invalid_arguments and these details.
type InvalidArguments struct {
	Problems []FieldProblem `json:"problems"`
	// OutsideWorkspace: a path field leads out of the workspace (a hard
	// constraint; the decision's source says so).
	OutsideWorkspace bool `json:"outside_workspace,omitempty"`
}

// Summary is the problems as one line ("file_path: ...; content: required").
func (v *InvalidArguments) Summary() string {
	msgs := make([]string, len(v.Problems))
	for i, p := range v.Problems {
		msgs[i] = p.Field + ": " + p.Problem
	}
	return strings.Join(msgs, "; ")
}

// checkArguments is the prepare step's argument check (nil: valid). A
// tool without a contract is checked by nothing here (the permission
// engine still refuses what it cannot judge).
func (s *Service) checkArguments(tool string, args json.RawMessage) *InvalidArguments {
	ct, ok := s.cfg.Contracts.Lookup(tool)
	if !ok {
		return nil
	}
	var v InvalidArguments
	seen := map[string]bool{}
	for _, p := range ct.CheckArguments(args) {
		v.Problems = append(v.Problems, FieldProblem{Field: p.Field, Problem: p.Problem})
		v.OutsideWorkspace = v.OutsideWorkspace || p.OutsideWorkspace
		seen[p.Field] = true
	}
	if s.cfg.Workspace != "" {
		for _, pa := range ct.PathArguments(args) {
			if seen[pa.Field] {
				continue
			}
			if _, err := WorkspacePath(s.cfg.Workspace, pa.Path); err != nil {
				v.Problems = append(v.Problems, FieldProblem{Field: pa.Field, Problem: err.Error()})
				v.OutsideWorkspace = true
			}
		}
	}
	if len(v.Problems) == 0 {
		return nil
	}
	return &v
}

// WorkspacePath resolves a host tool's path the one way prepare and the
// host tools share: relative to root, ".." cleaned, symbolic links of its
// deepest existing ancestor followed (the rest may not exist yet). A path
// that lands outside root is an error naming it. The host tool resolves
// again when it runs (a link may change in between).
func WorkspacePath(root, p string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", root, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(abs, p)
	}
	full = filepath.Clean(full)
	probe, rest := full, []string(nil)
	for {
		if real, err := filepath.EvalSymlinks(probe); err == nil {
			full = filepath.Join(append([]string{real}, rest...)...)
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			break
		}
		rest = append([]string{filepath.Base(probe)}, rest...)
		probe = parent
	}
	rel, err := filepath.Rel(abs, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is outside the workspace", p)
	}
	return full, nil
}

// invalidDecision is the refusal of an action whose arguments prepare
// found invalid: a path outside the workspace is a hard constraint; any
// other problem is invalid_arguments. Neither is the permission engine's
// to lift.
func invalidDecision(v *InvalidArguments) Decision {
	d := Decision{Permission: lifecycle.PermissionDeny,
		Reason:     Reason{Source: "invalid_arguments", Code: "invalid_arguments", Detail: v.Summary()},
		Resolution: "correct the arguments named in the validation details, then submit the call again"}
	if v.OutsideWorkspace {
		d.Reason.Source, d.Reason.Code = "hard_constraint", "outside_workspace"
		d.Resolution = "use paths inside the workspace; no rule, grant, mode or approval allows a path outside it"
	}
	return d
}
