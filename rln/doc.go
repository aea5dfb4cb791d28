// Package rln implements the cryptographic core of Waku's RLN relay
// (17/WAKU2-RLN-RELAY, 32/RLN-V1 with the v2 user message limit) in pure
// Go, byte for byte as nwaku v0.38.1 and zerokit (v0.8.0 and v0.9.0, whose
// depth-20 circuit is the same) do it: the RateLimitProof carried in
// WakuMessage field 21, the signal and epoch, identity credentials and the
// membership tree's hashing, Groth16 verification over BN254 with a
// compiled-in key, and proof generation.
//
// # Wire and math
//
// Field elements are 32 bytes little-endian (Field) and must be canonical.
// HashToField is Keccak-256 read little-endian mod r. The signal of a
// message is payload ‖ content topic ‖ timestamp (u64le) and x is its
// HashToField (Signal.Hash); the epoch is floor(timestamp / epoch length)
// as a u64le in 32 bytes (EpochAt); the external nullifier is
// Poseidon(HashToField(epoch), HashToField(rln_identifier))
// (ExternalNullifier); a membership's leaf is Poseidon(commitment,
// user message limit) (RateCommitment) in a Poseidon Merkle tree of depth
// 20 (MerklePath). The circuit's public inputs are y, root, nullifier, x
// and external nullifier, in that order (PublicInputs). Poseidon is
// circomlib's (go-iden3-crypto), which equals zerokit's for the arities
// RLN uses (1, 2 and 3); the tests check every value against zerokit
// (testdata/vectors.json).
//
// # Decode once, verify once
//
// A relay validator decodes the proof from the message's bytes once with
// DecodeRateLimitProof, checks the epoch and the root window, calls
// Verifier.Verify once, checks its nullifier log, and then carries the
// *RateLimitProof in the message's envelope: no later consumer decodes or
// verifies it again. The package imports no other courier package (a
// Signal points at the message's payload and content topic), so the
// envelope may refer to its types. Every failure is a Reject, as in nwaku, with two
// exceptions that a relay Ignores (drops without penalising the
// forwarder, since an honest nwaku relays them): a proof for another
// application (ErrRLNIdentifier), and an encoding nwaku normalises
// (ErrNonCanonical from DecodeRateLimitProof, which then returns nwaku's
// reading of the proof) whose normalised proof passes every check.
// Verifier holds no lock on the verification path, so
// gossipsub's concurrent validation uses every core; VerifyBatch checks
// proofs that arrive together in one multi-pairing.
//
// # Circuit files
//
// Verification needs no files. Proving (Prover) reads zerokit's proving
// key rln_final.zkey and witness graph graph.bin at run time from a
// directory (ProverConfig.Dir, default DefaultCircuitDir, overridden by
// $COURIER_RLN_CIRCUIT_DIR), checking their SHA-256 (ZkeySHA256,
// GraphSHA256) before use. The repository does not ship them; they are in
// the zerokit repository: rln/resources/tree_height_20/rln_final.zkey at
// tag v0.8.0 and rln/resources/tree_depth_20/graph.bin at tag v0.9.0.
package rln
