package state

// CentralRecord says that a deployment's central lane (issue 44) made objects, and where on
// the servers it made them: the OpenBao mounts and the database engine's connection, as the
// group file named them, and the databases and buckets last applied with protect (the file's keys). It is
// written before the lane makes anything and dropped once its objects are gone, so that they
// go even when the file no longer has `central:`. The servers themselves are the environment's
// and no credential is ever here: the objects are found on them by the deployment's mark.
type CentralRecord struct {
	DatabaseMount string   `json:"databaseMount"`
	Connection    string   `json:"connection"`
	KVMount       string   `json:"kvMount"`
	Protected     []string `json:"protected,omitempty"`
	// ProtectedBuckets are the keys of central.s3's buckets last applied with protect.
	ProtectedBuckets []string `json:"protectedBuckets,omitempty"`
}
