//go:build race

package pii_test

// raceEnabled: the race detector allocates on its own.
const raceEnabled = true
