package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gowebpki/jcs"
)

// HandlerContract is the handler contract the code in this build declares:
// the shapes of checkpoints, cursors and step inputs its handlers read and
// write. Bump it only when one of those shapes changes, and say in
// HandlerResumes which earlier contracts the new handlers still resume.
const HandlerContract = 1

// LiveAlias is the name of the state machine alias new actions start on:
// every deployment points it at the version of the revision it deploys.
const LiveAlias = "live"

// HandlerResumes lists the handler contracts whose checkpoints and cursors
// the handlers of this build can resume (HandlerContract among them).
var HandlerResumes = []int{1}

// Revision is the identity of what runs an action.
type Revision struct {
	// ID is "rev-" + the first 12 hex digits of
	// sha256(ASLDigest + "\n" + strconv.Itoa(Contract)).
	ID string `json:"id"`
	// ASLDigest is "sha256:" + the hex SHA-256 of the RFC 8785 (JCS)
	// canonical ASL, placeholders not substituted.
	ASLDigest string `json:"asl_digest"`
	// Contract is the handler contract the handlers declare.
	Contract int `json:"contract"`
	// Resumes lists the contracts whose checkpoints and cursors this
	// revision can resume, ascending, Contract included.
	Resumes []int `json:"resumes"`
}

// Of computes the revision of an ASL definition (as written, with its
// placeholders) run by handlers declaring contract, which resume the
// contracts listed (contract itself is added when missing).
func Of(asl []byte, contract int, resumes []int) (Revision, error) {
	if contract < 1 {
		return Revision{}, fmt.Errorf("revision: handler contract must be 1 or more, got %d", contract)
	}
	for _, c := range resumes {
		if c < 1 {
			return Revision{}, fmt.Errorf("revision: resumable handler contract must be 1 or more, got %d", c)
		}
	}
	if len(asl) == 0 {
		return Revision{}, errors.New("revision: the state machine definition is empty")
	}
	canon, err := jcs.Transform(asl)
	if err != nil {
		return Revision{}, fmt.Errorf("revision: canonicalize the state machine definition (RFC 8785): %w", err)
	}
	sum := sha256.Sum256(canon)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	rs := append([]int{contract}, resumes...)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	return Revision{ID: idOf(digest, contract), ASLDigest: digest, Contract: contract, Resumes: rs}, nil
}

func idOf(aslDigest string, contract int) string {
	sum := sha256.Sum256([]byte(aslDigest + "\n" + strconv.Itoa(contract)))
	return "rev-" + hex.EncodeToString(sum[:])[:12]
}

// Validate checks that r is a revision Of could have returned: its ID
// matches its digest and contract, and it resumes its own contract.
func (r Revision) Validate() error {
	if r.Contract < 1 {
		return fmt.Errorf("revision %q: handler contract must be 1 or more, got %d", r.ID, r.Contract)
	}
	if want := idOf(r.ASLDigest, r.Contract); r.ID != want {
		return fmt.Errorf("revision %q: the id does not match its ASL digest and contract (want %q)", r.ID, want)
	}
	if !slices.Contains(r.Resumes, r.Contract) {
		return fmt.Errorf("revision %q: resumes %v does not include its own contract %d", r.ID, r.Resumes, r.Contract)
	}
	return nil
}

// CanResume says whether an execution that started on (or last adopted)
// started may continue on r. The same revision always may. Another one may
// when r resumes started's handler contract: the checkpoints and cursors
// are in a shape r's handlers read. When it may not, differences says why,
// one sentence each, naming both revisions.
func (r Revision) CanResume(started Revision) (ok bool, differences []string) {
	if started.ID == "" {
		return false, []string{"the execution records no revision, so nothing shows which code wrote its checkpoint"}
	}
	if started.ID == r.ID {
		return true, nil
	}
	if slices.Contains(r.Resumes, started.Contract) {
		return true, nil
	}
	differences = append(differences, fmt.Sprintf(
		"handler contract changed from %d (revision %s) to %d (revision %s), which resumes only contracts %s",
		started.Contract, started.ID, r.Contract, r.ID, listInts(r.Resumes)))
	if started.ASLDigest != r.ASLDigest {
		differences = append(differences, fmt.Sprintf(
			"the state machine definition changed from %s to %s", short(started.ASLDigest), short(r.ASLDigest)))
	}
	return false, differences
}

func listInts(xs []int) string {
	if len(xs) == 0 {
		return "(none)"
	}
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(x)
	}
	return s
}

// short shortens "sha256:<64 hex>" to its first 12 hex digits for messages.
func short(digest string) string {
	if len(digest) > len("sha256:")+12 {
		return digest[:len("sha256:")+12]
	}
	return digest
}
