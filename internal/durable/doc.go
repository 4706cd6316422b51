// Package durable holds the benchmarks and tests of durable conversations
// that span the runtime's stores and transports: a full turn over no
// store, the in-memory store, runtime/boltstore and runtime/redisstore,
// and a websocket conversation that outlives an outage of its Redis. It
// has no API: everything is in its tests.
package durable
