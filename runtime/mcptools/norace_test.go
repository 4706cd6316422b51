//go:build !race

package mcptools_test

// raceEnabled: the race detector slows the test server down.
const raceEnabled = false
