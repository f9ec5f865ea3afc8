package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
)

func main() {
	root := &cobra.Command{
		Use:           "lifecycle",
		Short:         "The OpenProgram action lifecycle: every agent tool call governed, recoverable and auditable",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	clientcmd.AddTo(root)
	root.AddCommand(serveCmd(), mcpCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}
