package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/openprogram/lifecycle/infra/stack"
)

// defaultStackName is the CloudFormation stack name unless
// lifecycle:stackName says otherwise (one per environment: Lifecycle-dev...).
const defaultStackName = "Lifecycle"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle infra:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cdkContext, err := readContext(filepath.Join(root, "cdk.json"))
	if err != nil {
		return err
	}
	defer jsii.Close()

	props := &awscdk.AppProps{Context: &cdkContext}
	// A relative CDK_OUTDIR means relative to the repository root (where the
	// CLI and cdk.json are), also when this runs as `go run .` in infra/.
	// The Node process already inherited the raw value when the CDK packages
	// were initialized, so the absolute path goes in as a prop, which wins.
	if out := os.Getenv("CDK_OUTDIR"); out != "" {
		if !filepath.IsAbs(out) {
			out = filepath.Join(root, out)
		}
		props.Outdir = jsii.String(out)
	}
	app := awscdk.NewApp(props)
	node := app.Node()
	cfg, err := stack.FromContext(func(key string) any { return node.TryGetContext(jsii.String(key)) })
	if err != nil {
		return err
	}
	cfg = cfg.ResolvePaths(root)
	name := defaultStackName
	if v, ok := node.TryGetContext(jsii.String(stack.CtxStackName)).(string); ok && v != "" {
		name = v
	}
	if _, err := stack.New(app, name, stack.Props{
		StackProps: awscdk.StackProps{
			Description: jsii.String("OpenProgram action lifecycle"),
			// Environment-agnostic: account and region come from the
			// deploying credentials; nothing here looks anything up.
		},
		Config: cfg,
	}); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// repoRoot is the nearest directory, from the working directory up, that
// holds cdk.json.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "cdk.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no cdk.json in the working directory or above it")
		}
		dir = parent
	}
}

// readContext returns the "context" object of cdk.json.
func readContext(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var file struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if file.Context == nil {
		file.Context = map[string]any{}
	}
	return file.Context, nil
}
