// Package s3anchor keeps decision log anchors (audit.Manifest) in an S3
// bucket with Object Lock: every manifest is a new object under
// heads/<time>.json, and heads/latest.json a new version of the latest
// one; the bucket's default retention (compliance mode) keeps every
// version from being changed or deleted, by anyone, until it expires.
package s3anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/openprogram/lifecycle/shared/audit"
)

// LatestKey is the object that holds the last manifest.
const LatestKey = "heads/latest.json"

// Sink is an audit.Sink over one bucket.
type Sink struct {
	Client *s3.Client
	Bucket string
}

var _ audit.Sink = (*Sink)(nil)

// Latest reads heads/latest.json (ok false when there is none yet).
func (s *Sink) Latest(ctx context.Context) (audit.Manifest, bool, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(LatestKey)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return audit.Manifest{}, false, nil
	}
	if err != nil {
		return audit.Manifest{}, false, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, LatestKey, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return audit.Manifest{}, false, fmt.Errorf("read s3://%s/%s: %w", s.Bucket, LatestKey, err)
	}
	var m audit.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return audit.Manifest{}, false, fmt.Errorf("decode s3://%s/%s: %w", s.Bucket, LatestKey, err)
	}
	return m, true, nil
}

// Put writes the manifest under its time, then as the latest. Object Lock
// needs a checksum on every put (SHA-256 here).
func (s *Sink) Put(ctx context.Context, m audit.Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	for _, key := range []string{"heads/" + m.AnchoredAt.UTC().Format(time.RFC3339Nano) + ".json", LatestKey} {
		_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(b),
			ContentType: aws.String("application/json"), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
		if err != nil {
			return fmt.Errorf("put s3://%s/%s: %w", s.Bucket, key, err)
		}
	}
	return nil
}
