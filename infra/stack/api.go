package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// Route is one explicit route of the HTTP API. There is no catch-all route:
// a path that is not listed is a 404 from API Gateway and never reaches the
// function.
type Route struct {
	Method string
	Path   string
	// Public routes skip the JWT authorizer: the health check, the static
	// files of the Activity UI (no data: the page calls the API with the
	// user's bearer token, which a plain page load cannot carry) and the API
	// reference page (the spec, rendered; it calls nothing).
	Public bool
}

// Routes is the HTTP API surface served by the api function.
var Routes = []Route{
	{Method: "POST", Path: "/v1/sessions/{session_id}/actions"},
	{Method: "GET", Path: "/v1/actions/{action_id}"},
	{Method: "GET", Path: "/v1/actions/{action_id}/machine"},
	{Method: "POST", Path: "/v1/actions/{action_id}/reconciliation"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/approvals"},
	{Method: "POST", Path: "/v1/approvals/{approval_id}"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/questions"},
	{Method: "GET", Path: "/v1/questions/{question_id}"},
	{Method: "POST", Path: "/v1/questions/{question_id}/answer"},
	{Method: "POST", Path: "/v1/executions/{execution_id}/commands"},
	{Method: "POST", Path: "/v1/executions/{execution_id}/end"},
	{Method: "GET", Path: "/v1/executions/{execution_id}"},
	{Method: "POST", Path: "/v1/executions/{execution_id}/model-requests"},
	{Method: "POST", Path: "/v1/executions/{execution_id}/model-requests/{request_id}/completion"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/activity"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/events"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/audit"},
	{Method: "GET", Path: "/v1/tools"},
	{Method: "PUT", Path: "/v1/sessions/{session_id}/policy"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/policy"},
	{Method: "GET", Path: "/v1/hosts/tasks"},
	{Method: "POST", Path: "/v1/hosts/tasks/{action_id}/start"},
	{Method: "POST", Path: "/v1/hosts/tasks/{action_id}/result"},
	{Method: "POST", Path: "/v1/hosts/tasks/{action_id}/heartbeat"},
	{Method: "GET", Path: "/v1/executions/{execution_id}/processes"},
	{Method: "GET", Path: "/v1/sessions/{session_id}/processes"},
	{Method: "GET", Path: "/v1/processes/{process_id}"},
	{Method: "GET", Path: "/v1/processes/{process_id}/output"},
	{Method: "POST", Path: "/v1/processes/{process_id}/stop"},
	{Method: "POST", Path: "/v1/hosts/tasks/{action_id}/process"},
	{Method: "POST", Path: "/v1/hosts/processes/{process_id}/report"},
	{Method: "POST", Path: "/v1/hosts/processes/recover"},
	{Method: "POST", Path: "/v1/sessions/{session_id}/policy/replays"},
	{Method: "POST", Path: "/v1/policy/replays"},
	{Method: "GET", Path: "/v1/policy/replays/{replay_id}"},
	{Method: "PUT", Path: "/v1/sessions/{session_id}/policy/options"},
	{Method: "GET", Path: "/v1/revisions"},
	// The MCP gateway (stateless behind API Gateway): POST carries every
	// message; GET and DELETE reach it so clients get its 405, not a 404.
	{Method: "POST", Path: "/mcp"},
	{Method: "GET", Path: "/mcp"},
	{Method: "DELETE", Path: "/mcp"},
	{Method: "GET", Path: "/healthz", Public: true},
	// The Activity UI: static files served by the api function.
	{Method: "GET", Path: "/", Public: true},
	{Method: "GET", Path: "/ui/{proxy+}", Public: true},
	// The API reference page (one static HTML file rendered from
	// api/openapi.yaml by `make api-docs`, embedded in the api function).
	{Method: "GET", Path: "/docs", Public: true},
}

type httpAPI struct {
	url *string
}

func newHTTPAPI(st awscdk.Stack, cfg Config, fn awslambda.Function, issuer, audience *string) httpAPI {
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), issuer,
		&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
			JwtAudience: awscdk.Fn_Split(jsii.String(","), audience, nil),
		})
	api := awsapigatewayv2.NewHttpApi(st, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description: jsii.String("OpenProgram action lifecycle API"),
		// The stage is declared below, with throttling and access logs.
		CreateDefaultStage: jsii.Bool(false),
		DefaultAuthorizer:  authorizer,
	})
	// One integration for every route: routing happens in the function, the
	// explicit routes only decide what reaches it and with which auth.
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), fn,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
		})
	for _, r := range Routes {
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.Method)},
			Integration: integration,
		}
		if r.Public {
			opts.Authorizer = awsapigatewayv2.NewHttpNoneAuthorizer()
		}
		api.AddRoutes(opts)
	}

	accessLogs := awslogs.NewLogGroup(st, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: removalPolicy(cfg),
	})
	stage := awsapigatewayv2.NewHttpStage(st, jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		// Applies to every route (the stage's default route settings): a
		// ceiling that protects the table and the account's Lambda
		// concurrency from one misbehaving client; raise it with context.
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(cfg.APIRateLimit),
			BurstLimit: jsii.Number(cfg.APIBurstLimit),
		},
		AccessLogSettings: &accessLogSettings{
			destination: awsapigatewayv2.NewLogGroupLogDestination(accessLogs),
			format:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
		},
	})
	return httpAPI{url: stage.Url()}
}

// accessLogFormat is one JSON object per request; no headers or bodies (they
// may carry tokens and tool arguments).
const accessLogFormat = `{"requestId":"$context.requestId","time":"$context.requestTime",` +
	`"routeKey":"$context.routeKey","status":"$context.status","sourceIp":"$context.identity.sourceIp",` +
	`"latencyMs":"$context.responseLatency","integrationStatus":"$context.integrationStatus",` +
	`"integrationError":"$context.integrationErrorMessage","authorizerError":"$context.authorizer.error",` +
	`"principal":"$context.authorizer.claims.sub"}`

// accessLogSettings implements awsapigatewayv2.IAccessLogSettings (jsii
// calls back into these methods).
type accessLogSettings struct {
	destination awsapigatewayv2.IAccessLogDestination
	format      awsapigateway.AccessLogFormat
}

func (a *accessLogSettings) Destination() awsapigatewayv2.IAccessLogDestination { return a.destination }
func (a *accessLogSettings) Format() awsapigateway.AccessLogFormat              { return a.format }
