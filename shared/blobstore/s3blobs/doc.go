// Package s3blobs stores large results in an S3 bucket.
package s3blobs
