package permission_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/identity"
	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/permission"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

const (
	root = "/work/proj"
	home = "/home/dev"
	// state is the service's state directory next to the project (the
	// layout of issue 21: "cat ../.lifecycle/auth.key").
	state = "/work/.lifecycle"
)

// policy builds a policy document from a mode and "list: rule" lines.
func policy(t testing.TB, version string, mode permission.Mode, lines ...string) *permission.Policy {
	t.Helper()
	lists := map[string][]string{}
	for _, l := range lines {
		list, rule, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("policy line %q is not \"list: rule\"", l)
		}
		lists[list] = append(lists[list], rule)
	}
	doc := map[string]any{"version": version, "mode": mode}
	for k, v := range lists {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := permission.ParsePolicy(b)
	if err != nil {
		t.Fatalf("policy %s: %v", b, err)
	}
	return p
}

func trusted(interactive bool) permission.Trusted {
	return permission.Trusted{
		SessionID: "ses_test", WorkingDir: root, ProjectRoot: root, HomeDir: home,
		OwnerRequest: "fix the failing unit test", Interactive: interactive,
	}
}

var actionSeq int

func newAction() ids.ActionID {
	actionSeq++
	return ids.ActionID(fmt.Sprintf("act_%04d", actionSeq))
}

func args(kv ...string) json.RawMessage {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

func bashCall(cmd string) permission.Call {
	return permission.Call{ActionID: newAction(), Tool: "Bash", Args: args("command", cmd, "description", "run it")}
}

func toolCall(tool string, kv ...string) permission.Call {
	return permission.Call{ActionID: newAction(), Tool: tool, Args: args(kv...)}
}

func digestOf(t testing.TB, c permission.Call) string {
	t.Helper()
	id, err := identity.Of(c.Tool, c.Args)
	if err != nil {
		t.Fatal(err)
	}
	return id.Digest
}

func openStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
