// Package apigw adapts an http.Handler (the API of package httpapi) to API
// Gateway HTTP API Lambda events (payload format 2.0): the event becomes an
// *http.Request, the handler's response becomes the event response.
//
// The claims the gateway's JWT authorizer verified
// (requestContext.authorizer.jwt.claims) are put on the request context
// with auth.WithGatewayClaims, which is where auth.GatewayClaims reads
// them; nothing a client sends in headers or body can put claims there.
//
// API Gateway buffers a Lambda response, so it cannot stream: configure
// the API with httpapi.Config.DisableStreaming (the events route then
// answers JSON batches). It imports aws-lambda-go; package httpapi does not.
package apigw
