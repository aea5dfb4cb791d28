// Package e2e holds the end-to-end tests of RLN relay with real binaries:
// `courier generateRlnKeystore` and three `courier node --rln-relay`
// processes over a membership contract on a go-ethereum chain served over
// HTTP JSON-RPC (rln/internal/chaintest), with an in-test relay peer that
// sends what an honest node would not; and TestFaultsRLNFlood, the same
// nodes in network namespaces (internal/netlab) with a member that floods
// valid messages over its rate limit (docs/reliability.md). The command
// rlnprove makes that flood's proofs outside the race detector. The
// package has no code of its own.
package e2e
