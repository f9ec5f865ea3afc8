package blobstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir stores blobs under a directory.
type Dir struct{ Root string }

// Put writes data at key (atomically) and returns its reference.
func (d Dir) Put(ctx context.Context, key string, data []byte) (string, error) {
	clean := filepath.Clean("/" + key)[1:]
	full := filepath.Join(d.Root, clean)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", fmt.Errorf("blob %s: %w", key, err)
	}
	tmp := full + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return "", fmt.Errorf("blob %s: %w", key, err)
	}
	if err := os.Rename(tmp, full); err != nil {
		return "", fmt.Errorf("blob %s: %w", key, err)
	}
	return "file://" + clean, nil
}

// Get reads a blob by reference.
func (d Dir) Get(ctx context.Context, ref string) ([]byte, error) {
	key, ok := strings.CutPrefix(ref, "file://")
	if !ok {
		return nil, fmt.Errorf("blob ref %q is not a file:// reference", ref)
	}
	b, err := os.ReadFile(filepath.Join(d.Root, filepath.Clean("/" + key)[1:]))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", ref, err)
	}
	return b, nil
}
