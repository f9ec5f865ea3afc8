package auth

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/ids"
)

// Default issuer and audience of locally issued tokens.
const (
	DefaultIssuer   = "lifecycle-local"
	DefaultAudience = "lifecycle-api"
)

// MinKeyBytes is the shortest accepted HS256 key (the hash's own size).
const MinKeyBytes = 32

// Claims are the claims of an API token: sub, role, sid (the session the
// token is scoped to; empty only for admin), iss, aud, exp, iat, jti.
type Claims struct {
	Role    string `json:"role"`
	Session string `json:"sid,omitempty"`
	jwt.RegisteredClaims
}

// Issuer issues and verifies HS256 tokens: agent tokens with the agent
// key, human and admin tokens with the human key. The key is chosen by the
// role the token claims and the signature must verify under it, so a token
// signed with the agent key that claims "human" is refused: holding the
// agent key (agent runners, a tool configuration) never yields a human.
type Issuer struct {
	agentKey []byte
	humanKey []byte
	issuer   string
	audience string
	now      func() time.Time
}

// Option configures an Issuer.
type Option func(*Issuer)

// WithIssuer sets the iss claim issued and required.
func WithIssuer(iss string) Option { return func(i *Issuer) { i.issuer = iss } }

// WithAudience sets the aud claim issued and required.
func WithAudience(aud string) Option { return func(i *Issuer) { i.audience = aud } }

// WithClock replaces time (tests).
func WithClock(now func() time.Time) Option { return func(i *Issuer) { i.now = now } }

// NewIssuer returns an Issuer over keys: the agent key is required, the
// human key optional (without it the issuer neither issues nor accepts
// human and admin tokens). Each is at least MinKeyBytes, and they differ.
func NewIssuer(keys Keys, opts ...Option) (*Issuer, error) {
	if len(keys.Agent) < MinKeyBytes {
		return nil, fmt.Errorf("auth: agent signing key of %d bytes, need at least %d", len(keys.Agent), MinKeyBytes)
	}
	if keys.Human != nil {
		if len(keys.Human) < MinKeyBytes {
			return nil, fmt.Errorf("auth: human signing key of %d bytes, need at least %d", len(keys.Human), MinKeyBytes)
		}
		if hmac.Equal(keys.Human, keys.Agent) {
			return nil, errors.New("auth: the human signing key must differ from the agent key")
		}
	}
	i := &Issuer{agentKey: append([]byte(nil), keys.Agent...), issuer: DefaultIssuer, audience: DefaultAudience, now: time.Now}
	if keys.Human != nil {
		i.humanKey = append([]byte(nil), keys.Human...)
	}
	for _, o := range opts {
		o(i)
	}
	return i, nil
}

// Issue makes a token for role scoped to session, valid for ttl. The
// subject is "<role>:<session>" (admin: "admin"); use IssueSubject to name it.
func (i *Issuer) Issue(role string, session ids.SessionID, ttl time.Duration) (string, error) {
	sub := role
	if session != "" {
		sub = role + ":" + string(session)
	}
	return i.IssueSubject(sub, role, session, ttl)
}

// IssueSubject makes a token for a named subject.
func (i *Issuer) IssueSubject(subject, role string, session ids.SessionID, ttl time.Duration) (string, error) {
	if err := checkClaims(subject, role, string(session)); err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", errors.New("auth: a token needs a positive lifetime")
	}
	now := i.now().UTC()
	c := Claims{Role: role, Session: string(session), RegisteredClaims: jwt.RegisteredClaims{
		Subject: subject, Issuer: i.issuer, Audience: jwt.ClaimStrings{i.audience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)), ID: ids.New("tok"),
	}}
	key, err := i.keyFor(role)
	if err != nil {
		return "", err
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return s, nil
}

// Verify checks a token's signature (HS256 only), issuer, audience and
// expiry (required), and returns its principal (origin "api").
func (i *Issuer) Verify(token string) (actionflow.Principal, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		claimed, _ := t.Claims.(*Claims)
		if claimed == nil {
			return nil, errors.New("no claims")
		}
		return i.keyFor(claimed.Role)
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(i.issuer), jwt.WithAudience(i.audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(30*time.Second),
		jwt.WithTimeFunc(i.now))
	if err != nil {
		return actionflow.Principal{}, &UnauthenticatedError{Msg: "token: " + err.Error()}
	}
	if err := checkClaims(c.Subject, c.Role, c.Session); err != nil {
		return actionflow.Principal{}, &UnauthenticatedError{Msg: err.Error()}
	}
	return actionflow.Principal{Subject: c.Subject, Role: c.Role, Session: ids.SessionID(c.Session), Origin: OriginAPI}, nil
}

// keyFor is the key that signs and verifies tokens of role.
func (i *Issuer) keyFor(role string) ([]byte, error) {
	switch role {
	case RoleAgent:
		return i.agentKey, nil
	case RoleHuman, RoleAdmin:
		if i.humanKey == nil {
			return nil, fmt.Errorf("auth: this issuer holds no human key, so it neither issues nor accepts %s tokens", role)
		}
		return i.humanKey, nil
	}
	return nil, fmt.Errorf("auth: role %q is not agent, human or admin", role)
}

// Authenticate reads "Authorization: Bearer <token>" and verifies it. The
// origin comes from OriginHeader (provenance only).
func (i *Issuer) Authenticate(r *http.Request) (actionflow.Principal, error) {
	tok, err := bearer(r)
	if err != nil {
		return actionflow.Principal{}, err
	}
	p, err := i.Verify(tok)
	if err != nil {
		return p, err
	}
	p.Origin = OriginOf(r)
	return p, nil
}

func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &UnauthenticatedError{Msg: "no Authorization header"}
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", &UnauthenticatedError{Msg: "the Authorization header is not \"Bearer <token>\""}
	}
	return strings.TrimSpace(tok), nil
}

// checkClaims validates what every token must say, issued or verified.
func checkClaims(subject, role, session string) error {
	if subject == "" || len(subject) > 200 {
		return errors.New("auth: the subject must be 1..200 characters")
	}
	if !ValidRole(role) {
		return fmt.Errorf("auth: role %q is not agent, human or admin", role)
	}
	if session == "" {
		if role != RoleAdmin {
			return fmt.Errorf("auth: a %s token must name its session", role)
		}
		return nil
	}
	if err := ids.Validate("session", session); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
