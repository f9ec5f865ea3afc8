package sfnlocal

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/openprogram/lifecycle/shared/asl"
	"github.com/openprogram/lifecycle/shared/store"
)

// Versions and aliases, as Step Functions has them: a version is an
// immutable snapshot of the definition (PublishStateMachineVersion), an
// alias routes StartExecution to one version or splits it between two by
// weight. Every definition the engine ever ran is kept in the store under
// its SHA-256, and every execution names the one it started on, so it
// resumes on that definition after a restart whatever the current file is.
//
// Store layout (see doc.go and shared/store/SCHEMA.md):
//
//	SFNDEF#<sha256 hex> / DEF              a definition as run (placeholders
//	                                       filled); PutOnce, never changed
//	SFNVER#<machine>    / V#<10 digits>    a version: its definition, description,
//	                                       creation; deleting it leaves a tombstone
//	                                       (numbers are never reused, as on AWS)
//	SFNALIAS#<machine>  / <alias name>     an alias: routing, description, dates;
//	                                       deleting it leaves a tombstone
const (
	defPKPrefix    = "SFNDEF#"
	defSK          = "DEF"
	verPKPrefix    = "SFNVER#"
	verSKPrefix    = "V#"
	aliasPKPrefix  = "SFNALIAS#"
	maxDescription = 256
)

// errDefinitionUnusable: an execution names a definition that is not in the
// store, or no longer loads. It cannot run anything else.
var errDefinitionUnusable = errors.New("the definition the execution started on is unusable")

type loadedDef struct {
	raw []byte
	sm  *asl.StateMachine
}

type storedDef struct {
	Definition string `json:"definition"`
}

type versionRecord struct {
	Version     int64  `json:"version"`
	Def         string `json:"def"`
	Description string `json:"description,omitempty"`
	Created     int64  `json:"created"`
	Deleted     bool   `json:"deleted,omitempty"`
}

type aliasRecord struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Routing     []route `json:"routing"`
	Created     int64   `json:"created"`
	Updated     int64   `json:"updated"`
	Deleted     bool    `json:"deleted,omitempty"`
}

type route struct {
	Version int64 `json:"version"`
	Weight  int   `json:"weight"`
}

func digestOf(def []byte) string {
	sum := sha256.Sum256(def)
	return hex.EncodeToString(sum[:])
}

// revisionID is the state machine's revisionId for a definition: Step
// Functions hands out an opaque id per revision; the engine's revisions
// are its definitions, so the id is derived from the digest.
func revisionID(digest string) string { return digest[:32] }

// storeDefinition keeps a definition under its digest (once; a repeat is
// the same bytes).
func (e *Engine) storeDefinition(ctx context.Context, def []byte) error {
	body, err := json.Marshal(storedDef{Definition: string(def)})
	if err != nil {
		return err
	}
	err = e.store.PutOnce(ctx, store.Item{PK: defPKPrefix + digestOf(def), SK: defSK, Version: 1, Body: body})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("store the state machine definition: %w", err)
	}
	return nil
}

// loadDefinition returns a stored definition, parsed (and cached).
func (e *Engine) loadDefinition(ctx context.Context, digest string) (*loadedDef, error) {
	e.defsMu.Lock()
	d := e.defs[digest]
	e.defsMu.Unlock()
	if d != nil {
		return d, nil
	}
	it, err := e.store.Get(ctx, store.Key{PK: defPKPrefix + digest, SK: defSK})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: definition sha256:%s is not in the store", errDefinitionUnusable, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("read definition sha256:%s: %w", digest, err)
	}
	var sd storedDef
	if err := json.Unmarshal(it.Body, &sd); err != nil {
		return nil, fmt.Errorf("%w: definition sha256:%s: %v", errDefinitionUnusable, digest, err)
	}
	sm, err := asl.Parse([]byte(sd.Definition))
	if err != nil {
		return nil, fmt.Errorf("%w: definition sha256:%s no longer loads: %v", errDefinitionUnusable, digest, err)
	}
	d = &loadedDef{raw: []byte(sd.Definition), sm: sm}
	e.defsMu.Lock()
	e.defs[digest] = d
	e.defsMu.Unlock()
	return d, nil
}

// definition is the parsed state machine of a stored definition.
func (e *Engine) definition(ctx context.Context, digest string) (*asl.StateMachine, error) {
	d, err := e.loadDefinition(ctx, digest)
	if err != nil {
		return nil, err
	}
	return d.sm, nil
}

// target is what a qualified state machine ARN names: the state machine
// itself (both zero), one of its versions, or one of its aliases.
type target struct {
	version int64
	alias   string
}

// aliasName is Step Functions' rule for alias names: letters, digits, _ - .
// with at least one that is not a digit (so it never reads as a version).
var aliasName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,80}$`)

func validAliasName(s string) bool {
	return aliasName.MatchString(s) && strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

// parseTarget reads a state machine, version or alias ARN of this machine.
func (e *Engine) parseTarget(arn string) (target, error) {
	if arn == e.smArn {
		return target{}, nil
	}
	if rest, ok := strings.CutPrefix(arn, e.smArn+":"); ok {
		if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n > 0 && strconv.FormatInt(n, 10) == rest {
			return target{version: n}, nil
		}
		if validAliasName(rest) {
			return target{alias: rest}, nil
		}
		return target{}, clientError("InvalidArn", "Invalid Arn: '%s'", arn)
	}
	return target{}, e.checkStateMachine(arn)
}

// VersionArn is the ARN of a version of the state machine.
func (e *Engine) VersionArn(n int64) string { return e.smArn + ":" + strconv.FormatInt(n, 10) }

// AliasArn is the ARN of an alias of the state machine.
func (e *Engine) AliasArn(name string) string { return e.smArn + ":" + name }

func (e *Engine) versionKey(n int64) store.Key {
	return store.Key{PK: verPKPrefix + e.smName, SK: fmt.Sprintf("%s%010d", verSKPrefix, n)}
}

func (e *Engine) aliasKey(name string) store.Key {
	return store.Key{PK: aliasPKPrefix + e.smName, SK: name}
}

// getVersion reads a version; a missing or deleted one is nil.
func (e *Engine) getVersion(ctx context.Context, n int64) (*versionRecord, int64, error) {
	it, err := e.store.Get(ctx, e.versionKey(n))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read version %d: %w", n, err)
	}
	var v versionRecord
	if err := json.Unmarshal(it.Body, &v); err != nil {
		return nil, 0, fmt.Errorf("decode version %d: %w", n, err)
	}
	if v.Deleted {
		return nil, it.Version, nil
	}
	return &v, it.Version, nil
}

// getAlias reads an alias; a missing one is nil, a deleted one nil with
// the version of its tombstone.
func (e *Engine) getAlias(ctx context.Context, name string) (*aliasRecord, int64, error) {
	it, err := e.store.Get(ctx, e.aliasKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read alias %s: %w", name, err)
	}
	var a aliasRecord
	if err := json.Unmarshal(it.Body, &a); err != nil {
		return nil, 0, fmt.Errorf("decode alias %s: %w", name, err)
	}
	if a.Deleted {
		return nil, it.Version, nil
	}
	return &a, it.Version, nil
}

// aliases lists the aliases that exist, by name.
func (e *Engine) aliases(ctx context.Context) ([]aliasRecord, error) {
	var out []aliasRecord
	err := store.Each(ctx, e.store, aliasPKPrefix+e.smName, store.QueryOptions{}, func(it store.Item) error {
		var a aliasRecord
		if err := json.Unmarshal(it.Body, &a); err != nil {
			return fmt.Errorf("decode alias %s: %w", it.SK, err)
		}
		if !a.Deleted {
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list aliases: %w", err)
	}
	return out, nil
}

// putItem writes a version or alias item (PutOnce when stored is 0, else
// over that version). Callers hold versionsMu and call forgetStarts.
func putItem(ctx context.Context, st store.Store, key store.Key, body any, stored int64) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	it := store.Item{PK: key.PK, SK: key.SK, Version: stored + 1, Body: b}
	if stored == 0 {
		return st.PutOnce(ctx, it)
	}
	return st.CompareAndSwap(ctx, it, stored, 0)
}

// resolveStart returns the definition a StartExecution on t runs, and the
// version it runs on. Callers hold versionsMu (shared) for a version or
// alias, so the version cannot be deleted before the execution is written.
func (e *Engine) resolveStart(ctx context.Context, arn string, t target) (d *loadedDef, digest string, version int64, err error) {
	switch {
	case t.version == 0 && t.alias == "":
		d, err := e.loadDefinition(ctx, e.digest)
		return d, e.digest, 0, err
	case t.alias != "":
		routing, err := e.cachedRouting(ctx, t.alias)
		if err != nil {
			return nil, "", 0, err
		}
		if routing == nil {
			return nil, "", 0, clientError("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", arn)
		}
		version = e.route(routing)
	default:
		version = t.version
	}
	def, err := e.cachedVersionDef(ctx, version)
	if err != nil {
		return nil, "", 0, err
	}
	if def == "" {
		return nil, "", 0, clientError("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", e.VersionArn(version))
	}
	if d, err = e.loadDefinition(ctx, def); err != nil {
		return nil, "", 0, fmt.Errorf("version %d: %w", version, err)
	}
	return d, def, version, nil
}

// startCache spares a StartExecution on a version or alias its store
// reads: what a version runs and where an alias routes change only
// through this engine (one engine per store), under versionsMu held
// exclusively, and every such change empties the cache (forgetStarts).
type startCache struct {
	mu       sync.Mutex
	versions map[int64]string   // version -> definition digest ("" absent)
	aliases  map[string][]route // alias -> routing (nil absent)
}

func (e *Engine) cachedVersionDef(ctx context.Context, n int64) (string, error) {
	c := &e.starts
	c.mu.Lock()
	def, ok := c.versions[n]
	c.mu.Unlock()
	if ok {
		return def, nil
	}
	v, _, err := e.getVersion(ctx, n)
	if err != nil {
		return "", err
	}
	if v != nil {
		def = v.Def
	}
	c.mu.Lock()
	if c.versions == nil {
		c.versions = map[int64]string{}
	}
	c.versions[n] = def
	c.mu.Unlock()
	return def, nil
}

func (e *Engine) cachedRouting(ctx context.Context, name string) ([]route, error) {
	c := &e.starts
	c.mu.Lock()
	rs, ok := c.aliases[name]
	c.mu.Unlock()
	if ok {
		return rs, nil
	}
	a, _, err := e.getAlias(ctx, name)
	if err != nil {
		return nil, err
	}
	if a != nil {
		rs = a.Routing
	}
	c.mu.Lock()
	if c.aliases == nil {
		c.aliases = map[string][]route{}
	}
	c.aliases[name] = rs
	c.mu.Unlock()
	return rs, nil
}

// forgetStarts empties the start cache; callers hold versionsMu.
func (e *Engine) forgetStarts() {
	e.starts.mu.Lock()
	e.starts.versions, e.starts.aliases = nil, nil
	e.starts.mu.Unlock()
}

// route picks the version of an alias for one execution, by weight.
func (e *Engine) route(rs []route) int64 {
	if len(rs) == 1 {
		return rs[0].Version
	}
	p := e.random() * 100
	for _, r := range rs {
		if p < float64(r.Weight) {
			return r.Version
		}
		p -= float64(r.Weight)
	}
	return rs[len(rs)-1].Version
}

type publishInput struct {
	StateMachineArn string `json:"stateMachineArn"`
	RevisionID      string `json:"revisionId"`
	Description     string `json:"description"`
}

// publishVersion snapshots the current definition as a version. As on
// AWS, publishing a definition already published as the latest version
// returns that version (whatever the description).
func (e *Engine) publishVersion(ctx context.Context, in publishInput) (any, error) {
	if err := e.checkStateMachine(in.StateMachineArn); err != nil {
		return nil, err
	}
	if len(in.Description) > maxDescription {
		return nil, clientError("ValidationException", "description must be at most %d characters, got %d", maxDescription, len(in.Description))
	}
	if in.RevisionID != "" && in.RevisionID != revisionID(e.digest) {
		return nil, clientError("ConflictException", "the state machine's current revision is %s, not %s", revisionID(e.digest), in.RevisionID)
	}
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	defer e.forgetStarts()
	for {
		page, err := e.store.Query(ctx, verPKPrefix+e.smName, store.QueryOptions{SKPrefix: verSKPrefix, Descending: true, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("read the latest version: %w", err)
		}
		var latest versionRecord
		if len(page.Items) > 0 {
			if err := json.Unmarshal(page.Items[0].Body, &latest); err != nil {
				return nil, fmt.Errorf("decode version %s: %w", page.Items[0].SK, err)
			}
			if !latest.Deleted && latest.Def == e.digest {
				return map[string]any{"stateMachineVersionArn": e.VersionArn(latest.Version), "creationDate": epochSeconds(fromMS(latest.Created))}, nil
			}
		}
		v := versionRecord{Version: latest.Version + 1, Def: e.digest, Description: in.Description, Created: ms(e.clock.Now())}
		err = putItem(ctx, e.store, e.versionKey(v.Version), v, 0)
		if errors.Is(err, store.ErrConflict) {
			continue // published meanwhile through another engine on the store
		}
		if err != nil {
			return nil, fmt.Errorf("publish version %d: %w", v.Version, err)
		}
		e.log.Info("sfnlocal: published a state machine version", "version_arn", e.VersionArn(v.Version), "description", v.Description)
		return map[string]any{"stateMachineVersionArn": e.VersionArn(v.Version), "creationDate": epochSeconds(fromMS(v.Created))}, nil
	}
}

// pageToken and readPageToken are the list operations' tokens: a kind and
// the last key listed.
func pageToken(kind, last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + last))
}

func readPageToken(kind, tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	last, ok := strings.CutPrefix(string(b), kind+":")
	if err != nil || !ok || last == "" {
		return "", clientError("InvalidToken", "Invalid Token: '%s'", tok)
	}
	return last, nil
}

func pageSize(n int) (int, error) {
	if n < 0 || n > 1000 {
		return 0, clientError("ValidationException", "maxResults must be between 0 and 1000, got %d", n)
	}
	if n == 0 {
		return 100, nil
	}
	return n, nil
}

// listVersions lists the versions that exist, newest first.
func (e *Engine) listVersions(ctx context.Context, in listInput) (any, error) {
	if err := e.checkStateMachine(in.StateMachineArn); err != nil {
		// The operation's model has no StateMachineDoesNotExist (only
		// InvalidArn, InvalidToken and ValidationException).
		var ae *apiError
		if errors.As(err, &ae) && ae.code == "StateMachineDoesNotExist" {
			ae.code = "ValidationException"
		}
		return nil, err
	}
	size, err := pageSize(in.MaxResults)
	if err != nil {
		return nil, err
	}
	after, err := readPageToken("versions", in.NextToken)
	if err != nil {
		return nil, err
	}
	items := []map[string]any{}
	next := ""
	for {
		page, err := e.store.Query(ctx, verPKPrefix+e.smName, store.QueryOptions{SKPrefix: verSKPrefix, Descending: true, After: after, Limit: size})
		if err != nil {
			return nil, fmt.Errorf("list versions: %w", err)
		}
		for i, it := range page.Items {
			after = it.SK
			var v versionRecord
			if err := json.Unmarshal(it.Body, &v); err != nil {
				return nil, fmt.Errorf("decode version %s: %w", it.SK, err)
			}
			if v.Deleted {
				continue
			}
			items = append(items, map[string]any{"stateMachineVersionArn": e.VersionArn(v.Version), "creationDate": epochSeconds(fromMS(v.Created))})
			if len(items) == size {
				if i < len(page.Items)-1 || page.Next != "" {
					next = pageToken("versions", after)
				}
				break
			}
		}
		if len(items) == size || page.Next == "" {
			break
		}
		after = page.Next
	}
	out := map[string]any{"stateMachineVersions": items}
	if next != "" {
		out["nextToken"] = next
	}
	return out, nil
}

// deleteVersion deletes a version no alias routes to and nothing runs on.
// Step Functions lets running executions finish on a deleted version; the
// engine refuses instead (ConflictException), so that a version is never
// deleted while an execution, of the engine or of the lifecycle (the
// VersionInUse hook), may still need it. Deleting a version that does not
// exist succeeds, as on AWS.
func (e *Engine) deleteVersion(ctx context.Context, arn string) (any, error) {
	t, err := e.parseTarget(arn)
	if err != nil {
		return nil, err
	}
	if t.version == 0 {
		return nil, clientError("InvalidArn", "Invalid Arn: '%s' is not a state machine version ARN", arn)
	}
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	defer e.forgetStarts()
	v, stored, err := e.getVersion(ctx, t.version)
	if err != nil || v == nil {
		return struct{}{}, err
	}
	as, err := e.aliases(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range as {
		for _, r := range a.Routing {
			if r.Version == t.version {
				names = append(names, a.Name)
			}
		}
	}
	if len(names) > 0 {
		return nil, clientError("ConflictException", "Version %s is referenced by the alias(es) %s: update or delete them first", arn, strings.Join(names, ", "))
	}
	running := 0
	for _, x := range e.running() {
		x.mu.Lock()
		if x.rec.Status == statusRunning && x.rec.Ver == t.version {
			running++
		}
		x.mu.Unlock()
	}
	if running > 0 {
		return nil, clientError("ConflictException", "Version %s has %d running execution(s); the embedded engine deletes a version only when nothing runs on it", arn, running)
	}
	if e.versionInUse != nil {
		inUse, err := e.versionInUse(ctx, arn)
		if err != nil {
			return nil, fmt.Errorf("check whether version %s is in use: %w", arn, err)
		}
		if inUse {
			return nil, clientError("ConflictException", "Version %s is in use: executions of the lifecycle are pinned to it", arn)
		}
	}
	v.Deleted = true
	if err := putItem(ctx, e.store, e.versionKey(t.version), v, stored); err != nil {
		return nil, fmt.Errorf("delete version %s: %w", arn, err)
	}
	e.log.Info("sfnlocal: deleted a state machine version", "version_arn", arn)
	return struct{}{}, nil
}

type routeInput struct {
	StateMachineVersionArn string `json:"stateMachineVersionArn"`
	Weight                 int    `json:"weight"`
}

type createAliasInput struct {
	Name                 string       `json:"name"`
	Description          string       `json:"description"`
	RoutingConfiguration []routeInput `json:"routingConfiguration"`
}

type updateAliasInput struct {
	StateMachineAliasArn string       `json:"stateMachineAliasArn"`
	Description          *string      `json:"description"`
	RoutingConfiguration []routeInput `json:"routingConfiguration"`
}

type aliasArnInput struct {
	StateMachineAliasArn string `json:"stateMachineAliasArn"`
}

// checkRouting validates a routing configuration: one or two versions of
// this machine that exist, distinct, weights 0..100 summing to 100.
func (e *Engine) checkRouting(ctx context.Context, in []routeInput) ([]route, error) {
	if len(in) < 1 || len(in) > 2 {
		return nil, clientError("ValidationException", "routingConfiguration must name 1 or 2 versions, got %d", len(in))
	}
	var out []route
	sum := 0
	for _, r := range in {
		t, err := e.parseTarget(r.StateMachineVersionArn)
		if err != nil {
			return nil, err
		}
		if t.version == 0 {
			return nil, clientError("ValidationException", "routingConfiguration: %q is not a state machine version ARN", r.StateMachineVersionArn)
		}
		if r.Weight < 0 || r.Weight > 100 {
			return nil, clientError("ValidationException", "routingConfiguration: weight %d of %s is not between 0 and 100", r.Weight, r.StateMachineVersionArn)
		}
		if len(out) == 1 && out[0].Version == t.version {
			return nil, clientError("ValidationException", "routingConfiguration names version %s twice", r.StateMachineVersionArn)
		}
		v, _, err := e.getVersion(ctx, t.version)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, clientError("ResourceNotFound", "Resource Not Found: '%s'", r.StateMachineVersionArn)
		}
		sum += r.Weight
		out = append(out, route{Version: t.version, Weight: r.Weight})
	}
	if sum != 100 {
		return nil, clientError("ValidationException", "routingConfiguration weights must sum to 100, got %d", sum)
	}
	return out, nil
}

func sameRouting(a, b []route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// createAlias creates an alias. The same request again returns the alias;
// an alias of that name with another configuration is ConflictException.
func (e *Engine) createAlias(ctx context.Context, in createAliasInput) (any, error) {
	if !validAliasName(in.Name) {
		return nil, clientError("ValidationException", "alias name %q must be 1 to 80 letters, digits, _ - or ., not only digits", in.Name)
	}
	if len(in.Description) > maxDescription {
		return nil, clientError("ValidationException", "description must be at most %d characters, got %d", maxDescription, len(in.Description))
	}
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	defer e.forgetStarts()
	rs, err := e.checkRouting(ctx, in.RoutingConfiguration)
	if err != nil {
		return nil, err
	}
	a, stored, err := e.getAlias(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	if a != nil {
		if sameRouting(a.Routing, rs) && a.Description == in.Description {
			return map[string]any{"stateMachineAliasArn": e.AliasArn(a.Name), "creationDate": epochSeconds(fromMS(a.Created))}, nil
		}
		return nil, clientError("ConflictException", "Alias %s already exists with another configuration", e.AliasArn(in.Name))
	}
	now := ms(e.clock.Now())
	n := aliasRecord{Name: in.Name, Description: in.Description, Routing: rs, Created: now, Updated: now}
	if err := putItem(ctx, e.store, e.aliasKey(in.Name), n, stored); err != nil {
		return nil, fmt.Errorf("create alias %s: %w", in.Name, err)
	}
	return map[string]any{"stateMachineAliasArn": e.AliasArn(n.Name), "creationDate": epochSeconds(fromMS(n.Created))}, nil
}

func (e *Engine) aliasTarget(arn string) (string, error) {
	t, err := e.parseTarget(arn)
	if err != nil {
		return "", err
	}
	if t.alias == "" {
		return "", clientError("InvalidArn", "Invalid Arn: '%s' is not a state machine alias ARN", arn)
	}
	return t.alias, nil
}

func (e *Engine) updateAlias(ctx context.Context, in updateAliasInput) (any, error) {
	name, err := e.aliasTarget(in.StateMachineAliasArn)
	if err != nil {
		return nil, err
	}
	if in.Description == nil && in.RoutingConfiguration == nil {
		return nil, clientError("ValidationException", "give a description or a routingConfiguration to update")
	}
	if in.Description != nil && len(*in.Description) > maxDescription {
		return nil, clientError("ValidationException", "description must be at most %d characters, got %d", maxDescription, len(*in.Description))
	}
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	defer e.forgetStarts()
	var rs []route
	if in.RoutingConfiguration != nil {
		if rs, err = e.checkRouting(ctx, in.RoutingConfiguration); err != nil {
			return nil, err
		}
	}
	a, stored, err := e.getAlias(ctx, name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, clientError("ResourceNotFound", "Resource Not Found: '%s'", in.StateMachineAliasArn)
	}
	if rs != nil {
		a.Routing = rs
	}
	if in.Description != nil {
		a.Description = *in.Description
	}
	a.Updated = ms(e.clock.Now())
	if err := putItem(ctx, e.store, e.aliasKey(name), a, stored); err != nil {
		return nil, fmt.Errorf("update alias %s: %w", name, err)
	}
	return map[string]any{"updateDate": epochSeconds(fromMS(a.Updated))}, nil
}

func (e *Engine) routingOut(rs []route) []map[string]any {
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = map[string]any{"stateMachineVersionArn": e.VersionArn(r.Version), "weight": r.Weight}
	}
	return out
}

func (e *Engine) describeAlias(ctx context.Context, arn string) (any, error) {
	name, err := e.aliasTarget(arn)
	if err != nil {
		return nil, err
	}
	a, _, err := e.getAlias(ctx, name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, clientError("ResourceNotFound", "Resource Not Found: '%s'", arn)
	}
	out := map[string]any{
		"stateMachineAliasArn": e.AliasArn(a.Name),
		"name":                 a.Name,
		"routingConfiguration": e.routingOut(a.Routing),
		"creationDate":         epochSeconds(fromMS(a.Created)),
		"updateDate":           epochSeconds(fromMS(a.Updated)),
	}
	if a.Description != "" {
		out["description"] = a.Description
	}
	return out, nil
}

// listAliases lists the aliases of the machine, or of one version (those
// routing to it), by name.
func (e *Engine) listAliases(ctx context.Context, in listInput) (any, error) {
	t, err := e.parseTarget(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	if t.alias != "" {
		return nil, clientError("InvalidArn", "Invalid Arn: '%s' is an alias ARN", in.StateMachineArn)
	}
	size, err := pageSize(in.MaxResults)
	if err != nil {
		return nil, err
	}
	after, err := readPageToken("aliases", in.NextToken)
	if err != nil {
		return nil, err
	}
	if t.version != 0 {
		if v, _, err := e.getVersion(ctx, t.version); err != nil || v == nil {
			if err == nil {
				err = clientError("ResourceNotFound", "Resource Not Found: '%s'", in.StateMachineArn)
			}
			return nil, err
		}
	}
	as, err := e.aliases(ctx)
	if err != nil {
		return nil, err
	}
	items := []map[string]any{}
	next := ""
	for _, a := range as {
		if a.Name <= after {
			continue
		}
		routes := t.version == 0
		for _, r := range a.Routing {
			routes = routes || r.Version == t.version
		}
		if !routes {
			continue
		}
		if len(items) == size {
			next = pageToken("aliases", items[len(items)-1]["name"].(string))
			break
		}
		items = append(items, map[string]any{"stateMachineAliasArn": e.AliasArn(a.Name), "creationDate": epochSeconds(fromMS(a.Created)), "name": a.Name})
	}
	for _, it := range items {
		delete(it, "name")
	}
	out := map[string]any{"stateMachineAliases": items}
	if next != "" {
		out["nextToken"] = next
	}
	return out, nil
}

func (e *Engine) deleteAlias(ctx context.Context, arn string) (any, error) {
	name, err := e.aliasTarget(arn)
	if err != nil {
		return nil, err
	}
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	defer e.forgetStarts()
	a, stored, err := e.getAlias(ctx, name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, clientError("ResourceNotFound", "Resource Not Found: '%s'", arn)
	}
	a.Deleted = true
	if err := putItem(ctx, e.store, e.aliasKey(name), a, stored); err != nil {
		return nil, fmt.Errorf("delete alias %s: %w", name, err)
	}
	return struct{}{}, nil
}
