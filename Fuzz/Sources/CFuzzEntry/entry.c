#include "CFuzzEntry.h"

/// Runs libFuzzer over the target's LLVMFuzzerTestOneInput (defined in Swift with @_cdecl).
int tocsin_fuzz_run(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
