package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxBodyBytes is the documented request body limit.
const DefaultMaxBodyBytes = 256 << 10

// decodeBody reads one JSON object into v: at most max bytes, no unknown
// fields, no trailing data. Every failure is a 400 naming the field (or
// "body" when the document itself is wrong), except a body over the
// limit: 413 Payload Too Large, code body_too_large.
func decodeBody(r *http.Request, max int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &requestError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Field: "Content-Type",
				Msg: fmt.Sprintf("send application/json, not %q", ct)}
		}
	}
	body := http.MaxBytesReader(nil, r.Body, max)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, max)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err, max)
		}
		return badRequest("malformed_json", "body", "unexpected data after the JSON object")
	}
	return nil
}

func decodeError(err error, max int64) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return &requestError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Field: "body",
			Msg: fmt.Sprintf("the request body is larger than the %d byte limit", max)}
	case errors.Is(err, io.EOF):
		return badRequest("malformed_json", "body", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed_json", "body", "the JSON document ends early")
	case errors.As(err, &se):
		return badRequest("malformed_json", "body", fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return badRequest("wrong_type", field, fmt.Sprintf("%s must be %s, not %s", field, typeName(te.Type), te.Value))
	}
	if name, ok := unknownField(err); ok {
		return badRequest("unknown_field", name, fmt.Sprintf("unknown field %q", name))
	}
	return badRequest("malformed_json", "body", err.Error())
}

// unknownField extracts the field name of DisallowUnknownFields' error,
// which encoding/json reports only as text.
func unknownField(err error) (string, bool) {
	msg := err.Error()
	i := strings.Index(msg, "unknown field ")
	if i < 0 {
		return "", false
	}
	name := strings.TrimSpace(msg[i+len("unknown field "):])
	if uq, err := strconv.Unquote(name); err == nil {
		name = uq
	}
	return name, true
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// waitParam reads ?wait=SECONDS (a number, clamped to max; absent = 0).
func waitParam(r *http.Request, max time.Duration) (time.Duration, bool, error) {
	q := r.URL.Query()
	if !q.Has("wait") {
		return 0, false, nil
	}
	s, err := strconv.ParseFloat(q.Get("wait"), 64)
	if err != nil || s < 0 || s != s {
		return 0, true, badRequest("invalid_field", "wait", "wait must be a number of seconds ≥ 0")
	}
	d := time.Duration(s * float64(time.Second))
	if d > max {
		d = max
	}
	return d, true, nil
}

// intParam reads an integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return def, nil
	}
	v, err := strconv.ParseInt(q.Get(name), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, badRequest("invalid_field", name, fmt.Sprintf("%s must be an integer from %d to %d", name, lo, hi))
	}
	return v, nil
}
