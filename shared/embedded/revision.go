package embedded

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/store"
)

// deployRevision does at start what a deployment does on AWS: when the
// definition or the handler contract changed since the live revision (or
// none is live yet), it publishes a state machine version of the current
// definition, records the revision, points the `live` alias at it and
// makes it the live one. An unchanged start publishes nothing; it only
// puts the alias back on the live version if something moved it. A
// revision that ran before (a rollback) goes live again on the version it
// was published as, since a revision runs on one version.
//
// Every call goes through the engine's Step Functions API with the real
// client, as the CDK stack's version and alias resources do on AWS.
func (s *Stack) deployRevision(ctx context.Context, cfg Config) error {
	contract, resumes := cfg.HandlerContract, cfg.HandlerResumes
	if contract == 0 {
		contract, resumes = revision.HandlerContract, revision.HandlerResumes
	}
	rev, err := revision.Of(cfg.Definition, contract, resumes)
	if err != nil {
		return fmt.Errorf("revision: %w", err)
	}
	s.Revisions = revision.NewRegistry(s.Store)
	live, err := s.Revisions.Live(ctx)
	switch {
	case err == nil && live.Revision.ID == rev.ID:
	case err == nil || errors.Is(err, store.ErrNotFound):
		if live, err = s.publishRevision(ctx, rev); err != nil {
			return err
		}
	default:
		return fmt.Errorf("read the live revision: %w", err)
	}
	aliasARN := s.SFNClient.StateMachineARN + ":" + revision.LiveAlias
	if err := s.pointLiveAlias(ctx, aliasARN, live.VersionARN); err != nil {
		return err
	}
	if err := s.Revisions.SetLive(ctx, live.Revision.ID); err != nil {
		return err
	}
	s.Revision, s.LiveAliasARN, s.LiveVersionARN = live, aliasARN, live.VersionARN
	s.log.Info("live revision", "revision", live.Revision.ID, "contract", live.Revision.Contract,
		"version_arn", live.VersionARN, "alias_arn", aliasARN)
	return nil
}

// publishRevision publishes (or, for a revision that ran before, finds)
// the version of rev and records it.
func (s *Stack) publishRevision(ctx context.Context, rev revision.Revision) (revision.Published, error) {
	p, err := s.Revisions.Get(ctx, rev.ID)
	switch {
	case err == nil:
		if _, err := s.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(p.VersionARN)}); err != nil {
			return revision.Published{}, fmt.Errorf("revision %s was published as %s, which cannot be described (deleted?): %w", rev.ID, p.VersionARN, err)
		}
		return p, nil
	case !errors.Is(err, store.ErrNotFound):
		return revision.Published{}, err
	}
	out, err := s.SFN.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{
		StateMachineArn: aws.String(s.SFNClient.StateMachineARN),
		Description:     aws.String(fmt.Sprintf("revision %s (handler contract %d)", rev.ID, rev.Contract)),
	})
	if err != nil {
		return revision.Published{}, fmt.Errorf("publish revision %s: %w", rev.ID, err)
	}
	p = revision.Published{Revision: rev, VersionARN: aws.ToString(out.StateMachineVersionArn), PublishedAt: aws.ToTime(out.CreationDate)}
	if p.PublishedAt.IsZero() {
		p.PublishedAt = s.Service.Now()
	}
	if err := s.Revisions.Put(ctx, p); err != nil {
		return revision.Published{}, err
	}
	s.log.Info("published a new revision", "revision", rev.ID, "version_arn", p.VersionARN)
	return p, nil
}

// pointLiveAlias makes the `live` alias route everything to version.
func (s *Stack) pointLiveAlias(ctx context.Context, aliasARN, version string) error {
	routing := []types.RoutingConfigurationListItem{{StateMachineVersionArn: aws.String(version), Weight: 100}}
	d, err := s.SFN.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(aliasARN)})
	var nf *types.ResourceNotFound
	switch {
	case errors.As(err, &nf):
		_, err = s.SFN.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{
			Name: aws.String(revision.LiveAlias), RoutingConfiguration: routing,
			Description: aws.String("the revision new actions start on")})
		if err != nil {
			return fmt.Errorf("create the %s alias: %w", revision.LiveAlias, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("describe the %s alias: %w", revision.LiveAlias, err)
	}
	if len(d.RoutingConfiguration) == 1 && aws.ToString(d.RoutingConfiguration[0].StateMachineVersionArn) == version && d.RoutingConfiguration[0].Weight == 100 {
		return nil
	}
	if _, err := s.SFN.UpdateStateMachineAlias(ctx, &sfn.UpdateStateMachineAliasInput{
		StateMachineAliasArn: aws.String(aliasARN), RoutingConfiguration: routing}); err != nil {
		return fmt.Errorf("point the %s alias at %s: %w", revision.LiveAlias, version, err)
	}
	s.log.Info("moved the live alias", "alias_arn", aliasARN, "version_arn", version, "was", routesOf(d.RoutingConfiguration))
	return nil
}

func routesOf(rs []types.RoutingConfigurationListItem) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s=%d", aws.ToString(r.StateMachineVersionArn), r.Weight))
	}
	return strings.Join(parts, ",")
}
