package ebpublisher

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/openprogram/lifecycle/shared/actionflow"
)

// Source of every projection event.
const Source = "openprogram.lifecycle"

// Publisher puts events on one bus.
type Publisher struct {
	Client *eventbridge.Client
	Bus    string
}

var _ actionflow.Publisher = (*Publisher)(nil)

func (p *Publisher) Publish(ctx context.Context, ev actionflow.Event) error {
	detail, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	out, err := p.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(p.Bus), Source: aws.String(Source), DetailType: aws.String(ev.Type),
		Detail: aws.String(string(detail)), Resources: []string{},
	}}})
	if err != nil {
		return fmt.Errorf("put event %s: %w", ev.Type, err)
	}
	if out.FailedEntryCount > 0 {
		e := out.Entries[0]
		return fmt.Errorf("put event %s: %s: %s", ev.Type, aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
	}
	return nil
}
