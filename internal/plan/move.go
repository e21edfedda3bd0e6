package plan

// Move is a group's move from the namespace its state records to the plan's (`plan` and
// `apply --move-namespace`, issue 35 item 6): the plan's creates make the group anew in the
// plan's namespace; once every node runs ready there, apply deletes the group's objects in
// From but its claims, as `destroy --keep-claims` does. The claims stay in From with every
// node's /var/lib (a claim cannot change namespace): the nodes start on new claims.
type Move struct {
	From string `json:"from"`
	// Delete are the group's objects in From, in delete order, each with the UID judged.
	Delete []Change `json:"delete,omitempty"`
	// Claims are the group's claims in From: they stay.
	Claims []Key `json:"claims,omitempty"`
}
