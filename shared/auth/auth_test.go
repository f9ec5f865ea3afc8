package auth_test

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/openprogram/lifecycle/shared/actionflow"
	"github.com/openprogram/lifecycle/shared/auth"
	"github.com/openprogram/lifecycle/shared/ids"
)

// testKey is the human key (sign signs with it); agentKey the agent key.
var (
	testKey  = []byte("0123456789abcdef0123456789abcdef")
	agentKey = []byte("agent-key-agent-key-agent-key-ag")
	testKeys = auth.Keys{Agent: agentKey, Human: testKey}
)

func TestIssueVerify(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	iss, err := auth.NewIssuer(testKeys, auth.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := auth.NewIssuer(auth.Keys{Agent: agentKey, Human: []byte("another-key-another-key-another-k")}, auth.WithClock(func() time.Time { return now }))
	otherAud, _ := auth.NewIssuer(testKeys, auth.WithAudience("elsewhere"), auth.WithClock(func() time.Time { return now }))
	otherIss, _ := auth.NewIssuer(testKeys, auth.WithIssuer("someone"), auth.WithClock(func() time.Time { return now }))
	later, _ := auth.NewIssuer(testKeys, auth.WithClock(func() time.Time { return now.Add(2 * time.Hour) }))

	good, err := iss.Issue(auth.RoleHuman, "ses_1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	noExp := sign(t, jwt.MapClaims{"sub": "x", "role": "human", "sid": "ses_1", "iss": auth.DefaultIssuer, "aud": auth.DefaultAudience})
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "x", "role": "admin", "iss": auth.DefaultIssuer,
		"aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"sub": "x", "role": "admin", "iss": auth.DefaultIssuer,
		"aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix()}).SignedString(testKey)
	badRole := sign(t, jwt.MapClaims{"sub": "x", "role": "system", "sid": "ses_1", "iss": auth.DefaultIssuer, "aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix()})
	// A token signed with the agent key that claims a human (or admin) role:
	// what anyone holding the agent key could forge.
	forgedHuman, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "human:ses_1", "role": "human", "sid": "ses_1",
		"iss": auth.DefaultIssuer, "aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}).SignedString(agentKey)
	forgedAdmin, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "admin", "role": "admin",
		"iss": auth.DefaultIssuer, "aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}).SignedString(agentKey)
	agentOnly, _ := auth.NewIssuer(auth.Keys{Agent: agentKey}, auth.WithClock(func() time.Time { return now }))
	agentNoSession := sign(t, jwt.MapClaims{"sub": "x", "role": "agent", "iss": auth.DefaultIssuer, "aud": auth.DefaultAudience, "exp": now.Add(time.Hour).Unix()})

	cases := []struct {
		name   string
		v      *auth.Issuer
		token  string
		wantOK bool
	}{
		{"valid", iss, good, true},
		{"other key", other, good, false},
		{"other audience", otherAud, good, false},
		{"other issuer", otherIss, good, false},
		{"expired", later, good, false},
		{"no expiry", iss, noExp, false},
		{"alg none", iss, none, false},
		{"other algorithm", iss, hs512, false},
		{"unknown role", iss, badRole, false},
		{"agent without session", iss, agentNoSession, false},
		{"garbage", iss, "not.a.token", false},
		{"agent key claiming human", iss, forgedHuman, false},
		{"agent key claiming admin", iss, forgedAdmin, false},
		{"human token at an issuer without the human key", agentOnly, good, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.v.Verify(c.token)
			if c.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				want := actionflow.Principal{Subject: "human:ses_1", Role: "human", Session: "ses_1", Origin: "api"}
				if p != want {
					t.Fatalf("principal %+v, want %+v", p, want)
				}
				return
			}
			var ue *auth.UnauthenticatedError
			if !errors.As(err, &ue) {
				t.Fatalf("want *UnauthenticatedError, got %v (principal %+v)", err, p)
			}
		})
	}
}

func sign(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIssueRefusesBadClaims(t *testing.T) {
	iss, _ := auth.NewIssuer(testKeys)
	cases := []struct {
		name    string
		role    string
		session ids.SessionID
		ttl     time.Duration
	}{
		{"unknown role", "root", "ses_1", time.Hour},
		{"agent without session", auth.RoleAgent, "", time.Hour},
		{"bad session id", auth.RoleHuman, "ses#1", time.Hour},
		{"no lifetime", auth.RoleHuman, "ses_1", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if tok, err := iss.Issue(c.role, c.session, c.ttl); err == nil {
				t.Fatalf("issued %s", tok)
			}
		})
	}
	for name, keys := range map[string]auth.Keys{
		"short agent key":     {Agent: []byte("short")},
		"short human key":     {Agent: agentKey, Human: []byte("short")},
		"one key for both":    {Agent: testKey, Human: testKey},
		"no agent key at all": {Human: testKey},
	} {
		if _, err := auth.NewIssuer(keys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	agentOnly, _ := auth.NewIssuer(auth.Keys{Agent: agentKey})
	for _, role := range []string{auth.RoleHuman, auth.RoleAdmin} {
		if tok, err := agentOnly.Issue(role, "ses_1", time.Hour); err == nil {
			t.Errorf("an issuer with only the agent key issued a %s token: %s", role, tok)
		}
	}
	if _, err := agentOnly.Issue(auth.RoleAgent, "ses_1", time.Hour); err != nil {
		t.Errorf("agent token: %v", err)
	}
}

func TestAuthenticateHeaders(t *testing.T) {
	iss, _ := auth.NewIssuer(testKeys)
	tok, _ := iss.Issue(auth.RoleAgent, "ses_1", time.Hour)
	cases := []struct {
		name       string
		authz      string
		origin     string
		wantOrigin string
		wantErr    bool
	}{
		{"bearer", "Bearer " + tok, "", "api", false},
		{"lower-case scheme", "bearer " + tok, "", "api", false},
		{"ui origin is provenance only", "Bearer " + tok, "ui", "ui", false},
		{"other origin value", "Bearer " + tok, "admin", "api", false},
		{"missing", "", "", "", true},
		{"basic", "Basic Zm9vOmJhcg==", "", "", true},
		{"empty token", "Bearer ", "", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/tools", nil)
			if c.authz != "" {
				r.Header.Set("Authorization", c.authz)
			}
			if c.origin != "" {
				r.Header.Set(auth.OriginHeader, c.origin)
			}
			p, err := iss.Authenticate(r)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && (p.Origin != c.wantOrigin || p.Role != auth.RoleAgent) {
				t.Fatalf("principal %+v", p)
			}
		})
	}
}

func TestAuthorizeMatrix(t *testing.T) {
	agent := actionflow.Principal{Subject: "a", Role: auth.RoleAgent, Session: "ses_1"}
	human := actionflow.Principal{Subject: "h", Role: auth.RoleHuman, Session: "ses_1"}
	admin := actionflow.Principal{Subject: "root", Role: auth.RoleAdmin}
	system := actionflow.Principal{Subject: "sys", Role: "system", Session: "ses_1"}
	caps := []auth.Capability{auth.CapRead, auth.CapSubmit, auth.CapHost, auth.CapDecide, auth.CapCommand, auth.CapPolicy, auth.CapAudit, auth.CapAllSessions}
	allowed := map[string]map[auth.Capability]bool{
		"agent": {auth.CapRead: true, auth.CapSubmit: true, auth.CapHost: true},
		"human": {auth.CapRead: true, auth.CapSubmit: true, auth.CapHost: true, auth.CapDecide: true, auth.CapCommand: true, auth.CapPolicy: true, auth.CapAudit: true},
		"admin": {auth.CapRead: true, auth.CapSubmit: true, auth.CapHost: true, auth.CapDecide: true, auth.CapCommand: true, auth.CapPolicy: true, auth.CapAudit: true, auth.CapAllSessions: true},
	}
	for _, p := range []actionflow.Principal{agent, human, admin, system} {
		for _, c := range caps {
			for _, session := range []ids.SessionID{"ses_1", "ses_2", ""} {
				name := p.Role + "/" + string(c) + "/" + string(session)
				t.Run(name, func(t *testing.T) {
					want := allowed[p.Role][c] && (p.Role == auth.RoleAdmin || session == "ses_1")
					err := auth.Authorize(p, c, session)
					if (err == nil) != want {
						t.Fatalf("Authorize = %v, want allowed=%v", err, want)
					}
					var de *auth.DeniedError
					if err != nil && !errors.As(err, &de) {
						t.Fatalf("want *DeniedError, got %T", err)
					}
				})
			}
		}
	}
}

func TestLoadOrCreateKeyOnceUnderRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = auth.LoadOrCreateKey(dir)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if string(keys[i]) != string(keys[0]) {
			t.Fatal("racing creators got different keys")
		}
	}
	fi, err := os.Stat(filepath.Join(dir, auth.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode().Perm())
	}
	again, err := auth.LoadOrCreateKey(dir)
	if err != nil || string(again) != string(keys[0]) {
		t.Fatalf("reload: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left temporary files: %v", entries)
	}
}

func TestGatewayClaims(t *testing.T) {
	cases := []struct {
		name    string
		claims  map[string]string
		want    actionflow.Principal
		wantErr bool
	}{
		{"plain claims", map[string]string{"sub": "u1", "role": "human", "sid": "ses_1"}, actionflow.Principal{Subject: "u1", Role: "human", Session: "ses_1", Origin: "api"}, false},
		{"cognito custom claims", map[string]string{"sub": "u1", "custom:role": "agent", "custom:sid": "ses_2"}, actionflow.Principal{Subject: "u1", Role: "agent", Session: "ses_2", Origin: "api"}, false},
		{"no claims", nil, actionflow.Principal{}, true},
		{"no role", map[string]string{"sub": "u1", "sid": "ses_1"}, actionflow.Principal{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/tools", nil)
			if c.claims != nil {
				r = r.WithContext(auth.WithGatewayClaims(r.Context(), c.claims))
			}
			// A header claiming a role is ignored: only the verified claims count.
			r.Header.Set("role", "admin")
			p, err := auth.GatewayClaims{}.Authenticate(r)
			if (err != nil) != c.wantErr || p != c.want {
				t.Fatalf("got %+v %v", p, err)
			}
		})
	}
}

func TestKeysAreSeparateAndTight(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	keys, err := auth.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(keys.Agent) == string(keys.Human) {
		t.Fatal("one key for agents and humans")
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v %v", fi.Mode().Perm(), err)
	}
	for _, name := range []string{auth.KeyFile, auth.HumanKeyFile} {
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := auth.TightenKeyFiles(dir)
	if err != nil || len(changed) != 2 {
		t.Fatalf("tightened %v, %v", changed, err)
	}
	for _, name := range []string{auth.KeyFile, auth.HumanKeyFile} {
		if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", name, fi.Mode().Perm())
		}
	}
	if changed, _ := auth.TightenKeyFiles(dir); len(changed) != 0 {
		t.Fatalf("tightened again: %v", changed)
	}
	again, err := auth.LoadOrCreateKeys(dir)
	if err != nil || string(again.Human) != string(keys.Human) || string(again.Agent) != string(keys.Agent) {
		t.Fatalf("reload: %v", err)
	}
}
