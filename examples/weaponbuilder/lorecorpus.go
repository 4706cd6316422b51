package main

import (
	"embed"
	"io/fs"
)

// The lore corpus: short Markdown documents about the armorer's
// materials, elements, weapons, armour and places, which the Main Menu
// answers lore questions from through runtime/knowledge (loreKnowledge;
// the same legends as the MCP lore server, told at more length). The
// evaluation of runtime/knowledge's retrieval is run on it too.

//go:embed lore/*.md
var loreFiles embed.FS

// loreCorpus returns the lore documents, at the root of the file system.
func loreCorpus() (fs.FS, error) { return fs.Sub(loreFiles, "lore") }
