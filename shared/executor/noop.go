package executor

import (
	"context"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/lifecycle"
)

// Noop succeeds without side effects.
type Noop struct{}

var _ actionflow.Executor = Noop{}

func (Noop) Execute(ctx context.Context, t actionflow.Task) (actionflow.ToolResult, error) {
	return actionflow.ToolResult{Outcome: lifecycle.OutcomeSucceeded, Output: "ok"}, nil
}
