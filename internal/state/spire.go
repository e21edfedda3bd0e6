package state

// SpireRecord is where a deployment's SPIRE lane made its parts (issue 43 item 9): the
// server's registration API and the spire node, as the group file named them, and the
// namespace (the cluster's name on the server is <kube-system UID>-<namespace>). No
// credential: those come from the environment of each run.
type SpireRecord struct {
	Namespace   string `json:"namespace"`
	Server      string `json:"server"`
	TrustDomain string `json:"trustDomain"`
	SSH         string `json:"ssh"` // user@host:port
	HostKey     string `json:"hostKey"`
	ConfigDir   string `json:"configDir"`
	PIDFile     string `json:"pidFile"`
}

// Place says where the record's parts live: two records of one place are one lane's parts.
func (r SpireRecord) Place() string {
	return r.Namespace + " " + r.Server + " " + r.SSH + " " + r.ConfigDir
}
