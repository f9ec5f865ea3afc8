package sfnlocal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Task tokens carry the execution name, so SendTask* finds the execution
// with one read of its item and no token index has to be written. The
// random part makes every attempt's token distinct and unguessable; the
// execution item holds the one token that is currently valid.
const tokenPrefix = "sfnlocal1"

func newToken(execName string) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	raw := tokenPrefix + "\x00" + execName + "\x00" + hex.EncodeToString(nonce[:])
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// tokenExecution returns the execution name inside a token, or false when
// the string is not a token of this engine.
func tokenExecution(token string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", false
	}
	parts := bytes.Split(raw, []byte{0})
	if len(parts) != 3 || string(parts[0]) != tokenPrefix || len(parts[1]) == 0 || len(parts[2]) != 32 {
		return "", false
	}
	name := string(parts[1])
	if strings.ContainsAny(name, "\x00") {
		return "", false
	}
	return name, true
}
