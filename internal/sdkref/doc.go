// Package sdkref holds the differential tests of the committed Go SDK
// against the generator's resolved model: ids, key builders and reply
// decoders checked, example by example and by fuzzing, against what the
// manifest says. They live in the root module because the SDK module
// (sdk/go) must not depend on the generator; nothing here is imported.
package sdkref
