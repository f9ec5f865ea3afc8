package permission

import "fmt"

// Mode is the permission mode of a policy, with the meanings users know
// from agent CLIs (Claude Code's permission modes). A mode never weakens a
// hard constraint, an owner restriction, an explicit deny or an ask rule,
// and never allows Bash input that cannot be analysed (see Decide).
type Mode string

const (
	// ModeDefault: rules decide; read-only file tools (Read, Glob, Grep,
	// LS, NotebookRead) are allowed inside the project scope; everything
	// else that no rule allows is asked (interactive) or denied
	// (noninteractive).
	ModeDefault Mode = "default"
	// ModePlan: analysis only. Every call that is not read-only is denied
	// (Bash only when the analysis proves every command read-only and no
	// redirection writes a file). Read-only calls then follow the default
	// rules. Plan is a restriction: no allow rule or grant lifts it.
	ModePlan Mode = "plan"
	// ModeAcceptEdits: like default, and file edits (Edit, MultiEdit,
	// Write, NotebookEdit) inside the project scope are allowed without
	// asking. Bash still needs a rule or an approval.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModeAuto: like default, but a call no rule decides is reviewed by the
	// Classifier instead of asked: its allow verdict allows, its block
	// verdict denies (and counts towards the refusal fallback), its
	// unproven verdict asks (denies when noninteractive) and counts
	// nothing. Read-only file tools inside the project scope are allowed
	// without review.
	ModeAuto Mode = "auto"
	// ModeDontAsk: like default, but nothing is ever asked: every call that
	// no rule, grant or read-only default allows is denied, ask rules
	// included.
	ModeDontAsk Mode = "dontAsk"
	// ModeBypass (bypassPermissions): every call not stopped by a hard
	// constraint, restriction, deny rule or ask rule is allowed without a
	// prompt. Bash input that cannot be analysed (unparseable, oversized,
	// opaque) is still asked or denied, never allowed.
	ModeBypass Mode = "bypassPermissions"
)

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeDefault, ModePlan, ModeAcceptEdits, ModeAuto, ModeDontAsk, ModeBypass:
		return true
	}
	return false
}

// ParseMode reads a mode name. The empty string is ModeDefault and "bypass"
// is accepted for ModeBypass; anything else unknown is an error.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "":
		return ModeDefault, nil
	case "bypass":
		return ModeBypass, nil
	}
	m := Mode(s)
	if !m.Valid() {
		return "", fmt.Errorf("unknown mode %q (want default, plan, acceptEdits, auto, dontAsk or bypassPermissions)", s)
	}
	return m, nil
}
