// Package harness holds the entry points that only this module's benchmark
// and tests may call. The packages that own them set them when they are
// initialised, so they never show in those packages' API, and code outside
// the module cannot import this package. It imports nothing of the module:
// the values it passes are typed by their owners.
package harness

// Inject runs data (an encoded WakuMessage) through a relay's topic
// validator and dispatcher exactly as if gossipsub had received it on
// pubsubTopic, without the network: the micro benchmark's entry point.
// relay must be a *relay.Relay; package relay sets Inject, so any program
// that links package relay has it. data is handed over (the envelope the
// relay dispatches aliases it). The error wraps relay.ErrInvalid when the
// validator would Reject or Ignore the message.
var Inject func(relay any, pubsubTopic string, data []byte) error
