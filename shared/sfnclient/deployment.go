package sfnclient

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/store"
)

// RegisterDeployment records, at a function's cold start in AWS, the
// revision this deployment published: the state machine version the stack
// names (versionARN, from CloudFormation) is described, and the revision
// is the canonical digest of the definition that version really runs (its
// Tasks name qualified Lambda versions, so a change of handler code is a
// new definition and a new revision) with this build's handler contract.
// It becomes the live revision unless the registry's live one is a later
// version (an instance of an older deployment starting late never moves
// live back). Idempotent: every cold start of a deployment does the same.
func RegisterDeployment(ctx context.Context, api *sfn.Client, reg *revision.Registry, versionARN string, now time.Time) (revision.Published, error) {
	n, err := versionNumber(versionARN)
	if err != nil {
		return revision.Published{}, err
	}
	out, err := api.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(versionARN)})
	if err != nil {
		return revision.Published{}, fmt.Errorf("describe the deployed state machine version %s: %w", versionARN, err)
	}
	rev, err := revision.Of([]byte(aws.ToString(out.Definition)), revision.HandlerContract, revision.HandlerResumes)
	if err != nil {
		return revision.Published{}, fmt.Errorf("the definition of %s: %w", versionARN, err)
	}
	p := revision.Published{Revision: rev, VersionARN: versionARN, PublishedAt: now}
	if err := reg.Put(ctx, p); err != nil {
		return p, err
	}
	live, err := reg.Live(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return p, err
	default:
		if cur, err := versionNumber(live.VersionARN); err == nil && cur > n {
			return p, nil
		}
	}
	return p, reg.SetLive(ctx, rev.ID)
}

// versionNumber is the N of a state machine version ARN
// (arn:aws:states:<region>:<account>:stateMachine:<name>:<N>).
func versionNumber(arn string) (int, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[5] != "stateMachine" {
		return 0, fmt.Errorf("%q is not a state machine version ARN", arn)
	}
	n, err := strconv.Atoi(parts[7])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a state machine version ARN (its version is not a number)", arn)
	}
	return n, nil
}
