package s3blobs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Blobs is a bucket.
type Blobs struct {
	Client *s3.Client
	Bucket string
}

func (b *Blobs) Put(ctx context.Context, key string, data []byte) (string, error) {
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		return "", fmt.Errorf("put blob %s: %w", key, err)
	}
	return "s3://" + b.Bucket + "/" + key, nil
}

func (b *Blobs) Get(ctx context.Context, ref string) ([]byte, error) {
	rest, ok := strings.CutPrefix(ref, "s3://"+b.Bucket+"/")
	if !ok {
		return nil, fmt.Errorf("blob ref %q is not in bucket %s", ref, b.Bucket)
	}
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(rest)})
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", ref, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
