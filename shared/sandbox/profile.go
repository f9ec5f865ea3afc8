package sandbox

// Modes of a profile.
const (
	// ModeBwrap confines the tool with bubblewrap (the default).
	ModeBwrap = "bwrap"
	// ModeOff runs the tool unconfined; only an explicit policy chooses it.
	ModeOff = "off"
)

// Profile is the sandbox a host tool call runs in. It is part of the
// permission decision (the policy chooses it) and of the receipt (the
// profile that actually ran).
type Profile struct {
	// Mode is ModeBwrap or ModeOff.
	Mode string `json:"mode"`
	// Network: the tool may reach the network (its own network namespace
	// otherwise, with only a loopback of its own).
	Network bool `json:"network"`
	// ReadOnly are extra paths visible read-only (absolute, cleaned).
	ReadOnly []string `json:"read_only,omitempty"`
	// Writable are extra paths visible writable (absolute, cleaned).
	Writable []string `json:"writable,omitempty"`
}

// Default is the profile of a call no rule or relaxation changes:
// confined, no network, no extra paths.
func Default() Profile { return Profile{Mode: ModeBwrap} }
