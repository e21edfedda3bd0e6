package state

// Gunzip is gunzip, for the tests of package state_test: they use statetest, which imports
// state, so they cannot live in package state.
var Gunzip = gunzip
