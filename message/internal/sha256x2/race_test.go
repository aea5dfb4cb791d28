//go:build race

package sha256x2

// raceEnabled: this is a build with the race detector.
const raceEnabled = true
