package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/infra/stack"
)

// TestAuditAnchorBucket: lifecycle:auditAnchor adds one S3 bucket with
// Object Lock in compliance mode (the configured retention), versioned and
// private, kept on stack deletion; the recover function gets its name and
// may put and get its objects (nothing else of it); without the flag
// there is no such bucket, variable or grant.
func TestAuditAnchorBucket(t *testing.T) {
	find := func(s *synthesized) (string, map[string]any) {
		for id, r := range s.resources("AWS::S3::Bucket") {
			if props(r)["ObjectLockEnabled"] == true {
				return id, r
			}
		}
		return "", nil
	}
	id, res := find(anchored)
	if id == "" {
		t.Fatal("lifecycle:auditAnchor made no Object Lock bucket")
	}
	p := props(res)
	lock := render(p["ObjectLockConfiguration"])
	for _, want := range []string{`"ObjectLockEnabled":"Enabled"`, `"Mode":"COMPLIANCE"`, `"Days":400`} {
		if !strings.Contains(lock, want) {
			t.Errorf("Object Lock configuration %s lacks %s", lock, want)
		}
	}
	if render(p["VersioningConfiguration"]) != `{"Status":"Enabled"}` {
		t.Errorf("versioning %s", render(p["VersioningConfiguration"]))
	}
	if !strings.Contains(render(p["PublicAccessBlockConfiguration"]), `"RestrictPublicBuckets":true`) {
		t.Errorf("public access %s", render(p["PublicAccessBlockConfiguration"]))
	}
	if res["DeletionPolicy"] != "Retain" {
		t.Errorf("deletion policy %v, want Retain", res["DeletionPolicy"])
	}
	recoverID, fn := anchored.function(t, stack.FnRecover)
	vars := props(map[string]any{"Properties": fn["Environment"]})["Variables"].(map[string]any)
	if got := render(vars[stack.EnvAuditAnchorBucket]); got != "{"+id+"}" {
		t.Errorf("recover's %s = %s, want the bucket", stack.EnvAuditAnchorBucket, got)
	}
	objects := "{" + id + ".Arn}/*"
	roleID := fn["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	var granted []string
	for grant := range anchored.grantsOf(t, roleID) {
		if strings.Contains(grant, id) {
			granted = append(granted, grant)
		}
	}
	slices.Sort(granted)
	if want := []string{"s3:GetObject @ " + objects, "s3:PutObject @ " + objects}; !slices.Equal(granted, want) {
		t.Errorf("recover (%s) is granted %v on the anchor bucket, want %v", recoverID, granted, want)
	}
	if _, ok := anchored.raw["Outputs"].(map[string]any)[stack.OutputAuditAnchorBucketName]; !ok {
		t.Error("no output names the anchor bucket")
	}
	both(t, func(t *testing.T, s *synthesized) {
		if id, _ := find(s); id != "" {
			t.Fatalf("an Object Lock bucket %s without lifecycle:auditAnchor", id)
		}
		_, fn := s.function(t, stack.FnRecover)
		if strings.Contains(render(fn["Environment"]), stack.EnvAuditAnchorBucket) {
			t.Fatal("recover names an anchor bucket without lifecycle:auditAnchor")
		}
	})
}

// TestHostHomeReachesTheAPIFunction: lifecycle:hostHome becomes the api
// function's LIFECYCLE_HOST_HOME (and no other function's); without it
// the variable is not set (functions/api then protects credential stores
// by name and the usual home layouts only).
func TestHostHomeReachesTheAPIFunction(t *testing.T) {
	for _, tc := range []struct {
		s    *synthesized
		want any
	}{{variant, variantHostHome}, {defaults, nil}} {
		for _, name := range stack.Functions {
			_, fn := tc.s.function(t, name)
			vars := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
			want := tc.want
			if name != stack.FnAPI {
				want = nil
			}
			if got := vars[stack.EnvHostHome]; got != want {
				t.Errorf("%s stack, %s: %s = %v, want %v", tc.s.name, name, stack.EnvHostHome, got, want)
			}
		}
	}
}
