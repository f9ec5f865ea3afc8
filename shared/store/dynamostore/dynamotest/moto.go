package dynamotest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/openprogram/lifecycle/shared/store/dynamostore"
)

// RequiredEnv, set to 1 by `make test`, turns a missing emulator (moto, the
// Lambda Runtime Interface Emulator) from a skip into a failure.
const RequiredEnv = "LIFECYCLE_AWS_MODE_REQUIRED"

// Moto is a moto server (python3 -m moto.server: DynamoDB, EventBridge,
// S3, SQS, ...) on a fresh 127.0.0.1 port, in its own process group,
// killed when the test ends. Without moto the test is skipped, or fails
// when RequiredEnv is 1. Its state is its own: nothing outlives it.
func Moto(t testing.TB) string {
	t.Helper()
	if err := exec.Command("python3", "-c", "import moto.server").Run(); err != nil {
		missing(t, fmt.Sprintf("moto is not importable by python3 (%v): pip install 'moto[server]==5.2.1'", err))
	}
	var last error
	for try := 0; try < 3; try++ {
		url, err := startMoto(t)
		if err == nil {
			return url
		}
		last = err
	}
	t.Fatalf("moto: %v", last)
	return ""
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequiredEnv) == "1" {
		t.Fatalf("%s (%s=1)", why, RequiredEnv)
	}
	t.Skip(why)
}

func startMoto(t testing.TB) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	logPath := filepath.Join(t.TempDir(), "moto.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd := exec.Command("python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", port)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start moto: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	url := "http://127.0.0.1:" + port
	// A loaded machine takes seconds to import moto.
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return url, nil
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("moto exited before it answered on %s: %s", url, b)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("moto did not answer on %s within 90s", url)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// NewMoto is New on a moto server (Moto): a table created with
// dynamostore.CreateTable, on a second DynamoDB implementation independent
// of minidyn. Moto's DynamoDB is not safe under concurrent requests: use it
// for sequential checks only.
func NewMoto(t testing.TB, url string) *Backend {
	t.Helper()
	b := &Backend{Table: "lifecycle-test-" + randomHex(t, 6), URL: url}
	b.Client = dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err := dynamostore.CreateTable(context.Background(), b.Client, b.Table); err != nil {
		t.Fatal(err)
	}
	return b
}
