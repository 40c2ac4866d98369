#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, for programs that keep their own main (see FuzzSupport/Entry.swift).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size);
int tocsin_fuzz_run(int argc, char **argv);
