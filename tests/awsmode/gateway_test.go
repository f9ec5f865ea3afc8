package awsmode_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/golang-jwt/jwt/v5"
)

// gateway stands in for API Gateway (HTTP API, payload format 2.0, JWT
// authorizer) in front of the api function: it is what turns an HTTP
// request into the event the deployed function receives. As the JWT
// authorizer does, it verifies the bearer token (signature, issuer,
// audience, expiry) and refuses the request with 401 before any function
// runs; it passes the verified claims as requestContext.authorizer.jwt.claims
// (every value a string, as API Gateway renders them). GET /healthz is the
// one route without the authorizer (infra/stack/api.go). The integration
// times out after 30 s (503), and a failed invocation is a 500, API
// Gateway's own answers.
type gateway struct {
	lambda   *lambda.Client
	function string
	key      []byte
	issuer   string
	audience string
	apiID    string
}

// token mints a JWT an identity provider would issue to a principal.
func (g *gateway) token(sub, role, session string) string {
	claims := jwt.MapClaims{"iss": g.issuer, "aud": g.audience, "sub": sub, "role": role,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	if session != "" {
		claims["sid"] = session
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(g.key)
	if err != nil {
		panic(err)
	}
	return s
}

func (g *gateway) verify(r *http.Request) (map[string]string, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, errors.New("no bearer token")
	}
	tok, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return g.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(g.issuer), jwt.WithAudience(g.audience), jwt.WithExpirationRequired())
	if err != nil {
		return nil, err
	}
	claims := map[string]string{}
	for k, v := range tok.Claims.(jwt.MapClaims) {
		switch v := v.(type) {
		case string:
			claims[k] = v
		case float64:
			claims[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			claims[k] = "[" + strings.Join(parts, " ") + "]"
		default:
			claims[k] = fmt.Sprint(v)
		}
	}
	return claims, nil
}

func gatewayAnswer(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		gatewayAnswer(w, http.StatusBadRequest, "Bad Request")
		return
	}
	routeKey := "$default"
	var authorizer *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
	if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
		routeKey = "GET /healthz"
	} else {
		claims, err := g.verify(r)
		if err != nil {
			gatewayAnswer(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		routeKey = r.Method + " " + r.URL.Path
		authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims}}
	}
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}, QueryStringParameters: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: routeKey, AccountID: "123456789012", Stage: "$default", RequestID: fmt.Sprintf("req-%d", now.UnixNano()),
			APIID: g.apiID, DomainName: g.apiID + ".execute-api.us-east-1.amazonaws.com", DomainPrefix: g.apiID,
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(), Authorizer: authorizer,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto,
				SourceIP: strings.Split(r.RemoteAddr, ":")[0], UserAgent: r.UserAgent()},
		},
	}
	for k, vs := range r.Header {
		// HTTP APIs lowercase header names and join repeated ones with commas.
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					ev.Cookies = append(ev.Cookies, strings.TrimSpace(c))
				}
			}
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	for k, vs := range r.URL.Query() {
		ev.QueryStringParameters[k] = strings.Join(vs, ",")
	}
	if len(body) > 0 {
		if ct := r.Header.Get("Content-Type"); ct == "" || strings.Contains(ct, "json") || strings.HasPrefix(ct, "text/") {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayAnswer(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	// The HTTP API's integration timeout.
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	out, err := g.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(g.function), Payload: payload})
	switch {
	case ctx.Err() != nil:
		gatewayAnswer(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	case err != nil || out.FunctionError != nil:
		gatewayAnswer(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var res events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out.Payload, &res); err != nil || res.StatusCode == 0 {
		gatewayAnswer(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	for k, v := range res.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range res.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range res.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	b := []byte(res.Body)
	if res.IsBase64Encoded {
		if b, err = base64.StdEncoding.DecodeString(res.Body); err != nil {
			gatewayAnswer(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	w.WriteHeader(res.StatusCode)
	w.Write(b)
}
