package sandbox_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openprogram/lifecycle/shared/sandbox"
)

// fixture is a workspace, a hidden directory, a hidden file and an empty
// file under one temporary directory.
type fixture struct {
	root, ws, hiddenDir, hiddenFile, empty, extra string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root := tempOutsideTmp(t)
	f := fixture{root: root, ws: filepath.Join(root, "ws"), hiddenDir: filepath.Join(root, "home", ".ssh"),
		hiddenFile: filepath.Join(root, "home", ".netrc"), empty: filepath.Join(root, "empty"), extra: filepath.Join(root, "extra")}
	for _, d := range []string{f.ws, f.hiddenDir, f.extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{filepath.Join(f.hiddenDir, "id_ed25519"): "PRIVATE KEY", f.hiddenFile: "machine x password y", f.empty: ""} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) view(p sandbox.Profile) sandbox.View {
	return sandbox.View{Profile: p, Workspace: f.ws, Hidden: []string{f.hiddenDir, f.hiddenFile, filepath.Join(f.root, "absent")}, EmptyFile: f.empty}
}

func TestArgs(t *testing.T) {
	f := newFixture(t)
	base := []string{"--die-with-parent", "--new-session", "--unshare-pid"}
	root := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}
	hide := []string{"--tmpfs", f.hiddenDir, "--remount-ro", f.hiddenDir, "--ro-bind", f.empty, f.hiddenFile}
	tail := []string{"--chdir", f.ws, "--"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		profile sandbox.Profile
		want    []string
	}{
		{"default: no network, workspace writable, hidden masked last", sandbox.Default(),
			cat(base, []string{"--unshare-net"}, root, []string{"--bind", f.ws, f.ws}, hide, tail)},
		{"network open keeps the host's network", sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true},
			cat(base, root, []string{"--bind", f.ws, f.ws}, hide, tail)},
		{"extra read-only before, extra writable after the workspace", sandbox.Profile{Mode: sandbox.ModeBwrap, ReadOnly: []string{"/usr/share"}, Writable: []string{f.extra}},
			cat(base, []string{"--unshare-net"}, root, []string{"--ro-bind", "/usr/share", "/usr/share", "--bind", f.ws, f.ws, "--bind", f.extra, f.extra}, hide, tail)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.view(tc.profile).Args()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("args\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		profile sandbox.Profile
		ws      string
		want    string // substring of the error; empty: valid
	}{
		{"default", sandbox.Default(), f.ws, ""},
		{"off", sandbox.Profile{Mode: sandbox.ModeOff}, f.ws, ""},
		{"unknown mode", sandbox.Profile{Mode: "docker"}, f.ws, `mode "docker"`},
		{"relative workspace", sandbox.Default(), "ws", "workspace"},
		{"relative extra", sandbox.Profile{Mode: sandbox.ModeBwrap, ReadOnly: []string{"usr"}}, f.ws, `read_only path "usr"`},
		{"unclean extra", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{f.extra + "/../extra"}}, f.ws, "not an absolute clean path"},
		{"missing extra", sandbox.Profile{Mode: sandbox.ModeBwrap, ReadOnly: []string{filepath.Join(f.root, "nope")}}, f.ws, "no such file"},
		{"writable root", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{"/"}}, f.ws, "everything writable"},
		{"writable contains a hidden path", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{filepath.Join(f.root, "home")}}, f.ws, "overlaps the hidden path"},
		{"writable inside a hidden path", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{f.hiddenDir}}, f.ws, "overlaps the hidden path"},
		{"read-only extra over a hidden path is allowed (masked after)", sandbox.Profile{Mode: sandbox.ModeBwrap, ReadOnly: []string{filepath.Join(f.root, "home")}}, f.ws, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := f.view(tc.profile)
			v.Workspace = tc.ws
			err := v.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	f := newFixture(t)
	v := f.view(sandbox.Profile{Mode: sandbox.ModeBwrap, ReadOnly: []string{"/usr"}, Writable: []string{f.extra}})
	tests := []struct {
		name string
		path string
		want sandbox.Access
	}{
		{"workspace file", filepath.Join(f.ws, "a.txt"), sandbox.AccessWritable},
		{"workspace itself", f.ws, sandbox.AccessWritable},
		{"private temp", "/tmp/x", sandbox.AccessWritable},
		{"writable extra", filepath.Join(f.extra, "out"), sandbox.AccessWritable},
		{"rest of the filesystem", "/etc/passwd", sandbox.AccessReadOnly},
		{"prefix is not a parent", f.ws + "x/a", sandbox.AccessReadOnly},
		{"hidden directory", f.hiddenDir, sandbox.AccessHidden},
		{"inside a hidden directory", filepath.Join(f.hiddenDir, "id_ed25519"), sandbox.AccessHidden},
		{"hidden file", f.hiddenFile, sandbox.AccessHidden},
		{"unclean path into hidden", f.ws + "/../home/.ssh/k", sandbox.AccessHidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := v.Classify(tc.path); got != tc.want {
				t.Fatalf("Classify(%s) = %s, want %s", tc.path, got, tc.want)
			}
		})
	}
}

func TestFindWith(t *testing.T) {
	_, err := sandbox.FindWith(func(string) (string, error) { return "", exec.ErrNotFound })
	if !errors.Is(err, sandbox.ErrNoBubblewrap) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("err = %v, want ErrNoBubblewrap naming apt-get install bubblewrap", err)
	}
}

// TestRun runs real commands in the sandbox: what the view promises is
// what a command finds.
func TestRun(t *testing.T) {
	bwrap, err := sandbox.Find()
	if err != nil {
		t.Skip(err)
	}
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && head -1 <&3"
	tests := []struct {
		name    string
		profile sandbox.Profile
		command string
		wantOK  bool
		want    string // substring of the output
	}{
		{"workspace is writable", sandbox.Default(), "echo hi > out.txt && cat " + f.ws + "/out.txt", true, "hi"},
		{"outside the workspace is read-only", sandbox.Default(), "echo x > " + f.extra + "/x", false, "Read-only file system"},
		{"private tmp is writable and empty of the host's", sandbox.Default(), "echo t > /tmp/t && ls /tmp", true, "t"},
		{"hidden directory is empty", sandbox.Default(), "ls -A " + f.hiddenDir + " | wc -l; cat " + f.hiddenDir + "/id_ed25519", false, "0\n"},
		{"hidden file is empty", sandbox.Default(), "wc -c < " + f.hiddenFile, true, "0"},
		{"hidden directory is read-only", sandbox.Default(), "echo k > " + f.hiddenDir + "/k", false, "Read-only file system"},
		{"host loopback unreachable without network", sandbox.Default(), connect, false, "Connection refused"},
		{"host loopback reachable with network", sandbox.Profile{Mode: sandbox.ModeBwrap, Network: true}, connect, true, "hello from the host"},
		{"own pid namespace", sandbox.Default(), "test $$ -le 2 && echo own", true, "own"},
		{"writable extra", sandbox.Profile{Mode: sandbox.ModeBwrap, Writable: []string{f.extra}}, "echo e > " + f.extra + "/e && cat " + f.extra + "/e", true, "e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := f.view(tc.profile).Args()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bwrap, append(args, "bash", "--noprofile", "--norc", "-c", tc.command)...).CombinedOutput()
			if (err == nil) != tc.wantOK || !strings.Contains(string(out), tc.want) {
				t.Fatalf("err %v, output %q; want ok=%v and %q", err, out, tc.wantOK, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(f.extra, "x")); err == nil {
		t.Fatal("a write outside the workspace reached the host")
	}
	if b, _ := os.ReadFile(filepath.Join(f.hiddenDir, "id_ed25519")); string(b) != "PRIVATE KEY" {
		t.Fatalf("the hidden file changed: %q", b)
	}
}

// tempOutsideTmp is a temporary directory outside /tmp: inside the sandbox
// /tmp is a private tmpfs, so fixtures under it would not be seen at all.
func tempOutsideTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
