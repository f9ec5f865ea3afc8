package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/openprogram/lifecycle/shared/auth"
)

// Handler serves API Gateway HTTP API events with an http.Handler.
type Handler struct {
	H http.Handler
}

// Handle is the Lambda entry point: lambda.Start(apigw.Handler{H: h}.Handle).
func (a Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r, err := Request(ctx, ev)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"error":{"code":"bad_request","message":"the gateway event could not be read"}}`}, nil
	}
	w := newRecorder()
	a.H.ServeHTTP(w, r)
	return w.response(), nil
}

// Request converts an event to the request the handler sees.
func Request(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("decode base64 body: %w", err)
		}
		body = b
	}
	u := &url.URL{Path: ev.RawPath, RawQuery: ev.RawQueryString}
	if ev.RawPath == "" {
		u.Path = "/"
	}
	if p, err := url.PathUnescape(ev.RawPath); err == nil {
		u.Path, u.RawPath = p, ev.RawPath
	}
	if ev.RequestContext.Authorizer != nil && ev.RequestContext.Authorizer.JWT != nil {
		ctx = auth.WithGatewayClaims(ctx, ev.RequestContext.Authorizer.JWT.Claims)
	}
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	r.URL = u
	r.RequestURI = u.RequestURI()
	for k, v := range ev.Headers {
		// The gateway joins repeated headers with commas.
		r.Header.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	r.Host = ev.RequestContext.DomainName
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	r.ContentLength = int64(len(body))
	return r, nil
}

// recorder buffers the handler's response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush is accepted and does nothing: the gateway sends the whole response.
func (w *recorder) Flush() {}

func (w *recorder) response() events.APIGatewayV2HTTPResponse {
	res := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: map[string]string{}}
	if res.StatusCode == 0 {
		res.StatusCode = http.StatusOK
	}
	for k, vs := range w.header {
		if strings.EqualFold(k, "Set-Cookie") {
			res.Cookies = append(res.Cookies, vs...)
			continue
		}
		res.Headers[k] = strings.Join(vs, ", ")
	}
	b := w.body.Bytes()
	if textual(w.header.Get("Content-Type")) && utf8.Valid(b) {
		res.Body = string(b)
	} else {
		res.Body, res.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return res
}

func textual(ct string) bool {
	return ct == "" || strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") ||
		strings.Contains(ct, "javascript") || strings.Contains(ct, "xml")
}
