package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the name of the signing key under the state directory.
const KeyFile = "auth.key"

// LoadOrCreateKey returns the signing key kept in dir/auth.key, generating
// it once (32 random bytes, hex, mode 0600). Two processes racing to create
// it agree on one key: the file appears atomically (hard link of a complete
// temporary file), and the loser reads the winner's.
func LoadOrCreateKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, KeyFile)
	if key, err := readKey(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: create state dir %s: %w", dir, err)
	}
	raw := make([]byte, MinKeyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".auth.key.*")
	if err != nil {
		return nil, fmt.Errorf("auth: write key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write key: %w", err)
	}
	if _, err := tmp.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("auth: write key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("auth: write key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("auth: install key %s: %w", path, err)
	}
	return readKey(path)
}

func readKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("auth: key file %s is not hex: %w", path, err)
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("auth: key file %s holds %d bytes, need %d", path, len(key), MinKeyBytes)
	}
	return key, nil
}
