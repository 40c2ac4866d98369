/* An experiment, not part of Tocsin (docs/BENCHMARKS.md, "Footprint", "Measured and not shipped:
 * dropping the code mappings when idle"). Preloaded into a daemon, it drops the process's mappings
 * of every read-only segment of every loaded object (MADV_DONTNEED) each time the process gets
 * SIGUSR2, and prints the bytes advised to stderr:
 *
 *   gcc -shared -fPIC -O2 -o /tmp/drop_code_pages.so Benchmarks/profile/drop_code_pages.c -lpthread
 *   LD_PRELOAD=/tmp/drop_code_pages.so tocsin daemon ... &
 *   grep -E 'VmRSS|RssAnon|RssFile' /proc/$!/status; kill -USR2 $!; grep ... again
 *
 * It checks nothing about the pages: a page the process holds a private copy of (a text
 * relocation, a debugger's breakpoint) would be lost. Tocsin's binary has neither; do not use it
 * on anything else. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static long advised;

static int drop_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size; (void)data;
    if (strncmp(info->dlpi_name, "linux-vdso", 10) == 0) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || (p->p_flags & PF_W)) continue;
        uintptr_t start = info->dlpi_addr + p->p_vaddr, end = start + p->p_memsz;
        start = (start + page - 1) & ~(page - 1);  /* inward: never a page shared with a writable neighbour */
        end &= ~(page - 1);
        if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) advised += (long)(end - start);
    }
    return 0;
}

static void *on_signal(void *unused) {
    (void)unused;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    for (int sig;;) {
        sigwait(&set, &sig);
        advised = 0;
        dl_iterate_phdr(drop_object, NULL);
        fprintf(stderr, "drop_code_pages: advised %ld bytes\n", advised);
    }
    return NULL;
}

/* Blocks SIGUSR2 before main, so every thread the program starts inherits the mask and only
 * this one takes the signal. */
__attribute__((constructor)) static void start(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t thread;
    pthread_create(&thread, NULL, on_signal, NULL);
}
