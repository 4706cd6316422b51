package chat

// SupportPackageIsVersion1 is the compatibility contract between generated
// code and this runtime: every chat_gen.go written for version 1 of the
// generated code references it, so it compiles only against a runtime that
// supports that version. A runtime that adds a version adds
// SupportPackageIsVersion2 and keeps this constant for as long as it runs
// version 1 code; removing it is how a runtime drops version 1. A
// compile error on this name means the file and the runtime do not match:
// regenerate with a matching chatgen (`chatgen -version` prints the version
// it writes) or update the runtime. See docs/architecture.md,
// "Compatibility".
const SupportPackageIsVersion1 = true
