package permission_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/permission/riskreview"
)

func approve(d permission.Decision) permission.ApprovalEvidence {
	return permission.ApprovalEvidence{ApprovalID: ids.NewApprovalID(), ActionID: d.ActionID, ArgsDigest: d.ArgsDigest,
		PolicyVersion: d.PolicyVersion, Status: permission.ApprovalApproved, DecidedBy: "user:alice"}
}

func TestRevalidate(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	base := policy(t, "v1", permission.ModeDefault, "ask: Bash(git push *)", "allow: Bash(make *)")
	cases := []struct {
		name     string
		cmd      string
		change   func(d permission.Decision, ev *permission.ApprovalEvidence, req *permission.Request)
		want     string // "allow" or a denial code
		wantFrom permission.Source
	}{
		{name: "allowed call revalidates", cmd: "make build", want: "allow", wantFrom: permission.SourceAllowRule},
		{name: "approved ask revalidates", cmd: "git push origin feature", want: "allow", wantFrom: permission.SourceApproval},
		{name: "policy version changed during review", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Policy = policy(t, "v2", permission.ModeDefault, "ask: Bash(git push *)", "allow: Bash(make *)")
			}, want: string(permission.CodePolicyVersionChanged)},
		{name: "mode changed under the same version", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Policy = policy(t, "v1", permission.ModePlan, "ask: Bash(git push *)", "allow: Bash(make *)")
			}, want: string(permission.CodePolicyChanged)},
		{name: "rule revoked under the same version", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Policy = policy(t, "v1", permission.ModeDefault, "ask: Bash(git push *)", "deny: Bash(make *)")
			}, want: string(permission.CodePolicyChanged)},
		{name: "modified command under the same action", cmd: "git push origin feature",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Call.Args = args("command", "git push --force origin main")
			}, want: string(permission.CodeArgsChanged)},
		{name: "description change keeps the digest", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Call.Args = args("command", "make build", "description", "a different story")
			}, want: "allow"},
		{name: "approval for another digest", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) {
				ev.ArgsDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
			}, want: string(permission.CodeApprovalMismatch)},
		{name: "approval for another action", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) {
				ev.ActionID = "act_other"
			},
			want: string(permission.CodeApprovalMismatch)},
		{name: "approval under another policy version", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) {
				ev.PolicyVersion = "v0"
			},
			want: string(permission.CodeApprovalMismatch)},
		{name: "approval without a decider", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) { ev.DecidedBy = "" },
			want:   string(permission.CodeApprovalMismatch)},
		{name: "declined approval", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) {
				ev.Status = permission.ApprovalDeclined
			}, want: string(permission.CodeNotApproved)},
		{name: "expired approval", cmd: "git push origin feature",
			change: func(_ permission.Decision, ev *permission.ApprovalEvidence, _ *permission.Request) {
				ev.Status = permission.ApprovalExpired
			}, want: string(permission.CodeNotApproved)},
		{name: "working directory changed", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Trusted.WorkingDir = "/work/other"
			}, want: string(permission.CodeContextChanged)},
		{name: "new owner message does not invalidate", cmd: "make build",
			change: func(_ permission.Decision, _ *permission.ApprovalEvidence, r *permission.Request) {
				r.Trusted.OwnerRequest = "also update the docs"
			}, want: "allow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call := bashCall(tc.cmd)
			req := permission.Request{Trusted: trusted(true), Call: call, Policy: base}
			d, err := e.Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var ev permission.ApprovalEvidence
			if d.Permission == ask {
				ev = approve(d)
			}
			if tc.change != nil {
				tc.change(d, &ev, &req)
			}
			r, err := e.Revalidate(ctx, d, ev, req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "allow" {
				if r.Permission != allow || (tc.wantFrom != "" && r.Reason.Source != tc.wantFrom) {
					t.Fatalf("revalidation %s, reason %+v", r.Permission, r.Reason)
				}
				if _, err := r.Authorization(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if r.Permission != deny || string(r.Reason.Code) != tc.want {
				t.Fatalf("revalidation %s %s, want deny %s; reason %+v", r.Permission, r.Reason.Code, tc.want, r.Reason)
			}
			if r.Permission == ask {
				t.Fatal("revalidation asked")
			}
		})
	}
}

// A denial is never revalidated into an allow, and a grant for one
// operation never covers a modified one.
func TestRevalidateNeverWidens(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	p := policy(t, "v1", permission.ModeDefault, "deny: Bash(rm *)")
	call := bashCall("rm -rf build")
	req := permission.Request{Trusted: trusted(true), Call: call, Policy: p}
	d, err := e.Decide(ctx, req)
	if err != nil || d.Permission != deny {
		t.Fatalf("%+v %v", d, err)
	}
	forged := d
	forged.Permission = ask
	r, err := e.Revalidate(ctx, forged, approve(forged), req)
	if err != nil || r.Permission != deny || r.Reason.Source != permission.SourceDenyRule {
		t.Fatalf("a forged ask over a deny rule revalidated to %+v, %v", r, err)
	}

	granted := bashCall("npm publish --tag next")
	pg := policy(t, "v1", permission.ModeDefault)
	pg.Grants = []permission.Grant{{Tool: "Bash", ArgsDigest: digestOf(t, granted), PolicyVersion: "v1"}}
	modified := granted
	modified.Args = args("command", "npm publish --tag latest")
	dm, err := e.Decide(ctx, permission.Request{Trusted: trusted(true), Call: modified, Policy: pg})
	if err != nil || dm.Permission == allow {
		t.Fatalf("a grant authorized a modified command: %+v %v", dm, err)
	}
}

// A classifier allow is revalidated without asking the classifier again.
func TestRevalidateClassifierAllow(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	c := permission.ClassifierFunc(func(ctx context.Context, in permission.ReviewInput) (permission.Verdict, error) {
		calls.Add(1)
		return riskreview.New().Review(ctx, in)
	})
	e := autoEngine(t, openStore(t), c)
	req := permission.Request{Trusted: trusted(true), Call: bashCall("go build ./..."), Policy: policy(t, "v1", permission.ModeAuto)}
	d, err := e.Decide(ctx, req)
	if err != nil || d.Permission != allow || d.Reason.Source != permission.SourceClassifier {
		t.Fatalf("%+v %v", d, err)
	}
	r, err := e.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
	if err != nil || r.Permission != allow || r.Reason.Code != permission.CodeClassifierAllow || calls.Load() != 1 {
		t.Fatalf("revalidate: %+v %v (classifier calls %d)", r, err, calls.Load())
	}
	// A switch out of auto mode during review invalidates it.
	req.Policy = policy(t, "v1", permission.ModeDefault)
	r, err = e.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
	if err != nil || r.Permission != deny || r.Reason.Code != permission.CodePolicyChanged {
		t.Fatalf("mode change: %+v %v", r, err)
	}
}

// File edits carry a content precondition captured at decision time.
func TestRevalidateFilePreconditions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := permission.NewEngine(permission.Config{FS: permission.OSFS{}})
	if err != nil {
		t.Fatal(err)
	}
	tr := trusted(true)
	tr.WorkingDir, tr.ProjectRoot = dir, dir
	p := policy(t, "v1", permission.ModeAcceptEdits)
	cases := []struct {
		name   string
		tool   string
		path   string
		modify func()
		want   string
	}{
		{"unchanged file", "Edit", "main.go", func() {}, "allow"},
		{"file changed after the decision", "Edit", "main.go", func() { os.WriteFile(file, []byte("package other\n"), 0o644) }, string(permission.CodePreconditionChanged)},
		{"new file created meanwhile", "Write", "new.go", func() { os.WriteFile(filepath.Join(dir, "new.go"), []byte("x"), 0o644) }, string(permission.CodePreconditionChanged)},
		{"new file still absent", "Write", "other.go", func() {}, "allow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call := toolCall(tc.tool, "file_path", tc.path, "content", "x", "old_string", "a", "new_string", "b")
			req := permission.Request{Trusted: tr, Call: call, Policy: p}
			d, err := e.Decide(ctx, req)
			if err != nil || d.Permission != allow || len(d.Preconditions) != 1 {
				t.Fatalf("%+v %v", d, err)
			}
			tc.modify()
			r, err := e.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
			if err != nil {
				t.Fatal(err)
			}
			got := string(r.Permission)
			if r.Permission == deny {
				got = string(r.Reason.Code)
			}
			if got != tc.want {
				t.Fatalf("revalidation %s, want %s; %+v", got, tc.want, r.Reason)
			}
			if tc.want == "allow" && permission.CheckPreconditions(permission.OSFS{}, r.Preconditions) != nil {
				t.Error("the host's own check disagrees")
			}
		})
	}
	// Without a file system the preconditions cannot be verified: deny.
	plain := newEngine(t)
	call := toolCall("Edit", "file_path", "main.go", "old_string", "a", "new_string", "b")
	req := permission.Request{Trusted: tr, Call: call, Policy: p}
	d, _ := e.Decide(ctx, req)
	r, err := plain.Revalidate(ctx, d, permission.ApprovalEvidence{}, req)
	if err != nil || r.Permission != deny || r.Reason.Code != permission.CodePreconditionUnverified {
		t.Fatalf("%+v %v", r, err)
	}
}
