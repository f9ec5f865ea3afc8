package sfnclient

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/openprogram/lifecycle/shared/revision"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// A deployment's cold start records the revision of the version it names,
// makes it live, and an instance of an older deployment starting later
// does not move live back.
func TestRegisterDeployment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "reg.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := revision.NewRegistry(db)
	// Each deployment is an engine over the same state with the definition
	// of that deployment (the embedded engine has no UpdateStateMachine).
	var c *Client
	publish := func(def string) string {
		t.Helper()
		c = clientOn(t, filepath.Join(dir, "sfn.db"), def)
		out, err := c.SFN.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(c.StateMachineARN)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.StateMachineVersionArn)
	}
	v1 := publish(`{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}`)
	p1, err := RegisterDeployment(ctx, c.SFN, reg, v1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterDeployment(ctx, c.SFN, reg, v1, time.Now()); err != nil { // every cold start
		t.Fatalf("again: %v", err)
	}
	if live, err := reg.Live(ctx); err != nil || live.Revision.ID != p1.Revision.ID || live.VersionARN != v1 {
		t.Fatalf("live after v1: %+v %v", live, err)
	}
	v2 := publish(`{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 60, "End": true}}}`)
	p2, err := RegisterDeployment(ctx, c.SFN, reg, v2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p2.Revision.ID == p1.Revision.ID {
		t.Fatalf("a changed definition kept revision %s", p1.Revision.ID)
	}
	// An instance of the first deployment starting late.
	if _, err := RegisterDeployment(ctx, c.SFN, reg, v1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if live, err := reg.Live(ctx); err != nil || live.Revision.ID != p2.Revision.ID {
		t.Fatalf("live moved back to %+v (%v)", live, err)
	}
	if _, err := RegisterDeployment(ctx, c.SFN, reg, c.StateMachineARN, time.Now()); err == nil || !strings.Contains(err.Error(), "not a state machine version ARN") {
		t.Fatalf("unqualified ARN: %v", err)
	}
}
