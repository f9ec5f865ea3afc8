package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	miniserver "github.com/truora/minidyn/server"

	"github.com/openprogram/lifecycle/shared/store/dynamostore"
)

// EndpointVariable names the endpoint to test against instead of minidyn.
const EndpointVariable = "AWS_ENDPOINT_URL_DYNAMODB"

// Backend is one test's table.
type Backend struct {
	Client *dynamodb.Client
	Table  string
	// URL is the endpoint the client talks to (minidyn's loopback server, or
	// AWS_ENDPOINT_URL_DYNAMODB), for processes that need their own client.
	URL string
	// Mini is the minidyn server (for EmulateFailure); nil on a real endpoint.
	Mini *miniserver.Server
}

// Real reports whether the backend is an outside endpoint rather than minidyn.
func (b *Backend) Real() bool { return b.Mini == nil }

// New creates a table with dynamostore.CreateTable and deletes it when the
// test ends. opts adjust the DynamoDB client (a fault test turns retries
// off, for instance).
func New(t testing.TB, opts ...func(*dynamodb.Options)) *Backend {
	t.Helper()
	ctx := context.Background()
	b := &Backend{Table: "lifecycle-test-" + randomHex(t, 6)}
	if os.Getenv(EndpointVariable) != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
			// DynamoDB Local and LocalStack accept any signature.
			cfg.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
		}
		b.Client = dynamodb.NewFromConfig(cfg, opts...)
		b.URL = os.Getenv(EndpointVariable)
	} else {
		b.Mini = miniserver.NewServer()
		srv := httptest.NewServer(newCompat(b.Mini)) // listens on 127.0.0.1
		t.Cleanup(srv.Close)
		b.URL = srv.URL
		b.Client = dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(srv.URL),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
			// The SDK's standard retry policy, with short waits: minidyn
			// answers in microseconds and tests should not sleep seconds.
			Retryer: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 20 * time.Millisecond }),
		}, opts...)
	}
	if err := dynamostore.CreateTable(ctx, b.Client, b.Table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := b.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(b.Table)}); err != nil {
			t.Errorf("delete table %s: %v", b.Table, err)
		}
	})
	return b
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
