package chat

// SupportPackageIsVersion1 is referenced by generated code to assert, at
// compile time, that this runtime supports the generated code's version.
// A generated file referencing a constant this runtime does not define
// needs a newer runtime (or regeneration with an older chatgen).
const SupportPackageIsVersion1 = true
