// Package knowledge is an embedded index of documents for retrieval: the
// default knowledge of an AI service, which needs no server and, in its
// lexical mode, no model.
//
// [LoadDir] reads the Markdown and text files of an fs.FS (such as an
// embed.FS shipped with the application) and splits them with
// langchaingo's textsplitter into [Chunk] values whose ids are stable: the
// file's path and the chunk's number, "lore/iron.md#2"; [LoadDirPath]
// reads a directory on disk.
//
// Both read through [ReadFiles] (and [ReadFilesPath]), the safe loader
// for folders given by users, to reuse for any such folder (an agent's
// skills): regular files only, their type checked before they are opened
// (links, FIFOs, devices and sockets are skipped, and logged), never
// outside the root (for a directory on disk, through os.OpenRoot), at
// most [DefaultMaxFileBytes] per file and [DefaultMaxTotalBytes] in all
// unless told otherwise, and cancelled with its context.
//
// An [Index] holds chunks in a BM25 lexical index (lower-cased words
// without stop words, reduced by a light English stemmer; k1 and b set by
// [IndexOptions.BM25]) and, given a langchaingo embeddings.Embedder in
// [IndexOptions.Embedder], a vector per chunk searched by brute-force cosine
// similarity, which suits the thousands of passages an application
// ships. [Index.Search] ranks in one of the [Mode] values: Lexical,
// Semantic, or Hybrid (the mean of the BM25 score, divided by the query's
// best, and the cosine), Auto picking Hybrid when there are vectors.
// [Index.Save] writes the index to a file atomically and [Load] reads it
// back, without embedding the chunks again.
//
// [Index.Retriever] adapts the index to langchaingo's schema.Retriever,
// so it plugs in wherever a retriever is taken, like the vector stores'
// vectorstores.ToRetriever. Each schema.Document it returns has the
// passage as PageContent, the relevance as Score and, in Metadata, the
// strings "id", "title" and "source".
//
//	ix, err := knowledge.IndexDir(ctx, loreFS, nil) // LoadDir, New, Add
//	// or knowledge.IndexDir(ctx, loreFS, &knowledge.IndexDirOptions{Index: knowledge.IndexOptions{Embedder: e}})
//	...
//	docs, err := ix.Retriever(3, nil).GetRelevantDocuments(ctx, "Who carved the first fire runes?")
//	// docs[0].Metadata["id"] == "fire-runes.md#1"
//
// An Index is safe for concurrent use. Errors match [ErrEmptyQuery],
// [ErrInvalidK], [ErrNoEmbedder], [ErrInvalidChunk], [ErrCorrupt] and
// [ErrTooLarge] with errors.Is.
//
// Quality, measured by this package's tests on the lore corpus of the
// weaponbuilder example (30 questions, 44 passages of at most 300
// characters; the embedder is runtime/llmtest's hashed bag of words and
// trigrams, not a semantic model): recall@1 0.83 lexical, 0.70 semantic,
// 0.83 hybrid; recall@3 0.93, 0.93, 0.97; recall@5 0.97 in all three.
// docs/numbers.md has the table.
package knowledge
