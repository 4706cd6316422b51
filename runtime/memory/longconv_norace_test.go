//go:build !race

package memory_test

// raceEnabled: see longconv_race_test.go.
const raceEnabled = false
