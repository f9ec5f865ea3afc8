package stack_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/infra/stack"
)

func TestFromContext(t *testing.T) {
	cases := []struct {
		name    string
		ctx     map[string]any
		env     string
		check   func(t *testing.T, c stack.Config)
		wantErr string
	}{
		{name: "defaults", ctx: map[string]any{}, check: func(t *testing.T, c stack.Config) {
			if c.AssetDir != "build" || c.Reviewer != stack.ReviewerBuiltin || !c.DeletionProtection || !c.ReservedConcurrency ||
				c.LogLevel != "info" || c.BlobRetentionDays != 90 || len(c.ToolFunctionARNs) != 0 || c.Architecture != stack.ArchARM64 || c.AuditAnchor {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "command-line strings", ctx: map[string]any{
			stack.CtxDeletionProtection: "false", stack.CtxReservedConcurrency: "FALSE", stack.CtxBlobRetentionDays: "7",
			stack.CtxToolFunctionARNs: " arn:aws:lambda:us-east-1:123456789012:function:a , arn:aws:lambda:us-east-1:123456789012:function:b,",
		}, check: func(t *testing.T, c stack.Config) {
			if c.DeletionProtection || c.ReservedConcurrency || c.BlobRetentionDays != 7 {
				t.Errorf("got %+v", c)
			}
			if !slices.Equal(c.ToolFunctionARNs, []string{"arn:aws:lambda:us-east-1:123456789012:function:a", "arn:aws:lambda:us-east-1:123456789012:function:b"}) {
				t.Errorf("tools %q", c.ToolFunctionARNs)
			}
		}},
		{name: "cdk.json types", ctx: map[string]any{
			stack.CtxDeletionProtection: false, stack.CtxAPIRateLimit: 10.0,
			stack.CtxToolFunctionARNs: []any{"arn:aws:lambda:us-east-1:123456789012:function:a"},
		}, check: func(t *testing.T, c stack.Config) {
			if c.DeletionProtection || c.APIRateLimit != 10 || len(c.ToolFunctionARNs) != 1 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "asset dir from the environment", ctx: map[string]any{}, env: "/tmp/zips", check: func(t *testing.T, c stack.Config) {
			if c.AssetDir != "/tmp/zips" {
				t.Errorf("asset dir %q", c.AssetDir)
			}
		}},
		{name: "context beats the environment", ctx: map[string]any{stack.CtxAssetDir: "out"}, env: "/tmp/zips", check: func(t *testing.T, c stack.Config) {
			if c.AssetDir != "out" {
				t.Errorf("asset dir %q", c.AssetDir)
			}
		}},
		{name: "bedrock with model", ctx: map[string]any{stack.CtxReviewer: "bedrock", stack.CtxBedrockModelID: "anthropic.claude-3-haiku-20240307-v1:0"}},
		{name: "bedrock without model", ctx: map[string]any{stack.CtxReviewer: "bedrock"}, wantErr: "needs lifecycle:bedrockModelId"},
		{name: "bedrock inference profile", ctx: map[string]any{stack.CtxReviewer: "bedrock", stack.CtxBedrockModelID: "us.anthropic.claude-3-haiku-20240307-v1:0"}, wantErr: "not a foundation-model id"},
		{name: "model without bedrock", ctx: map[string]any{stack.CtxBedrockModelID: "anthropic.claude-3-haiku-20240307-v1:0"}, wantErr: "set the reviewer to bedrock"},
		{name: "unknown reviewer", ctx: map[string]any{stack.CtxReviewer: "llm"}, wantErr: `got "llm"`},
		{name: "qualified tool ARN", ctx: map[string]any{stack.CtxToolFunctionARNs: "arn:aws:lambda:us-east-1:123456789012:function:a:live"}, wantErr: "not an unqualified Lambda function ARN"},
		{name: "wildcard tool ARN", ctx: map[string]any{stack.CtxToolFunctionARNs: "arn:aws:lambda:us-east-1:123456789012:function:*"}, wantErr: "not an unqualified Lambda function ARN"},
		{name: "bad boolean", ctx: map[string]any{stack.CtxDeletionProtection: "maybe"}, wantErr: "want true or false"},
		{name: "bad number", ctx: map[string]any{stack.CtxBlobRetentionDays: "forever"}, wantErr: "want a number"},
		{name: "zero retention", ctx: map[string]any{stack.CtxBlobRetentionDays: 0.0}, wantErr: "must be positive"},
		{name: "bad log level", ctx: map[string]any{stack.CtxLogLevel: "trace"}, wantErr: "want debug, info, warn or error"},
		{name: "x86_64 for emulators", ctx: map[string]any{stack.CtxArchitecture: "x86_64"}, check: func(t *testing.T, c stack.Config) {
			if c.Architecture != stack.ArchX86_64 {
				t.Errorf("architecture %q", c.Architecture)
			}
		}},
		{name: "unknown architecture", ctx: map[string]any{stack.CtxArchitecture: "amd64"}, wantErr: `want "arm64" or "x86_64"`},
		{name: "alarm topic not an ARN", ctx: map[string]any{stack.CtxAlarmTopicARN: "alarms"}, wantErr: "not an ARN"},
		{name: "audit anchor off by default, a year when on", ctx: map[string]any{stack.CtxAuditAnchor: "true"}, check: func(t *testing.T, c stack.Config) {
			if !c.AuditAnchor || c.AuditAnchorRetentionDays != 365 {
				t.Errorf("audit anchor %v, %d days", c.AuditAnchor, c.AuditAnchorRetentionDays)
			}
		}},
		{name: "audit anchor retention of zero days", ctx: map[string]any{stack.CtxAuditAnchor: true, stack.CtxAuditAnchorRetentionDays: 0.0},
			wantErr: "lifecycle:auditAnchorRetentionDays must be 1 to 36500 days"},
		{name: "host home", ctx: map[string]any{stack.CtxHostHome: "/home/agent"}, check: func(t *testing.T, c stack.Config) {
			if c.HostHome != "/home/agent" {
				t.Errorf("host home %q", c.HostHome)
			}
		}},
		{name: "relative host home", ctx: map[string]any{stack.CtxHostHome: "home/agent"}, wantErr: "lifecycle:hostHome: \"home/agent\" is not an absolute, clean home directory"},
		{name: "host home not clean", ctx: map[string]any{stack.CtxHostHome: "/home/agent/../root"}, wantErr: "is not an absolute, clean home directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(stack.EnvAssetDir, c.env)
			cfg, err := stack.FromContext(func(key string) any { return c.ctx[key] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error containing %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, cfg)
			}
		})
	}
}

func TestResolvePaths(t *testing.T) {
	c := stack.Config{AssetDir: "build", DefinitionFile: "/abs/def.json"}.ResolvePaths("/repo")
	if c.AssetDir != filepath.Join("/repo", "build") || c.DefinitionFile != "/abs/def.json" {
		t.Errorf("got %q %q", c.AssetDir, c.DefinitionFile)
	}
}

// TestNewRefusesBeforeBuilding: a bad config, a missing zip or a bad
// definition is an error from New before any construct exists (the nil
// scope would panic otherwise).
func TestNewRefusesBeforeBuilding(t *testing.T) {
	dir := t.TempDir()
	for _, name := range stack.Functions[:3] {
		if err := os.WriteFile(filepath.Join(dir, name+".zip"), []byte("zip"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full := t.TempDir()
	for _, name := range stack.Functions {
		if err := os.WriteFile(filepath.Join(full, name+".zip"), []byte("zip"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	badDef := filepath.Join(t.TempDir(), "bad.asl.json")
	if err := os.WriteFile(badDef, []byte(`{"StartAt":"A","States":{"A":{"Resource":"${Nope}"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := stack.DefaultConfig()
	base.DefinitionFile = definitionFile()
	cases := []struct {
		name    string
		mutate  func(c *stack.Config)
		wantErr string
	}{
		{name: "invalid config", mutate: func(c *stack.Config) { c.AssetDir = full; c.Reviewer = "x" }, wantErr: "invalid lifecycle stack config"},
		{name: "missing zips", mutate: func(c *stack.Config) { c.AssetDir = dir }, wantErr: "record.zip"},
		{name: "missing definition", mutate: func(c *stack.Config) { c.AssetDir = full; c.DefinitionFile = filepath.Join(dir, "none.json") }, wantErr: "read state machine definition"},
		{name: "unknown placeholder", mutate: func(c *stack.Config) { c.AssetDir = full; c.DefinitionFile = badDef }, wantErr: "${Nope}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.mutate(&cfg)
			_, err := stack.New(nil, "X", stack.Props{Config: cfg})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("want error containing %q, got %v", c.wantErr, err)
			}
		})
	}
}
