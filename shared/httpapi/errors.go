package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/store"
)

// ErrorBody is every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the request field that is wrong (400).
	Field string `json:"field,omitempty"`
	// Current is the stored state a conflicting request lost to (409).
	Current any `json:"current,omitempty"`
}

// requestError is an error the API answers as is.
type requestError struct {
	Status  int
	Code    string
	Field   string
	Msg     string
	Current any
}

func (e *requestError) Error() string { return e.Code + ": " + e.Msg }

func badRequest(code, field, msg string) error {
	return &requestError{Status: http.StatusBadRequest, Code: code, Field: field, Msg: msg}
}

// statusOf maps an error to its response, in one place.
func statusOf(err error) (int, ErrorDetail) {
	var re *requestError
	var ve *actionflow.ValidationError
	var fe *actionflow.ForbiddenError
	var de *auth.DeniedError
	var ue *auth.UnauthenticatedError
	var nf *actionflow.NotFoundError
	var ce *actionflow.ConflictError
	var rce *actionflow.ReceiptConflictError
	var vc *store.VersionConflictError
	switch {
	case errors.As(err, &re):
		return re.Status, ErrorDetail{Code: re.Code, Message: re.Msg, Field: re.Field, Current: re.Current}
	case errors.As(err, &ve):
		return http.StatusBadRequest, ErrorDetail{Code: "invalid_field", Message: ve.Msg, Field: ve.Field}
	case errors.As(err, &ue):
		return http.StatusUnauthorized, ErrorDetail{Code: "unauthenticated", Message: ue.Msg}
	case errors.As(err, &de):
		return http.StatusForbidden, ErrorDetail{Code: "forbidden", Message: de.Reason}
	case errors.As(err, &fe):
		return http.StatusForbidden, ErrorDetail{Code: "forbidden", Message: fe.Msg}
	case errors.As(err, &nf):
		return http.StatusNotFound, ErrorDetail{Code: "not_found", Message: nf.Error()}
	case errors.As(err, &ce):
		return http.StatusConflict, ErrorDetail{Code: ce.Code, Message: ce.Msg, Current: currentView(ce.Current)}
	case errors.As(err, &rce):
		return http.StatusConflict, ErrorDetail{Code: "receipt_conflict", Message: rce.Error(), Current: rce.Stored}
	case errors.As(err, &vc):
		return http.StatusConflict, ErrorDetail{Code: "version_conflict", Message: vc.Error()}
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, ErrorDetail{Code: "not_found", Message: err.Error()}
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, ErrorDetail{Code: "unavailable", Message: "the store is unavailable; retry"}
	}
	return http.StatusInternalServerError, ErrorDetail{Code: "internal", Message: "internal error"}
}

func (h *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, d := statusOf(err)
	if status >= 500 {
		h.log.ErrorContext(r.Context(), "api: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	} else {
		h.log.DebugContext(r.Context(), "api: request refused", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lifecycle"`)
	}
	writeJSON(w, status, ErrorBody{Error: d})
}

// writeJSON writes v without HTML escaping: tool arguments read back exactly
// as submitted ("a && b > c"), which is what a reviewer must see.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		slog.Error("api: encode response", "error", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"response encoding failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
