// Makes Swift's Synchronization.Mutex visible to ThreadSanitizer on Linux (LD_PRELOADed by
// scripts/sanitize.sh thread; never part of a product build).
//
// Why: Mutex's fast paths are inlined into instrumented code (an acquiring/releasing
// compare-exchange on the lock word, which TSan understands), but under contention it locks and
// unlocks with FUTEX_LOCK_PI/FUTEX_UNLOCK_PI in the uninstrumented library: the kernel hands the
// lock to the waiter, no user-space atomic runs, and TSan sees state guarded by a held Mutex
// touched by two threads with no happens-before - a false "Swift access race" on every contended
// withLock. (Reproduced with four threads incrementing a counter under withLock with a sleep
// inside: reports, and the counter is exact.)
//
// How: interpose the two slow-path entry points. `self` (the address of the lock word) arrives in
// r13 (swiftself) on x86_64. After `_lockSlow` returns the lock is held: __tsan_acquire(word).
// Before `_unlockSlow` gives it away: __tsan_release(word). Same address as the inlined atomics,
// so fast and slow paths synchronise with each other. In processes without TSan (helpers the
// tests spawn inherit LD_PRELOAD) the weak TSan symbols are null and nothing is annotated.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

extern void __tsan_acquire(void *addr) __attribute__((weak));
extern void __tsan_release(void *addr) __attribute__((weak));

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

// Looked up on first use, not in a constructor: libswiftSynchronization may be loaded after us.
static void *resolve(void **cache, const char *name) {
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        if (!p) abort();  // only reachable from a caller of the symbol, so it exists
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    }
    return p;
}

__attribute__((visibility("hidden"))) void *tocsin_lock_target(void) {
    static void *cache;
    return resolve(&cache, LOCK_SLOW);
}
__attribute__((visibility("hidden"))) void *tocsin_unlock_target(void) {
    static void *cache;
    return resolve(&cache, UNLOCK_SLOW);
}
__attribute__((visibility("hidden"))) void tocsin_after_lock(void *word) { if (__tsan_acquire) __tsan_acquire(word); }
__attribute__((visibility("hidden"))) void tocsin_before_unlock(void *word) { if (__tsan_release) __tsan_release(word); }

// Stack: 8 mod 16 on entry; each push flips it, so calls are made at 0 mod 16.
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl \"" LOCK_SLOW "\"\n"
    ".type \"" LOCK_SLOW "\", @function\n"
    "\"" LOCK_SLOW "\":\n"
    "    pushq %r13\n"                    // self, the lock word
    "    pushq %rdi\n"                    // the owner id argument
    "    subq $8, %rsp\n"
    "    callq tocsin_lock_target\n"
    "    addq $8, %rsp\n"
    "    popq %rdi\n"
    "    movq (%rsp), %r13\n"
    "    callq *%rax\n"                   // the real _lockSlow: same rdi and r13
    "    movq (%rsp), %rdi\n"
    "    callq tocsin_after_lock\n"
    "    popq %r13\n"
    "    retq\n"
    ".size \"" LOCK_SLOW "\", .-\"" LOCK_SLOW "\"\n"
    ".globl \"" UNLOCK_SLOW "\"\n"
    ".type \"" UNLOCK_SLOW "\", @function\n"
    "\"" UNLOCK_SLOW "\":\n"
    "    pushq %r13\n"
    "    movq %r13, %rdi\n"
    "    callq tocsin_before_unlock\n"
    "    callq tocsin_unlock_target\n"
    "    popq %r13\n"
    "    jmpq *%rax\n"                    // the real _unlockSlow, as if called directly
    ".size \"" UNLOCK_SLOW "\", .-\"" UNLOCK_SLOW "\"\n");
#else
#error "the TSan Mutex shim is written for x86_64 (self in r13)"
#endif
