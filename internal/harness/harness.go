// Package harness marks the entry points that only this module's benchmark
// harness and tests may call: they take a Key as their first argument, and
// code outside the module cannot name the type, so it cannot call them.
// (The standard library guards testing.MainStart the same way.)
package harness

// Key is the first argument of harness-only entry points such as
// relay.Relay.Inject. Its zero value is the only value.
type Key struct{ _ struct{} }
