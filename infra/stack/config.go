package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Context keys read by FromContext. They are set in cdk.json (the defaults a
// fresh checkout deploys with) and overridden per deploy with
// `cdk deploy -c lifecycle:deletionProtection=false`.
const (
	CtxAssetDir            = "lifecycle:assetDir"
	CtxDefinitionFile      = "lifecycle:definitionFile"
	CtxStackName           = "lifecycle:stackName"
	CtxJWTIssuer           = "lifecycle:jwtIssuer"
	CtxJWTAudience         = "lifecycle:jwtAudience"
	CtxReviewer            = "lifecycle:reviewer"
	CtxBedrockModelID      = "lifecycle:bedrockModelId"
	CtxToolFunctionARNs    = "lifecycle:toolFunctionArns"
	CtxDeletionProtection  = "lifecycle:deletionProtection"
	CtxReservedConcurrency = "lifecycle:reservedConcurrency"
	CtxLogLevel            = "lifecycle:logLevel"
	CtxBlobRetentionDays   = "lifecycle:blobRetentionDays"
	CtxAlarmTopicARN       = "lifecycle:alarmTopicArn"
	CtxAPIRateLimit        = "lifecycle:apiRateLimit"
	CtxAPIBurstLimit       = "lifecycle:apiBurstLimit"
	CtxArchitecture        = "lifecycle:architecture"
	// CtxAuditAnchor creates an S3 bucket with Object Lock (compliance
	// mode) to which the recover function's scheduled run writes the
	// decision log heads of the sessions that changed (shared/audit).
	CtxAuditAnchor              = "lifecycle:auditAnchor"
	CtxAuditAnchorRetentionDays = "lifecycle:auditAnchorRetentionDays"
	// CtxHostHome is the home directory of the user the host workers
	// (`lifecycle host`) run as; the api function then refuses a policy
	// whose sandbox opens a credential store under it (functions/api).
	CtxHostHome = "lifecycle:hostHome"
)

// EnvAssetDir names the directory holding <function>.zip when the context
// key is not set; tests and `make synth` use it.
const EnvAssetDir = "LIFECYCLE_ASSET_DIR"

// Lambda architectures (lifecycle:architecture). arm64 is what AWS runs;
// x86_64 exists for emulators on x86 hosts that cannot run arm64 images
// (see localstack/README.md). The zips must be built to match
// (LIFECYCLE_GOARCH=amd64 make build).
const (
	ArchARM64  = "arm64"
	ArchX86_64 = "x86_64"
)

// Reviewer values for LIFECYCLE_REVIEWER.
const (
	ReviewerBuiltin = "builtin"
	ReviewerBedrock = "bedrock"
)

// Config is everything the stack is parameterized by. It is plain data so the
// parsing and the validation are tested without starting jsii.
type Config struct {
	// AssetDir holds one <name>.zip per function (output of `make build`).
	// Relative paths here and in DefinitionFile are relative to the
	// repository root, the directory of cdk.json (see ResolvePaths).
	AssetDir string
	// DefinitionFile is the ASL file: statemachines/action-lifecycle.asl.json.
	DefinitionFile string
	// JWTIssuer and JWTAudience become the defaults of the JwtIssuer and
	// JwtAudience stack parameters; empty means "no default, pass
	// --parameters at deploy time". Audience is comma-separated.
	JWTIssuer   string
	JWTAudience string
	// Reviewer selects the automatic reviewer of the authorize function.
	Reviewer string
	// BedrockModelID is a foundation-model id (not an inference profile),
	// required when Reviewer is bedrock; the IAM grant names exactly it.
	BedrockModelID string
	// ToolFunctionARNs are the tool Lambdas dispatch may invoke.
	ToolFunctionARNs []string
	// DeletionProtection keeps the table, bucket and log groups on stack
	// deletion (log groups otherwise expire after a month) and turns DynamoDB deletion protection on. Turn it off only
	// for throwaway dev stacks.
	DeletionProtection bool
	// ReservedConcurrency reserves per-function concurrency (162 in total).
	// Accounts whose concurrency limit is below 262 (new accounts may start
	// at 10) cannot deploy with it; turn it off there.
	ReservedConcurrency bool
	// LogLevel is LIFECYCLE_LOG_LEVEL and the Lambda application log level.
	LogLevel string
	// BlobRetentionDays expires result blobs; receipts keep the digest.
	BlobRetentionDays int
	// AlarmTopicARN, when set, receives every alarm's ALARM notification.
	AlarmTopicARN string
	// APIRateLimit and APIBurstLimit throttle the HTTP API's default route.
	APIRateLimit  float64
	APIBurstLimit float64
	// Architecture of every function: ArchARM64 or ArchX86_64.
	Architecture string
	// AuditAnchor creates the Object Lock bucket of decision log anchors
	// and lets the recover function write to it (off by default: the
	// retention cannot be shortened or the objects deleted, by anyone).
	AuditAnchor bool
	// AuditAnchorRetentionDays is the bucket's default retention
	// (compliance mode) of every anchor.
	AuditAnchorRetentionDays int
	// HostHome (optional) becomes the api function's LIFECYCLE_HOST_HOME:
	// an absolute, clean path.
	HostHome string
}

// DefaultConfig is what a deploy gets without any context.
func DefaultConfig() Config {
	return Config{
		AssetDir:            "build",
		DefinitionFile:      "statemachines/action-lifecycle.asl.json",
		Reviewer:            ReviewerBuiltin,
		DeletionProtection:  true,
		ReservedConcurrency: true,
		LogLevel:            "info",
		BlobRetentionDays:   90,
		APIRateLimit:        50,
		APIBurstLimit:       100,
		Architecture:        ArchARM64,

		AuditAnchorRetentionDays: 365,
	}
}

// FromContext overlays context values (from cdk.json or -c; strings from the
// command line, typed JSON from cdk.json) on DefaultConfig. The asset
// directory falls back to $LIFECYCLE_ASSET_DIR before the default.
func FromContext(lookup func(key string) any) (Config, error) {
	c := DefaultConfig()
	if dir := os.Getenv(EnvAssetDir); dir != "" {
		c.AssetDir = dir
	}
	var errs []string
	str := func(key string, dst *string) {
		if v := lookup(key); v != nil {
			*dst = strings.TrimSpace(fmt.Sprint(v))
		}
	}
	boolean := func(key string, dst *bool) {
		v := lookup(key)
		if v == nil {
			return
		}
		switch b := v.(type) {
		case bool:
			*dst = b
		default:
			parsed, err := strconv.ParseBool(strings.TrimSpace(fmt.Sprint(v)))
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: want true or false, got %q", key, fmt.Sprint(v)))
				return
			}
			*dst = parsed
		}
	}
	number := func(key string, dst *float64) {
		v := lookup(key)
		if v == nil {
			return
		}
		switch n := v.(type) {
		case float64:
			*dst = n
		default:
			parsed, err := strconv.ParseFloat(strings.TrimSpace(fmt.Sprint(v)), 64)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: want a number, got %q", key, fmt.Sprint(v)))
				return
			}
			*dst = parsed
		}
	}
	integer := func(key string, dst *int) {
		f := float64(*dst)
		number(key, &f)
		*dst = int(f)
	}
	str(CtxAssetDir, &c.AssetDir)
	str(CtxDefinitionFile, &c.DefinitionFile)
	str(CtxJWTIssuer, &c.JWTIssuer)
	str(CtxJWTAudience, &c.JWTAudience)
	str(CtxReviewer, &c.Reviewer)
	str(CtxBedrockModelID, &c.BedrockModelID)
	str(CtxLogLevel, &c.LogLevel)
	str(CtxAlarmTopicARN, &c.AlarmTopicARN)
	str(CtxArchitecture, &c.Architecture)
	str(CtxHostHome, &c.HostHome)
	if v := lookup(CtxToolFunctionARNs); v != nil {
		c.ToolFunctionARNs = splitList(v)
	}
	boolean(CtxDeletionProtection, &c.DeletionProtection)
	boolean(CtxReservedConcurrency, &c.ReservedConcurrency)
	boolean(CtxAuditAnchor, &c.AuditAnchor)
	integer(CtxAuditAnchorRetentionDays, &c.AuditAnchorRetentionDays)
	integer(CtxBlobRetentionDays, &c.BlobRetentionDays)
	number(CtxAPIRateLimit, &c.APIRateLimit)
	number(CtxAPIBurstLimit, &c.APIBurstLimit)
	if len(errs) > 0 {
		return c, fmt.Errorf("lifecycle context: %s", strings.Join(errs, "; "))
	}
	return c, c.Validate()
}

// splitList accepts a comma-separated string or a JSON array from cdk.json.
func splitList(v any) []string {
	var parts []string
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			parts = append(parts, fmt.Sprint(e))
		}
	default:
		parts = strings.Split(fmt.Sprint(v), ",")
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var (
	// A Lambda function ARN, unqualified: the grant adds ":*" for versions
	// and aliases itself, so a qualified ARN here would be a mistake.
	lambdaFunctionARN = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]+$`)
	// Foundation-model ids look like "anthropic.claude-3-haiku-20240307-v1:0";
	// an inference profile id ("us.anthropic...") needs different ARNs and is
	// refused rather than granted loosely.
	bedrockModelID = regexp.MustCompile(`^[a-z0-9-]+\.[A-Za-z0-9._:-]+$`)
	// Log levels the functions' slog handler and Lambda both understand.
	logLevels = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}
)

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []string
	if c.AssetDir == "" {
		errs = append(errs, "asset directory is empty")
	}
	if c.DefinitionFile == "" {
		errs = append(errs, "definition file is empty")
	}
	switch c.Reviewer {
	case ReviewerBuiltin:
		if c.BedrockModelID != "" {
			errs = append(errs, fmt.Sprintf("%s is set but %s is %q: set the reviewer to bedrock or drop the model", CtxBedrockModelID, CtxReviewer, c.Reviewer))
		}
	case ReviewerBedrock:
		if c.BedrockModelID == "" {
			errs = append(errs, fmt.Sprintf("%s=bedrock needs %s (a foundation-model id)", CtxReviewer, CtxBedrockModelID))
		} else if !bedrockModelID.MatchString(c.BedrockModelID) || isInferenceProfile(c.BedrockModelID) {
			errs = append(errs, fmt.Sprintf("%s %q is not a foundation-model id (inference profiles are not supported)", CtxBedrockModelID, c.BedrockModelID))
		}
	default:
		errs = append(errs, fmt.Sprintf("%s: want %q or %q, got %q", CtxReviewer, ReviewerBuiltin, ReviewerBedrock, c.Reviewer))
	}
	for _, arn := range c.ToolFunctionARNs {
		if !lambdaFunctionARN.MatchString(arn) {
			errs = append(errs, fmt.Sprintf("%s: %q is not an unqualified Lambda function ARN", CtxToolFunctionARNs, arn))
		}
	}
	if !logLevels[c.LogLevel] {
		errs = append(errs, fmt.Sprintf("%s: want debug, info, warn or error, got %q", CtxLogLevel, c.LogLevel))
	}
	if c.BlobRetentionDays <= 0 {
		errs = append(errs, fmt.Sprintf("%s must be positive", CtxBlobRetentionDays))
	}
	if c.APIRateLimit <= 0 || c.APIBurstLimit <= 0 {
		errs = append(errs, fmt.Sprintf("%s and %s must be positive", CtxAPIRateLimit, CtxAPIBurstLimit))
	}
	if c.Architecture != ArchARM64 && c.Architecture != ArchX86_64 {
		errs = append(errs, fmt.Sprintf("%s: want %q or %q, got %q", CtxArchitecture, ArchARM64, ArchX86_64, c.Architecture))
	}
	if c.AuditAnchor && (c.AuditAnchorRetentionDays < 1 || c.AuditAnchorRetentionDays > 36500) {
		errs = append(errs, fmt.Sprintf("%s must be 1 to 36500 days, not %d", CtxAuditAnchorRetentionDays, c.AuditAnchorRetentionDays))
	}
	if c.HostHome != "" && (!filepath.IsAbs(c.HostHome) || filepath.Clean(c.HostHome) != c.HostHome || c.HostHome == "/") {
		errs = append(errs, fmt.Sprintf("%s: %q is not an absolute, clean home directory", CtxHostHome, c.HostHome))
	}
	if c.AlarmTopicARN != "" && !strings.HasPrefix(c.AlarmTopicARN, "arn:") {
		errs = append(errs, fmt.Sprintf("%s: %q is not an ARN", CtxAlarmTopicARN, c.AlarmTopicARN))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid lifecycle stack config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// isInferenceProfile recognizes the cross-region profile prefixes.
func isInferenceProfile(id string) bool {
	for _, p := range []string{"us.", "eu.", "apac.", "us-gov.", "global."} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// ResolvePaths makes AssetDir and DefinitionFile absolute against root (the
// repository root), so a path means the same whether the app runs under the
// CDK CLI (from the root) or as `go run .` in infra/.
func (c Config) ResolvePaths(root string) Config {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	c.AssetDir = abs(c.AssetDir)
	c.DefinitionFile = abs(c.DefinitionFile)
	return c
}
