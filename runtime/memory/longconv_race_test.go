//go:build race

package memory_test

// raceEnabled: the race detector slows the 200-turn conversations of the
// cost benchmark down tenfold.
const raceEnabled = true
