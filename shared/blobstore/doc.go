// Package blobstore keeps results too large for a store item: Dir (a local
// directory, the embedded default) and package s3blobs (Amazon S3). A blob is
// addressed by a reference ("file://..." or "s3://bucket/key") kept on the
// receipt with the result's digest.
package blobstore
