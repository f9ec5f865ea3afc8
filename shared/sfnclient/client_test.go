package sfnclient

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/sfnlocal"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

// The real client against the embedded engine: one Wait state keeps every
// execution running until the test ends.
func newClient(t *testing.T) (*Client, *sfnlocal.Engine) {
	t.Helper()
	return newClientOn(t, filepath.Join(t.TempDir(), "state.db"), `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}`)
}

// clientOn is a client of an engine over the store at path, running def.
func clientOn(t *testing.T, path, def string) *Client {
	t.Helper()
	c, _ := newClientOn(t, path, def)
	return c
}

func newClientOn(t *testing.T, path, def string) (*Client, *sfnlocal.Engine) {
	t.Helper()
	db, err := sqlitestore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := sfnlocal.New(sfnlocal.Config{
		Store: db, StateMachineName: "m", Clock: sfnlocal.NewFakeClock(t0()),
		Definition: []byte(def),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = eng.Close(context.Background())
		_ = db.Close()
	})
	api := sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1})
	return &Client{SFN: api, StateMachineARN: eng.StateMachineArn()}, eng
}

func TestStartActionOn(t *testing.T) {
	c, eng := newClient(t)
	ctx := context.Background()
	pub, err := c.SFN.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(c.StateMachineARN)})
	if err != nil {
		t.Fatal(err)
	}
	v1 := aws.ToString(pub.StateMachineVersionArn)
	if _, err := c.SFN.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{Name: aws.String("live"),
		RoutingConfiguration: []sfnRoute{{StateMachineVersionArn: aws.String(v1), Weight: 100}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, action, target, input string
		wantErr                     string
		version, alias              string
	}{
		{"on a version", "act_v", v1, `{"a":1}`, "", v1, ""},
		{"the same again", "act_v", v1, `{"a":1}`, "", v1, ""},
		{"the name with another input", "act_v", v1, `{"a":2}`, "", v1, ""},
		{"on an alias", "act_l", eng.AliasArn("live"), `{}`, "", v1, eng.AliasArn("live")},
		{"the machine itself", "act_m", c.StateMachineARN, `{}`, "not a version or alias ARN", "", ""},
		{"another machine's version", "act_o", strings.Replace(v1, ":m:", ":other:", 1), `{}`, "not a version or alias ARN", "", ""},
		{"a version that does not exist", "act_x", c.StateMachineARN + ":9", `{}`, "StateMachineDoesNotExist", "", ""},
		{"an alias that does not exist", "act_y", c.StateMachineARN + ":canary", `{}`, "StateMachineDoesNotExist", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.StartActionOn(ctx, ids.ActionID(tc.action), tc.target, []byte(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(c.ExecutionARN(ids.ActionID(tc.action)))})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(d.StateMachineVersionArn) != tc.version || aws.ToString(d.StateMachineAliasArn) != tc.alias {
				t.Fatalf("version %q alias %q, want %q %q", aws.ToString(d.StateMachineVersionArn), aws.ToString(d.StateMachineAliasArn), tc.version, tc.alias)
			}
		})
	}
}

type sfnRoute = types.RoutingConfigurationListItem

func t0() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
