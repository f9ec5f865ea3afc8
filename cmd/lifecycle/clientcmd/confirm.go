package clientcmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// openTerminal opens the controlling terminal for a confirmation (tests
// replace it).
var openTerminal = func() (io.ReadWriteCloser, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }

// ErrNoTerminal: a human or admin token was asked for without a terminal
// to confirm it on.
var ErrNoTerminal = errors.New("no terminal to confirm on")

// confirmPrivileged asks the person at the controlling terminal to confirm
// minting a token that can approve actions and change the policy. The
// question and the answer go through /dev/tty, never stdin or stdout: a
// program that runs this command with piped input (an agent's Bash tool,
// which has no controlling terminal) cannot answer it, and
// `--token $(lifecycle token --role human ...)` still works in a terminal.
func confirmPrivileged(role, session string) error {
	tty, err := openTerminal()
	if err != nil {
		return fmt.Errorf("a %s token can approve actions and change the session's policy, so minting one needs a confirmation on your terminal: %w (%v); run it in your own terminal, or use the human token `lifecycle serve` prints when it starts", role, ErrNoTerminal, err)
	}
	defer tty.Close()
	if f, ok := tty.(*os.File); ok {
		if err := inForeground(f); err != nil {
			return fmt.Errorf("a %s token needs a confirmation on your terminal: %w", role, err)
		}
	}
	scope := "session " + session
	if session == "" {
		scope = "every session"
	}
	fmt.Fprintf(tty, "Mint a %s token for %s? It can approve actions and change the policy. Type yes to confirm: ", role, scope)
	line, err := bufio.NewReader(tty).ReadString('\n')
	if err != nil && line == "" {
		return fmt.Errorf("no confirmation read from the terminal: %w", err)
	}
	if strings.TrimSpace(strings.ToLower(line)) != "yes" {
		return fmt.Errorf("not confirmed: no %s token was issued", role)
	}
	return nil
}
