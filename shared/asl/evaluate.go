package asl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The data flow of a state, in the order Step Functions applies it:
//
//	raw input -> InputPath -> Parameters -> (task / Result) -> ResultSelector
//	-> ResultPath (merged into the raw input) -> OutputPath -> output
//
// Every function returns *RuntimeError (States.Runtime) on failure.

// ApplyInputPath selects the effective input; a null InputPath gives {}.
func (s *State) ApplyInputPath(raw any, ctx ContextFunc) (any, error) {
	switch {
	case s.NullInput:
		return map[string]any{}, nil
	case s.InputPath == nil:
		return raw, nil
	}
	return s.InputPath.getFor("InputPath", raw, ctx)
}

// EffectiveInput is InputPath then Parameters: what a Lambda function ARN
// task sends as the payload and what a Pass state without Result passes on.
func (s *State) EffectiveInput(raw any, ctx ContextFunc) (any, error) {
	in, err := s.ApplyInputPath(raw, ctx)
	if err != nil || s.Parameters == nil {
		return in, err
	}
	return s.Parameters.Eval(in, ctx)
}

// InvokePayload builds the Payload of a lambda:invoke task (after InputPath).
func (s *State) InvokePayload(raw any, ctx ContextFunc) (any, error) {
	in, err := s.ApplyInputPath(raw, ctx)
	if err != nil {
		return nil, err
	}
	env, err := s.Payload.Eval(in, ctx)
	if err != nil {
		return nil, err
	}
	return PayloadValue(env), nil
}

// ApplyResult turns a result into the state's output: ResultSelector (Task
// only), ResultPath into the raw input, then OutputPath.
func (s *State) ApplyResult(raw, result any, ctx ContextFunc) (any, error) {
	if s.ResultSelector != nil {
		r, err := s.ResultSelector.Eval(result, ctx)
		if err != nil {
			return nil, err
		}
		result = r
	}
	merged, err := mergeResult(s.ResultPath, s.NullResult, raw, result)
	if err != nil {
		return nil, err
	}
	return s.ApplyOutputPath(merged, ctx)
}

// ApplyOutputPath filters the output; a null OutputPath gives {}.
func (s *State) ApplyOutputPath(v any, ctx ContextFunc) (any, error) {
	switch {
	case s.NullOutput:
		return map[string]any{}, nil
	case s.OutputPath == nil:
		return v, nil
	}
	return s.OutputPath.getFor("OutputPath", v, ctx)
}

func mergeResult(p *Path, null bool, raw, result any) (any, error) {
	switch {
	case null:
		return raw, nil
	case p == nil:
		return result, nil
	}
	return setResult(p, raw, result)
}

// ErrorOutput is the value a Catcher passes on: {"Error": ..., "Cause": ...}.
func ErrorOutput(name, cause string) map[string]any {
	return map[string]any{"Error": name, "Cause": cause}
}

// Output is the input of the catcher's Next state: the error output placed
// into the state's raw input by the catcher's ResultPath. OutputPath does
// not apply to a caught error.
func (c *Catcher) Output(raw any, errorOutput any) (any, error) {
	return mergeResult(c.ResultPath, c.NullResult, raw, errorOutput)
}

// Matches reports whether the retrier handles the error.
func (r *Retrier) Matches(name string) bool { return MatchesError(r.ErrorEquals, name) }

// Matches reports whether the catcher handles the error.
func (c *Catcher) Matches(name string) bool { return MatchesError(c.ErrorEquals, name) }

// Delay is the wait before retry number attempt (0 for the first retry):
// IntervalSeconds * BackoffRate^attempt, capped at MaxDelaySeconds, then
// with FULL jitter a uniformly random fraction of it (random returns a
// number in [0, 1)). The result is rounded to the millisecond.
func (r *Retrier) Delay(attempt int64, random func() float64) time.Duration {
	secs := float64(r.IntervalSeconds) * math.Pow(r.BackoffRate, float64(attempt))
	if r.MaxDelaySeconds > 0 && secs > float64(r.MaxDelaySeconds) {
		secs = float64(r.MaxDelaySeconds)
	}
	if r.JitterStrategy == "FULL" {
		if random == nil {
			random = rand.Float64
		}
		secs *= random()
	}
	if secs > maxSeconds {
		secs = maxSeconds
	}
	return time.Duration(math.Round(secs*1000)) * time.Millisecond
}

// Choose evaluates a Choice state: the first matching rule's Next, else
// Default, else a States.NoChoiceMatched error (which, on a Choice state,
// fails the execution: Choice states have no Catch). The output is the
// effective input after OutputPath.
func (s *State) Choose(raw any, ctx ContextFunc) (next string, output any, err error) {
	in, err := s.ApplyInputPath(raw, ctx)
	if err != nil {
		return "", nil, err
	}
	for _, rule := range s.Choices {
		ok, err := rule.Matches(in, ctx)
		if err != nil {
			return "", nil, err
		}
		if ok {
			next = rule.Next
			break
		}
	}
	if next == "" {
		next = s.Default
	}
	if next == "" {
		return "", nil, &RuntimeError{Name: ErrNoChoiceMatched, Cause: fmt.Sprintf("No Matches! (state %q, input %s)", s.Name, clip(in, false, nil))}
	}
	out, err := s.ApplyOutputPath(in, ctx)
	return next, out, err
}

// WaitUntil computes when a Wait state ends, and its output.
func (s *State) WaitUntil(raw any, ctx ContextFunc, entered time.Time) (time.Time, any, error) {
	in, err := s.ApplyInputPath(raw, ctx)
	if err != nil {
		return time.Time{}, nil, err
	}
	var until time.Time
	switch {
	case s.HasSeconds:
		until = entered.Add(time.Duration(s.Seconds) * time.Second)
	case s.HasTimestamp:
		until = s.Timestamp
	case s.SecondsPath != nil:
		v, err := s.SecondsPath.getFor("SecondsPath", in, ctx)
		if err != nil {
			return time.Time{}, nil, err
		}
		n, ok := integer(v)
		if !ok || n < 0 {
			return time.Time{}, nil, runtimeErrorf("The SecondsPath parameter does not reference a non-negative integer: %s == %s", s.SecondsPath, mustEncode(v))
		}
		until = entered.Add(time.Duration(min(n, maxSeconds)) * time.Second)
	case s.TimestampPath != nil:
		v, err := s.TimestampPath.getFor("TimestampPath", in, ctx)
		if err != nil {
			return time.Time{}, nil, err
		}
		str, _ := v.(string)
		t, ok := parseTimestamp(str)
		if !ok {
			return time.Time{}, nil, runtimeErrorf("The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: %s == %s", s.TimestampPath, mustEncode(v))
		}
		until = t
	}
	out, err := s.ApplyOutputPath(in, ctx)
	return until, out, err
}

// Failure computes a Fail state's error and cause.
func (s *State) Failure(raw any, ctx ContextFunc) (errName, cause string, err error) {
	errName, cause = s.Error, s.Cause
	if s.ErrorPath != nil {
		v, err := s.ErrorPath.Eval(raw, ctx)
		if err != nil {
			return "", "", err
		}
		str, ok := v.(string)
		if !ok {
			return "", "", runtimeErrorf("ErrorPath of state %q must produce a string, got %s", s.Name, typeName(v))
		}
		errName = str
	}
	if s.CausePath != nil {
		v, err := s.CausePath.Eval(raw, ctx)
		if err != nil {
			return "", "", err
		}
		str, ok := v.(string)
		if !ok {
			return "", "", runtimeErrorf("CausePath of state %q must produce a string, got %s", s.Name, typeName(v))
		}
		cause = str
	}
	return errName, cause, nil
}

// PassResult computes a Pass state's output.
func (s *State) PassResult(raw any, ctx ContextFunc) (any, error) {
	var result any
	if s.HasResult {
		result = s.Result
	} else {
		in, err := s.EffectiveInput(raw, ctx)
		if err != nil {
			return nil, err
		}
		result = in
	}
	return s.ApplyResult(raw, result, ctx)
}

// SucceedOutput computes a Succeed state's output.
func (s *State) SucceedOutput(raw any, ctx ContextFunc) (any, error) {
	in, err := s.ApplyInputPath(raw, ctx)
	if err != nil {
		return nil, err
	}
	return s.ApplyOutputPath(in, ctx)
}
