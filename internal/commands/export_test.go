package commands

// NewRootCmdStubbed builds the command tree with every run function
// replaced by stub (newRootCmd).
var NewRootCmdStubbed = newRootCmd
