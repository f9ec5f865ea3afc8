package sfnlocal

import (
	"time"

	"github.com/openprogram/lifecycle/shared/asl"
)

// StatusChangeEvent is the EventBridge event Step Functions emits when an
// execution changes status (detail-type "Step Functions Execution Status
// Change", source "aws.states"). It marshals to the same JSON, so it can be
// decoded into aws-lambda-go's events.CloudWatchEvent (or
// events.EventBridgeEvent) exactly like the real one.
type StatusChangeEvent struct {
	Version    string             `json:"version"`
	ID         string             `json:"id"`
	DetailType string             `json:"detail-type"`
	Source     string             `json:"source"`
	Account    string             `json:"account"`
	Time       time.Time          `json:"time"`
	Region     string             `json:"region"`
	Resources  []string           `json:"resources"`
	Detail     StatusChangeDetail `json:"detail"`
}

// StatusChangeDetail is the detail of a StatusChangeEvent. Dates are Unix
// milliseconds; StopDate, Output, Error and Cause are null until they exist.
type StatusChangeDetail struct {
	ExecutionArn    string        `json:"executionArn"`
	StateMachineArn string        `json:"stateMachineArn"`
	Name            string        `json:"name"`
	Status          string        `json:"status"`
	StartDate       int64         `json:"startDate"`
	StopDate        *int64        `json:"stopDate"`
	Input           string        `json:"input"`
	InputDetails    *includedData `json:"inputDetails"`
	Output          *string       `json:"output"`
	OutputDetails   *includedData `json:"outputDetails"`
	Error           *string       `json:"error"`
	Cause           *string       `json:"cause"`
}

type includedData struct {
	Included bool `json:"included"`
}

// Event constants of the status-change event.
const (
	StatusChangeSource     = "aws.states"
	StatusChangeDetailType = "Step Functions Execution Status Change"
)

func (e *Engine) statusEvent(r *record) StatusChangeEvent {
	arn := e.ExecutionArn(r.Name)
	d := StatusChangeDetail{
		ExecutionArn:    arn,
		StateMachineArn: e.smArn,
		Name:            r.Name,
		Status:          r.Status,
		StartDate:       r.Start,
		Input:           r.Input,
		InputDetails:    &includedData{Included: true},
	}
	at := fromMS(r.Start)
	if r.Status != statusRunning {
		stop := r.Stop
		d.StopDate = &stop
		at = fromMS(r.Stop)
	}
	if r.Status == statusSucceeded {
		d.Output = strp(string(r.Output))
		d.OutputDetails = &includedData{Included: true}
	}
	if r.Error != "" || r.Status == statusFailed || r.Status == statusTimedOut || r.Status == statusAborted {
		if r.Error != "" {
			d.Error = strp(r.Error)
		}
		if r.Cause != "" {
			d.Cause = strp(r.Cause)
		}
	}
	return StatusChangeEvent{
		Version:    "0",
		ID:         asl.NewUUID(),
		DetailType: StatusChangeDetailType,
		Source:     StatusChangeSource,
		Account:    e.account,
		Time:       at.Truncate(time.Second),
		Region:     e.region,
		Resources:  []string{arn},
		Detail:     d,
	}
}
