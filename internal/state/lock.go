package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/quote"
)

// Info describes a lock and its holder. The JSON names are OpenTofu's LockInfo names, so an
// HTTP backend server (GitLab, or any of that protocol) stores and returns it as it does
// OpenTofu's; PID is slipway's own addition.
type Info struct {
	ID        string    `json:"ID"`
	Operation string    `json:"Operation"`
	Info      string    `json:"Info"`
	Who       string    `json:"Who"` // user@host
	Version   string    `json:"Version"`
	Created   time.Time `json:"Created"`
	Path      string    `json:"Path"` // the state's location, without credentials
	PID       int       `json:"PID,omitempty"`
	// Expires is when a kubernetes Lease lock runs out unless renewed; zero for other backends,
	// whose locks stay until unlocked.
	Expires time.Time `json:"Expires,omitzero"`
}

// NewInfo describes a lock that this process is about to take for operation.
func NewInfo(operation string) Info {
	who := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	} else if v := os.Getenv("USER"); v != "" {
		who = v
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	pid := os.Getpid()
	return Info{
		ID:        uuid.NewString(),
		Operation: operation,
		Info:      fmt.Sprintf("slipway pid %d", pid),
		Who:       who + "@" + host,
		Created:   time.Now().UTC().Truncate(time.Second),
		PID:       pid,
	}
}

// at fills what a lock taken at location lacks: an ID, and the state's location.
func (i Info) at(location string) Info {
	if i.ID == "" {
		i.ID = uuid.NewString()
	}
	if i.Path == "" {
		i.Path = location
	}
	return i
}

// lockJSON is info, filled (at), as the HTTP and Kubernetes backends store it.
func lockJSON(group, location string, info Info) (Info, []byte, error) {
	info = info.at(location)
	data, err := json.Marshal(info)
	if err != nil {
		return info, nil, fmt.Errorf("state %s: lock: %w", group, err)
	}
	return info, data, nil
}

// String describes the holder: "alice@host (apply, pid 1234) since 2026-…, lock ID …". The
// fields are quoted: whoever wrote the lock (a state server, another party) wrote them.
func (i Info) String() string {
	var b strings.Builder
	if i.Who != "" {
		b.WriteString(quote.Line(i.Who))
	} else {
		b.WriteString("an unknown holder")
	}
	var paren []string
	if i.Operation != "" {
		paren = append(paren, quote.Line(i.Operation))
	}
	if i.PID > 0 {
		paren = append(paren, fmt.Sprintf("pid %d", i.PID))
	}
	if len(paren) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(paren, ", "))
	}
	if !i.Created.IsZero() {
		fmt.Fprintf(&b, " since %s", i.Created.Format(time.RFC3339))
	}
	if i.ID != "" {
		fmt.Fprintf(&b, ", lock ID %s", quote.Line(i.ID))
	}
	return b.String()
}

// LockError says that the group's lock is held, and by whom.
type LockError struct {
	Group  string
	Holder Info
}

func (e *LockError) Error() string {
	return fmt.Sprintf("state %s is locked by %s", e.Group, e.Holder)
}

// ErrNotLocked is returned by Unlock when the group is not locked.
var ErrNotLocked = errors.New("not locked")

// ErrLockLost is returned by a write after this process's lock was taken over (its Lease was
// not renewed in time, and another run took it).
var ErrLockLost = errors.New("the lock was lost to another run")

// LockIDError refuses an unlock with an ID other than the holder's.
type LockIDError struct {
	Group  string
	ID     string
	Holder Info
}

func (e *LockIDError) Error() string {
	return fmt.Sprintf("state %s: unlock %s refused: the lock is held by %s", e.Group, e.ID, e.Holder)
}

// Liveness is what this host can tell about a lock holder's process.
type Liveness int

const (
	// LivenessUnknown: the holder ran on another host, or its PID is not recorded.
	LivenessUnknown Liveness = iota
	// LivenessAlive: a process with the holder's PID runs on this host.
	LivenessAlive
	// LivenessDead: no process with the holder's PID runs on this host: the lock is stale.
	LivenessDead
)

// HolderLiveness tells whether the holder's process still runs, when it ran on this host. A PID
// reused by another process reads as alive; that errs on the safe side.
func HolderLiveness(i Info) Liveness {
	if i.PID <= 0 {
		return LivenessUnknown
	}
	host, err := os.Hostname()
	if err != nil {
		return LivenessUnknown
	}
	at := strings.LastIndex(i.Who, "@")
	if at < 0 || i.Who[at+1:] != host {
		return LivenessUnknown
	}
	return pidLiveness(i.PID)
}

// NoticeKind classifies a Notice.
type NoticeKind string

const (
	// NoticeTakeover: this run took over a lock whose holder stopped renewing it.
	NoticeTakeover NoticeKind = "takeover"
	// NoticeLockLost: another run took this run's lock over; writes now fail.
	NoticeLockLost NoticeKind = "lock-lost"
	// NoticeRenewFailed: renewing the lock failed; it is retried until the lease runs out.
	NoticeRenewFailed NoticeKind = "renew-failed"
	// NoticeWaiting: the state server has not answered a request for a while; it is still
	// waited for, up to the request timeout.
	NoticeWaiting NoticeKind = "waiting"
)

// Notice is something a backend wants the operator to know without failing the call.
type Notice struct {
	Kind     NoticeKind
	Group    string
	Previous *Info // the former holder, for NoticeTakeover and NoticeLockLost
	Message  string
}

func (n Notice) String() string { return n.Message }
