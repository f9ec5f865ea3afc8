package awsstack

import (
	"strings"
	"testing"
)

func TestLoadEnvNamesWhatIsMissingOrWrong(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		require []string
		wantErr string
	}{
		{"table missing", map[string]string{}, nil, "LIFECYCLE_TABLE"},
		{"required missing", map[string]string{"LIFECYCLE_TABLE": "t"}, []string{"LIFECYCLE_EVENT_BUS"}, "LIFECYCLE_EVENT_BUS"},
		{"bad reviewer", map[string]string{"LIFECYCLE_TABLE": "t", "LIFECYCLE_REVIEWER": "gpt"}, nil, "LIFECYCLE_REVIEWER"},
		{"bedrock without model", map[string]string{"LIFECYCLE_TABLE": "t", "LIFECYCLE_REVIEWER": "bedrock"}, nil, "LIFECYCLE_BEDROCK_MODEL_ID"},
		{"bad log level", map[string]string{"LIFECYCLE_TABLE": "t", "LIFECYCLE_LOG_LEVEL": "loud"}, nil, "LIFECYCLE_LOG_LEVEL"},
		{"ok", map[string]string{"LIFECYCLE_TABLE": "t", "LIFECYCLE_TOOL_FUNCTION_ARNS": "arn:aws:lambda:us-east-1:1:function:tickets, "}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"LIFECYCLE_TABLE", "LIFECYCLE_EVENT_BUS", "LIFECYCLE_REVIEWER", "LIFECYCLE_BEDROCK_MODEL_ID", "LIFECYCLE_LOG_LEVEL", "LIFECYCLE_TOOL_FUNCTION_ARNS"} {
				t.Setenv(k, tc.env[k])
			}
			e, err := LoadEnv(tc.require...)
			if tc.wantErr == "" {
				if err != nil || len(e.ToolFunctionARNs) != 1 || e.ProjectRoot != "/workspace" || e.Reviewer != "builtin" {
					t.Fatalf("%+v %v", e, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v does not name %s", err, tc.wantErr)
			}
		})
	}
}
