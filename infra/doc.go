// Command infra is the AWS CDK app of the action lifecycle: it reads the
// lifecycle:* context (cdk.json at the repository root, overridable with -c),
// builds the one stack defined in package stack and synthesizes it.
//
// Run it through the CDK CLI (`cdk synth`, `cdk deploy` from the repository
// root; cdk.json builds this module to .tools/cdk-app and runs it from the
// root, because the CLI hands the app paths relative to where it runs) or
// directly (`make synth`: `go run .` in infra/ with CDK_OUTDIR, no CLI).
// Either way the same context applies: the app loads cdk.json's context
// itself, and the CLI's values take precedence when it passes them.
//
// It lives in its own module so that jsii and the CDK never enter the
// dependency graph of the Lambda functions. It must never call AWS.
package main
