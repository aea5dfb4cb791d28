//go:build race

package message_test

// raceEnabled: this is a build with the race detector, whose sync.Pool
// drops items and whose crypto/sha256 allocates.
const raceEnabled = true
