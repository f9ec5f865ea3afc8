package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/openprogram/lifecycle/cmd/lifecycle/clientcmd"
	"github.com/openprogram/lifecycle/shared/mcpgateway"
)

func mcpCmd() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP over stdio for agent clients that launch a command, bridged to a running serve's /mcp",
		Long: `mcp serves the Model Context Protocol on stdin/stdout for an agent client that launches
its MCP servers as commands, and relays every message, unchanged, to the /mcp endpoint of a
running lifecycle serve (--url, default <--api>/mcp) with the agent's token (--token or
LIFECYCLE_TOKEN). The tools, rules, approvals and receipts are serve's; this process decides
nothing. Example client configuration:

  command: lifecycle   args: ["mcp"]   env: {"LIFECYCLE_TOKEN": "<agent token>"}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token := flagValue(cmd, "token")
			if token == "" {
				token = os.Getenv("LIFECYCLE_TOKEN")
			}
			if url == "" {
				api := flagValue(cmd, "api")
				if api == "" {
					api = clientcmd.DefaultAPI
				}
				url = strings.TrimRight(api, "/") + mcpgateway.Path
			}
			// stdout carries the protocol: logs go to stderr only.
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			return mcpgateway.Bridge(cmd.Context(), &mcp.StdioTransport{}, mcpgateway.BridgeConfig{URL: url, Token: token, Logger: log})
		},
	}
	cmd.Flags().StringVar(&url, "url", os.Getenv("LIFECYCLE_MCP_URL"), "the gateway's endpoint (env LIFECYCLE_MCP_URL; default <--api>/mcp)")
	return cmd
}

// flagValue reads a flag the root command defines for every command.
func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	if f := cmd.InheritedFlags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
