// Package e2e holds the end-to-end test of RLN relay with real binaries:
// `courier generateRlnKeystore` and three `courier node --rln-relay`
// processes over a membership contract on a go-ethereum chain served over
// HTTP JSON-RPC (rln/internal/chaintest), with an in-test relay peer that
// sends what an honest node would not. It has no code of its own.
package e2e
