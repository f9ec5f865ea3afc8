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

// Key files under the state directory. Agent tokens are signed with
// KeyFile, human and admin tokens with HumanKeyFile: a process (or a
// configuration) that holds only the agent key cannot mint a human token.
const (
	KeyFile      = "auth.key"
	HumanKeyFile = "human.key"
)

// Keys are the two signing keys of locally issued tokens.
type Keys struct {
	// Agent signs and verifies agent tokens.
	Agent []byte
	// Human signs and verifies human and admin tokens. Nil: the issuer
	// neither issues nor accepts them.
	Human []byte
}

// LoadOrCreateKey returns the agent signing key kept in dir/auth.key,
// generating it once (32 random bytes, hex, mode 0600, in a directory
// created 0700). Two processes racing to create it agree on one key: the
// file appears atomically (hard link of a complete temporary file), and the
// loser reads the winner's.
func LoadOrCreateKey(dir string) ([]byte, error) { return loadOrCreate(dir, KeyFile) }

// LoadOrCreateHumanKey returns the human signing key, dir/human.key,
// generated once like LoadOrCreateKey.
func LoadOrCreateHumanKey(dir string) ([]byte, error) { return loadOrCreate(dir, HumanKeyFile) }

// LoadOrCreateKeys returns both keys (lifecycle serve verifies both).
func LoadOrCreateKeys(dir string) (Keys, error) {
	agent, err := LoadOrCreateKey(dir)
	if err != nil {
		return Keys{}, err
	}
	human, err := LoadOrCreateHumanKey(dir)
	if err != nil {
		return Keys{}, err
	}
	return Keys{Agent: agent, Human: human}, nil
}

// TightenKeyFiles gives the key files under dir mode 0600 if they have
// looser modes (a key made by an older version, or copied in), and returns
// a line for each file it changed, for the caller to log.
func TightenKeyFiles(dir string) ([]string, error) {
	var changed []string
	for _, name := range []string{KeyFile, HumanKeyFile} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return changed, fmt.Errorf("auth: check key file %s: %w", p, err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return changed, fmt.Errorf("auth: tighten key file %s: %w", p, err)
			}
			changed = append(changed, fmt.Sprintf("%s was mode %04o, now 0600", p, mode))
		}
	}
	return changed, nil
}

func loadOrCreate(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
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
	tmp, err := os.CreateTemp(dir, "."+name+".*")
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
