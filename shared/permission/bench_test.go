package permission_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission"
)

// BenchmarkDecide measures one decision (no classifier, no store) against a
// policy of 20 rules.
//
//	go test -run '^$' -bench Decide -benchmem ./shared/permission/
func BenchmarkDecide(b *testing.B) {
	p := policy(b, "v1", permission.ModeDefault,
		"hardConstraints: Bash(rm -rf /*)", "hardConstraints: Edit(/etc/**)",
		"deny: Bash(git push --force *)", "deny: Bash(curl *)", "deny: Bash(wget *)", "deny: Read(./secrets/**)",
		"deny: Read(~/.ssh/**)", "deny: Read(~/.aws/**)", "deny: WebFetch(domain:evil.example)",
		"ask: Bash(git push *)", "ask: Bash(npm publish *)", "ask: Edit(./.github/**)",
		"allow: Bash(npm run test:*)", "allow: Bash(npm run lint:*)", "allow: Bash(go test *)", "allow: Bash(go vet *)",
		"allow: Bash(git status)", "allow: Bash(git diff *)", "allow: Bash(echo *)", "allow: WebFetch(domain:pkg.go.dev)")
	e := newEngine(b)
	cases := []struct {
		name string
		call permission.Call
	}{
		{"bash short", bashCall("npm run test -- --watch=false && git diff --stat")},
		{"bash 50KB", bashCall(strings.Repeat("echo this line is benign and boring; ", 50*1024/37) + "git status")},
		{"read", toolCall("Read", "file_path", "src/main.go")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := permission.Request{Trusted: trusted(true), Call: tc.call, Policy: p}
			for b.Loop() {
				if _, err := e.Decide(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
