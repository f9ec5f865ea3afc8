package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// TestServeBannerStepFunctions: the banner names the state machine ARN and
// prints a ready-to-paste `aws stepfunctions list-executions` line that
// works against the running engine: through the Go SDK always, and pasted
// as printed into the AWS CLI when it is installed.
func TestServeBannerStepFunctions(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addr: "127.0.0.1:0", stateDir: filepath.Join(dir, "state"), workspace: filepath.Join(dir, "ws"),
			session: "ses_e2e", restartWindow: "-1", logLevel: "error", sweep: time.Minute}, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "Stop with Ctrl-C") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	banner := strings.Join(lines, "\n")

	arnLine := regexp.MustCompile(`(?m)^  State machine (arn:aws:states:\S+:stateMachine:\S+)$`).FindStringSubmatch(banner)
	cmdLine := regexp.MustCompile(`(?m)^Executions:\s+(aws stepfunctions list-executions --endpoint-url (http://127\.0\.0\.1:\d+) --state-machine-arn (\S+))$`).FindStringSubmatch(banner)
	if arnLine == nil || cmdLine == nil || cmdLine[3] != arnLine[1] || !strings.Contains(banner, fakeAWSEnv) {
		t.Fatalf("the banner lacks the state machine ARN or the list-executions line:\n%s", banner)
	}
	endpoint, smArn := cmdLine[2], cmdLine[3]

	client := sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	sms, err := client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
	if err != nil || len(sms.StateMachines) != 1 || aws.ToString(sms.StateMachines[0].StateMachineArn) != smArn {
		t.Fatalf("ListStateMachines at %s: %+v, %v; the banner says %s", endpoint, sms, err, smArn)
	}
	if _, err := client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(smArn)}); err != nil {
		t.Fatalf("ListExecutions as printed: %v", err)
	}
	// The live revision: its version, and the alias pointing at it.
	revLine := regexp.MustCompile(`(?m)^  Revision      rev-[0-9a-f]{12} \(handler contract \d+\) on (\S+), alias (\S+)$`).FindStringSubmatch(banner)
	if revLine == nil || revLine[1] != smArn+":1" || revLine[2] != smArn+":live" {
		t.Fatalf("the banner lacks the live revision line:\n%s", banner)
	}
	if alias, err := client.DescribeStateMachineAlias(ctx, &sfn.DescribeStateMachineAliasInput{StateMachineAliasArn: aws.String(revLine[2])}); err != nil ||
		aws.ToString(alias.RoutingConfiguration[0].StateMachineVersionArn) != revLine[1] {
		t.Fatalf("the live alias as printed: %+v %v", alias, err)
	}

	awsCLI, err := exec.LookPath("aws")
	if err != nil {
		t.Log("the AWS CLI is not installed; the printed line was checked through the Go SDK only")
		return
	}
	// The line as a user pastes it, with the banner's note for a machine
	// without AWS configuration.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ccancel()
	cli := exec.CommandContext(cctx, awsCLI, strings.Fields(cmdLine[1])[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cli.Env = append(cli.Env, kv)
		}
	}
	cli.Env = append(cli.Env, strings.Fields(fakeAWSEnv)...)
	cli.Env = append(cli.Env, "AWS_CONFIG_FILE="+filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=")
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmdLine[1], err, out)
	}
	var listed struct {
		Executions []any `json:"executions"`
	}
	if err := json.Unmarshal(out, &listed); err != nil || listed.Executions == nil {
		t.Fatalf("%s printed %s (%v)", cmdLine[1], out, err)
	}
}
