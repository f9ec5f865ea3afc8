package modelreq

import (
	"context"

	"github.com/openprogram/lifecycle/shared/permission"
)

// Classifier accounts every review of an LLM classifier (Bedrock) as one
// model request: started before the call, completed after it with the
// status of its error. The verdict and the error pass through unchanged, so
// a failed or cancelled request is never taken as an answer.
type Classifier struct {
	Inner    permission.Classifier
	Ledger   *Ledger
	Provider string
	Model    string
}

var _ permission.Classifier = Classifier{}

func (c Classifier) Review(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
	var v permission.Verdict
	_, err := c.Ledger.Do(ctx, Record{SessionID: in.Trusted.SessionID, Provider: c.Provider, Model: c.Model,
		Purpose: PurposeReviewer, ActionID: in.ActionID},
		func(ctx context.Context) error {
			var err error
			v, err = c.Inner.Review(ctx, in)
			return err
		})
	return v, err
}
